use super::*;
use serde_json::json;

fn lines(schema: Value, value: Value) -> Vec<String> {
    let s = Schema::compile(&schema).unwrap();
    s.validate(&value).err().unwrap_or_default()
}

fn one(schema: Value, value: Value) -> String {
    let l = lines(schema, value);
    assert_eq!(l.len(), 1, "{l:?}");
    l[0].clone()
}

#[test]
fn each_keyword_with_its_message() {
    let cases = [
        (
            json!({"type": "string"}),
            json!(1),
            "at /: want string, but got number",
        ),
        (
            json!({"type": ["integer", "null"]}),
            json!(1.5),
            "at /: want null or integer, but got number",
        ),
        (json!({"const": "a"}), json!("b"), "at /: value must be 'a'"),
        (json!({"const": [1]}), json!([2]), "at /: const failed"),
        (
            json!({"enum": ["a", 1]}),
            json!("c"),
            "at /: value must be one of 'a', 1",
        ),
        (
            json!({"enum": ["a"]}),
            json!("c"),
            "at /: value must be 'a'",
        ),
        (json!({"enum": [{"a": 1}]}), json!("c"), "at /: enum failed"),
        (
            json!({"format": "date"}),
            json!("2026-02-30"),
            "at /: '2026-02-30' is not valid date: february has 28 days only",
        ),
        (
            json!({"format": "date-time"}),
            json!("2026-11-27 10:00:00Z"),
            "at /: '2026-11-27 10:00:00Z' is not valid date-time: 11th character must be t or T",
        ),
        (
            json!({"format": "time"}),
            json!("25:00:00Z"),
            "at /: '25:00:00Z' is not valid time: hour/min/sec out of range",
        ),
        (
            json!({"format": "uuid"}),
            json!("abc"),
            "at /: 'abc' is not valid uuid: element 1 must be 8 characters long",
        ),
        (
            json!({"required": ["a", "b"]}),
            json!({"b": 1}),
            "at /: missing properties 'a'",
        ),
        (
            json!({"additionalProperties": false}),
            json!({"x": 1, "y's": 2}),
            "at /: additionalProperties 'x', 'y\\'s' not allowed",
        ),
        (
            json!({"additionalProperties": {"type": "integer"}}),
            json!({"x": "1"}),
            "at /x: want integer, but got string",
        ),
        (
            json!({"minProperties": 2}),
            json!({"x": 1}),
            "at /: minimum 2 properties required, but got 1 properties",
        ),
        (
            json!({"maxProperties": 1}),
            json!({"x": 1, "y": 2}),
            "at /: maximum 1 properties required, but got 2 properties",
        ),
        (
            json!({"minItems": 2}),
            json!([1]),
            "at /: minimum 2 items required, but got 1 items",
        ),
        (
            json!({"maxItems": 1}),
            json!([1, 2]),
            "at /: maximum 1 items required, but got 2 items",
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, 2, 1.0]),
            "at /: items at 0 and 2 are equal",
        ),
        (
            json!({"items": {"type": "string"}}),
            json!(["a", 2]),
            "at /1: want string, but got number",
        ),
        (
            json!({"minLength": 3}),
            json!("ab"),
            "at /: length must be >=3, but got 2",
        ),
        (
            json!({"maxLength": 1}),
            json!("éé"),
            "at /: length must be <=1, but got 2",
        ),
        (
            json!({"pattern": "^\\d+$"}),
            json!("12a"),
            "at /: '12a' does not match pattern '^\\\\d+$'",
        ),
        (
            json!({"minimum": 1}),
            json!(0.5),
            "at /: must be >=1, but got 0.5",
        ),
        (
            json!({"maximum": 10}),
            json!(10000),
            "at /: must be <=10, but got 10000",
        ),
        (
            json!({"exclusiveMinimum": 1}),
            json!(1),
            "at /: must be > 1 but got 1",
        ),
        (
            json!({"exclusiveMaximum": 1}),
            json!(1),
            "at /: must be < 1 but got 1",
        ),
        (
            json!({"multipleOf": 0.5}),
            json!(1.2),
            "at /: 1.2 is not multipleOf 0.5",
        ),
        (
            json!({"not": {"type": "string"}}),
            json!("a"),
            "at /: not failed",
        ),
        (
            json!({"oneOf": [{"type": "number"}, {"type": "integer"}]}),
            json!(1),
            "at /: oneOf failed, subschemas 0, 1 matched",
        ),
        (json!(false), json!(1), "at /: false schema"),
        (
            json!({"$defs": {"a/b": {"type": "string"}}, "$ref": "#/$defs/a~1b"}),
            json!(1),
            "at /: want string, but got number",
        ),
        (
            json!({"$defs": {"x": {"$anchor": "here", "type": "string"}}, "$ref": "#here"}),
            json!(1),
            "at /: want string, but got number",
        ),
        (
            json!({"properties": {"a/b~": {"type": "string"}}}),
            json!({"a/b~": 1}),
            "at /a~1b~0: want string, but got number",
        ),
    ];
    for (schema, value, want) in cases {
        assert_eq!(
            one(schema.clone(), value.clone()),
            want,
            "{schema} with {value}"
        );
    }
}

#[test]
fn applicators_report_the_failures_of_their_branches() {
    let s = json!({"anyOf": [{"type": "string"}, {"minimum": 5}]});
    assert_eq!(
        lines(s.clone(), json!(1)),
        vec![
            "at /: want string, but got number",
            "at /: must be >=5, but got 1"
        ]
    );
    assert!(lines(s, json!(7)).is_empty());
    let s = json!({"oneOf": [{"type": "string"}, {"minimum": 5}]});
    assert_eq!(lines(s, json!(1)).len(), 2);
    let s = json!({"allOf": [{"required": ["a"]}, {"required": ["b"]}]});
    assert_eq!(
        lines(s, json!({})),
        vec![
            "at /: missing properties 'a'",
            "at /: missing properties 'b'"
        ]
    );
    let s = json!({"if": {"properties": {"k": {"const": "x"}}}, "then": {"required": ["x"]}, "else": {"required": ["y"]}});
    assert_eq!(
        lines(s.clone(), json!({"k": "x"})),
        vec!["at /: missing properties 'x'"]
    );
    assert_eq!(
        lines(s, json!({"k": "z"})),
        vec!["at /: missing properties 'y'"]
    );
}

#[test]
fn every_failing_field_is_reported_in_order() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "string", "maxLength": 3}, "b": {"type": "integer"}},
        "required": ["a", "b", "c"],
        "additionalProperties": false
    });
    assert_eq!(
        lines(s, json!({"a": "abcd", "b": "x", "z": true})),
        vec![
            "at /: missing properties 'c'",
            "at /a: length must be <=3, but got 4",
            "at /b: want integer, but got string",
            "at /: additionalProperties 'z' not allowed",
        ]
    );
}

#[test]
fn integers_and_numbers() {
    assert!(lines(json!({"type": "integer"}), json!(2.0)).is_empty());
    assert!(lines(json!({"enum": [1]}), json!(1.0)).is_empty());
    assert!(lines(json!({"const": {"a": [1, 2]}}), json!({"a": [1.0, 2]})).is_empty());
}

#[test]
fn patterns_read_perl_classes_as_javascript_does() {
    // \d is ASCII in JavaScript: an Arabic-Indic digit is not one.
    assert_eq!(lines(json!({"pattern": "^\\d+$"}), json!("١٢")).len(), 1);
    assert!(lines(json!({"pattern": "\\S"}), json!("\u{a0} x")).is_empty());
    assert_eq!(
        lines(json!({"pattern": "\\S"}), json!("\u{a0}\u{3000} ")).len(),
        1
    );
    assert!(lines(json!({"pattern": "^[a-z\\d-]+$"}), json!("a-1")).is_empty());
    assert!(
        lines(json!({"pattern": "^a\\\\d$"}), json!("a\\d")).is_empty(),
        "an escaped backslash stays one"
    );
    // Inside brackets too, where the engine has no nested classes.
    assert!(lines(json!({"pattern": "^[\\w.]+$"}), json!("a_b.c")).is_empty());
    assert_eq!(lines(json!({"pattern": "^[\\w.]+$"}), json!("é")).len(), 1);
    assert!(lines(json!({"pattern": "^[\\s]$"}), json!("\u{3000}")).is_empty());
    assert!(lines(json!({"pattern": "^[]a]+$"}), json!("]a")).is_empty());
    assert!(lines(json!({"pattern": "^[^\\d]$"}), json!("x")).is_empty());
    assert_eq!(lines(json!({"pattern": "^[^\\d]$"}), json!("1")).len(), 1);
}

#[test]
fn unsupported_keywords_and_remote_references_do_not_compile() {
    for schema in [
        json!({"patternProperties": {}}),
        json!({"properties": {"a": {"contains": {}}}}),
        json!({"$ref": "https://example.com/schema.json"}),
        json!({"$ref": "#/$defs/missing"}),
        json!({"$ref": "#nowhere"}),
        json!({"format": "email"}),
        json!({"type": "text"}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}}),
        json!({"pattern": "("}),
        json!({"minLength": -1}),
    ] {
        assert!(Schema::compile(&schema).is_err(), "{schema}");
    }
    // Annotations and extensions compile and check nothing.
    let s = json!({"title": "t", "description": "d", "default": 1, "examples": [1], "x-sensitive": true, "$comment": "c"});
    assert!(lines(s, json!("anything")).is_empty());
}

#[test]
fn a_recursive_schema_descends_into_the_value() {
    let s = json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"});
    assert_eq!(
        one(s, json!({"next": {"next": 1}})),
        "at /next/next: want object, but got number"
    );
}

// The validator this one replaced (boon), run side by side with ours on every shipped schema and
// on values made from each schema to break each of its rules: the same lines, in the same order.
mod against_boon {
    use super::*;
    use std::path::Path;

    fn boon(schema: &Value) -> (boon::Schemas, boon::SchemaIndex) {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler.enable_format_assertions();
        compiler.add_resource("urn:t", schema.clone()).unwrap();
        let index = compiler.compile("urn:t", &mut schemas).unwrap();
        (schemas, index)
    }

    fn boon_lines(
        (schemas, index): &(boon::Schemas, boon::SchemaIndex),
        value: &Value,
    ) -> Vec<String> {
        fn leaves(e: &boon::ValidationError, out: &mut Vec<String>) {
            if e.causes.is_empty() {
                let at = e.instance_location.to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                out.push(format!("at {at}: {}", e.kind));
            } else {
                e.causes.iter().for_each(|c| leaves(c, out));
            }
        }
        let mut out = Vec::new();
        if let Err(e) = schemas.validate(value, *index) {
            leaves(&e, &mut out);
        }
        out
    }

    /// Follows `$ref` (within the document) to the schema it names.
    fn deref<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) if r.starts_with("#/") => root.pointer(&r[1..]).map_or(s, |t| deref(root, t)),
            _ => s,
        }
    }

    /// A value meant to pass `s` (not always: patterns and applicators are not solved).
    fn good(root: &Value, s: &Value, depth: usize) -> Value {
        let s = deref(root, s);
        if let Some(v) = s.get("const").or_else(|| s.get("default")) {
            return v.clone();
        }
        if let Some(v) = s.get("enum").and_then(|e| e.get(0)) {
            return v.clone();
        }
        let ty = s
            .get("type")
            .map(|t| t.get(0).unwrap_or(t).as_str().unwrap_or(""))
            .unwrap_or("");
        match ty {
            "string" => {
                match s.get("format").and_then(Value::as_str) {
                    Some("date") => json!("2026-11-27"),
                    Some("date-time") => json!("2026-11-27T10:00:00Z"),
                    Some("uuid") => json!("123e4567-e89b-12d3-a456-426614174000"),
                    _ => json!("a"
                        .repeat(s.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize)),
                }
            }
            "integer" | "number" => s.get("minimum").cloned().unwrap_or(json!(1)),
            "boolean" => json!(true),
            "null" => Value::Null,
            "array" if depth > 0 => {
                let n = s.get("minItems").and_then(Value::as_u64).unwrap_or(1) as usize;
                let item = s
                    .get("items")
                    .map_or(json!("a"), |i| good(root, i, depth - 1));
                Value::Array(vec![item; n])
            }
            "object" if depth > 0 => {
                let mut o = Map::new();
                if let Some(props) = s.get("properties").and_then(Value::as_object) {
                    for (k, p) in props {
                        o.insert(k.clone(), good(root, p, depth - 1));
                    }
                }
                Value::Object(o)
            }
            _ => json!({}),
        }
    }

    /// Values that break the rules of `s` one at a time, and a few of the wrong kind.
    fn bad(root: &Value, s: &Value, depth: usize) -> Vec<Value> {
        let s = deref(root, s);
        let mut out = vec![
            Value::Null,
            json!(true),
            json!(0),
            json!(-1),
            json!(1.5),
            json!(1e12),
            json!(""),
            json!("x"),
            json!("a".repeat(2100)),
            json!("2026-13-01"),
            json!("2026-11-27T25:00:00Z"),
            json!("not-a-uuid"),
            json!([]),
            json!([1, 1]),
            json!({}),
            json!({"zz_unknown": 1}),
        ];
        if let Some(items) = s.get("items") {
            let g = good(root, items, depth);
            out.push(Value::Array(vec![g.clone(); 30]));
            if depth > 0 {
                for b in bad(root, items, depth - 1) {
                    out.push(json!([g.clone(), b]));
                }
            }
        }
        let base = good(root, s, 3);
        if let (Some(props), Value::Object(base)) =
            (s.get("properties").and_then(Value::as_object), &base)
        {
            for (k, p) in props {
                let mut without = base.clone();
                without.remove(k);
                out.push(Value::Object(without));
                if depth > 0 {
                    for b in bad(root, p, depth - 1) {
                        let mut o = base.clone();
                        o.insert(k.clone(), b);
                        out.push(Value::Object(o));
                    }
                }
            }
            let mut extra = base.clone();
            extra.insert("zz_extra".into(), json!(1));
            out.push(Value::Object(extra));
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            for branch in s.get(key).and_then(Value::as_array).into_iter().flatten() {
                out.push(good(root, branch, 3));
            }
        }
        out.push(base);
        out
    }

    fn schema_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                schema_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "json")
                // FlowMind's matching texts (`<tool>.context.json`) sit beside the schemas but are
                // not schemas.
                && !p.to_string_lossy().ends_with(".context.json")
            {
                out.push(p);
            }
        }
    }

    /// boon names a pattern as it rewrote it for the regex crate (`\\S` as a long class); we name
    /// it as the schema wrote it: compared up to the pattern.
    fn same_up_to_pattern(lines: Vec<String>) -> Vec<String> {
        let mut lines: Vec<String> = lines
            .into_iter()
            .map(|l| match l.find(" does not match pattern ") {
                Some(k) => l[..k].to_string(),
                None => l,
            })
            .collect();
        lines.dedup();
        lines
    }

    #[test]
    fn every_shipped_schema_answers_as_boon_did() {
        let mut files = Vec::new();
        schema_files(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("schema"),
            &mut files,
        );
        assert!(files.len() > 50, "{} schema files", files.len());
        let mut compared = 0;
        for f in files {
            let schema: Value =
                serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let ours = Schema::compile(&schema).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let theirs = boon(&schema);
            for value in bad(&schema, &schema, 2) {
                let want = same_up_to_pattern(boon_lines(&theirs, &value));
                let got = same_up_to_pattern(ours.validate(&value).err().unwrap_or_default());
                assert_eq!(got, want, "{} with {value}", f.display());
                compared += 1;
            }
        }
        assert!(compared > 2000, "{compared} values compared");
    }

    #[test]
    fn the_keyword_cases_answer_as_boon_does() {
        let cases = [
            (
                json!({"anyOf": [{"type": "string"}, {"minimum": 5}], "oneOf": [{"type": "number"}, {"maximum": 3}]}),
                json!(1),
            ),
            (
                json!({"if": {"minimum": 3}, "then": {"multipleOf": 2}, "else": {"not": {"const": 1}}}),
                json!(1),
            ),
            (
                json!({"if": {"minimum": 3}, "then": {"multipleOf": 2}}),
                json!(5),
            ),
            (
                json!({"allOf": [{"minimum": 3}, {"maximum": 0}], "format": "date"}),
                json!(1),
            ),
            (
                json!({"format": "date-time", "pattern": "^x"}),
                json!("2026-11-27T23:59:60+01:00"),
            ),
            (
                json!({"format": "date-time"}),
                json!("2026-11-27T22:59:60-01:00"),
            ),
            (
                json!({"uniqueItems": true}),
                json!((0..30).map(|i| i % 25).collect::<Vec<_>>()),
            ),
            (json!({"uniqueItems": true}), json!([1, 2, 2, 1])),
            (
                json!({"$defs": {"a": {"required": ["q"]}}, "$ref": "#/$defs/a", "properties": {"q": {"type": "string"}}}),
                json!({"q": 1}),
            ),
            (
                json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
                json!({"c": 1}),
            ),
        ];
        for (schema, value) in cases {
            let want = same_up_to_pattern(boon_lines(&boon(&schema), &value));
            let got = same_up_to_pattern(lines(schema.clone(), value.clone()));
            assert_eq!(got, want, "{schema} with {value}");
        }
    }
}
