//! JSON Schema (draft 2020-12) validation for the keywords our tool schemas use, with the error
//! lines the tools have always answered (`at <pointer>: <rule>`, worded as `boon` words them, which
//! this replaces: see docs/decisions.md, "A validator of our own").
//!
//! Why our own: `boon` covers every draft and keyword, and with them `regex` with all its Unicode
//! tables, `url`, `idna` and `fluent-uri`, a fifth of the Worker's wasm. Our schemas (schema/) use
//! a small, fixed set of keywords; a schema that uses any other one does not compile, so a new
//! keyword fails the registry's start-up (and every test) instead of being silently ignored.
//!
//! Supported: `type`, `const`, `enum`, `format` (date-time, date, time, uuid: asserted), `$ref`
//! (`#`, `#/json/pointer`, `#anchor`; never a remote document), `$defs`, `$anchor`, `properties`,
//! `required`, `additionalProperties`, `minProperties`, `maxProperties`, `items`, `minItems`,
//! `maxItems`, `uniqueItems`, `minLength`, `maxLength`, `pattern` (ECMA-262 classes `\d \w \s`
//! are ASCII as in JavaScript), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//! `multipleOf`, `not`, `allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`; and the annotations
//! (`title`, `description`, `default`, `examples`, `$comment`, `$schema` of 2020-12, `readOnly`,
//! `writeOnly`, `deprecated`, and any `x-` extension).

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Number, Value};

/// A compiled schema.
pub struct Schema {
    nodes: Vec<Node>,
}

const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const NUMBER: u8 = 4;
const INTEGER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;
const TYPE_NAMES: [(u8, &str); 7] = [
    (NULL, "null"),
    (BOOLEAN, "boolean"),
    (NUMBER, "number"),
    (INTEGER, "integer"),
    (STRING, "string"),
    (ARRAY, "array"),
    (OBJECT, "object"),
];

/// Keywords that only annotate: accepted anywhere, never checked.
const ANNOTATIONS: [&str; 9] = [
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "readOnly",
    "writeOnly",
    "deprecated",
    "$schema",
];

#[derive(Clone, Copy)]
enum Format {
    DateTime,
    Date,
    Time,
    Uuid,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::DateTime => "date-time",
            Format::Date => "date",
            Format::Time => "time",
            Format::Uuid => "uuid",
        }
    }

    fn check(self, s: &str) -> Result<(), String> {
        match self {
            Format::DateTime => check_date_time(s),
            Format::Date => check_date(s),
            Format::Time => check_time(s),
            Format::Uuid => check_uuid(s),
        }
    }
}

enum Additional {
    Allowed(bool),
    Schema(usize),
}

/// One subschema; indices point into `Schema::nodes`.
#[derive(Default)]
struct Node {
    /// `true` or `false` as a whole schema.
    always: Option<bool>,
    types: u8,
    constant: Option<Value>,
    enumeration: Option<Vec<Value>>,
    format: Option<Format>,
    reference: Option<usize>,
    min_properties: Option<usize>,
    max_properties: Option<usize>,
    required: Vec<String>,
    /// Sorted by name (binary search).
    properties: Vec<(String, usize)>,
    additional: Option<Additional>,
    min_items: Option<usize>,
    max_items: Option<usize>,
    unique_items: bool,
    items: Option<usize>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    /// The pattern as written (for messages) and as compiled.
    pattern: Option<(String, Regex)>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    multiple_of: Option<Number>,
    not: Option<usize>,
    all_of: Vec<usize>,
    any_of: Vec<usize>,
    one_of: Vec<usize>,
    if_: Option<usize>,
    then: Option<usize>,
    else_: Option<usize>,
}

impl Schema {
    /// Compiles a schema document; the error names the keyword and where it is.
    pub fn compile(doc: &Value) -> Result<Schema, String> {
        let mut c = Compiler {
            doc,
            nodes: Vec::new(),
            by_pointer: HashMap::new(),
            anchors: HashMap::new(),
            refs: Vec::new(),
        };
        c.node(doc, String::new())?;
        // References resolve once every subschema (and so every anchor) is known; a pointer to a
        // place not compiled yet compiles it there.
        while let Some((from, target)) = c.refs.pop() {
            let to = c.resolve(&target)?;
            c.nodes[from].reference = Some(to);
        }
        let schema = Schema { nodes: c.nodes };
        schema.check_cycles()?;
        Ok(schema)
    }

    /// Validates `value`: every failing rule, one line each (`at <pointer>: <rule>`), in the order
    /// the schema's keywords and the value's members are met.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<String>> {
        let mut out = Sink::Collect(Vec::new());
        if self.check(0, value, &mut Vec::new(), &mut out) {
            return Ok(());
        }
        match out {
            Sink::Collect(lines) => Err(lines),
            Sink::Quiet => Err(Vec::new()),
        }
    }

    /// A chain of `$ref`s and in-place applicators that comes back to where it started, without
    /// moving into the value, would never end: refused when compiling.
    fn check_cycles(&self) -> Result<(), String> {
        // 0 = not seen, 1 = on the current path, 2 = done.
        let mut state = vec![0u8; self.nodes.len()];
        fn visit(nodes: &[Node], i: usize, state: &mut [u8]) -> Result<(), String> {
            match state[i] {
                1 => return Err("a $ref cycle that never reaches into the value".into()),
                2 => return Ok(()),
                _ => {}
            }
            state[i] = 1;
            let n = &nodes[i];
            let in_place = n
                .reference
                .iter()
                .chain(&n.not)
                .chain(&n.all_of)
                .chain(&n.any_of);
            let in_place = in_place
                .chain(&n.one_of)
                .chain(&n.if_)
                .chain(&n.then)
                .chain(&n.else_);
            for &next in in_place {
                visit(nodes, next, state)?;
            }
            state[i] = 2;
            Ok(())
        }
        for i in 0..self.nodes.len() {
            visit(&self.nodes, i, &mut state)?;
        }
        Ok(())
    }

    fn check<'v>(&self, i: usize, v: &'v Value, at: &mut Vec<Seg<'v>>, out: &mut Sink) -> bool {
        let n = &self.nodes[i];
        if let Some(allowed) = n.always {
            if !allowed {
                out.push(at, || "false schema".into());
            }
            return allowed;
        }
        if n.types != 0 {
            let got = type_of(v);
            if n.types & got == 0 && !(n.types & INTEGER != 0 && is_integer(v)) {
                out.push(at, || {
                    let want: Vec<&str> = TYPE_NAMES
                        .iter()
                        .filter(|(t, _)| n.types & t != 0)
                        .map(|(_, name)| *name)
                        .collect();
                    format!("want {}, but got {}", want.join(" or "), type_name(got))
                });
                return false;
            }
        }
        if let Some(c) = &n.constant {
            if !equals(v, c) {
                out.push(at, || match c {
                    Value::Array(_) | Value::Object(_) => "const failed".into(),
                    _ => format!("value must be {}", display(c)),
                });
                return false;
            }
        }
        if let Some(values) = &n.enumeration {
            if !values.iter().any(|e| equals(e, v)) {
                out.push(at, || enum_message(values));
                return false;
            }
        }
        let mut ok = true;
        if let (Some(format), Value::String(s)) = (n.format, v) {
            if let Err(e) = format.check(s) {
                out.push(at, || {
                    format!("{} is not valid {}: {e}", quote(s), format.name())
                });
                ok = false;
            }
        }
        if let Some(r) = n.reference {
            ok &= self.check(r, v, at, out);
        }
        if !ok && out.is_quiet() {
            return false;
        }
        ok &= match v {
            Value::Object(obj) => self.check_object(n, obj, at, out),
            Value::Array(arr) => self.check_array(n, arr, at, out),
            Value::String(s) => check_string(n, s, at, out),
            Value::Number(num) => check_number(n, num, at, out),
            _ => true,
        };
        if !ok && out.is_quiet() {
            return false;
        }
        ok & self.check_applicators(n, v, at, out)
    }

    fn check_object<'v>(
        &self,
        n: &Node,
        obj: &'v Map<String, Value>,
        at: &mut Vec<Seg<'v>>,
        out: &mut Sink,
    ) -> bool {
        let mut ok = true;
        if let Some(min) = n.min_properties.filter(|&m| obj.len() < m) {
            out.push(at, || {
                format!(
                    "minimum {min} properties required, but got {} properties",
                    obj.len()
                )
            });
            ok = false;
        }
        if let Some(max) = n.max_properties.filter(|&m| obj.len() > m) {
            out.push(at, || {
                format!(
                    "maximum {max} properties required, but got {} properties",
                    obj.len()
                )
            });
            ok = false;
        }
        if n.required.iter().any(|r| !obj.contains_key(r)) {
            out.push(at, || {
                let missing: Vec<String> = n
                    .required
                    .iter()
                    .filter(|r| !obj.contains_key(*r))
                    .map(|r| quote(r))
                    .collect();
                format!("missing properties {}", missing.join(", "))
            });
            ok = false;
        }
        if !ok && out.is_quiet() {
            return false;
        }
        let mut refused: Vec<&str> = Vec::new();
        for (name, value) in obj {
            let sub = match n.properties.binary_search_by(|(p, _)| p.as_str().cmp(name)) {
                Ok(k) => Some(n.properties[k].1),
                Err(_) => match n.additional {
                    Some(Additional::Schema(s)) => Some(s),
                    Some(Additional::Allowed(false)) => {
                        refused.push(name);
                        None
                    }
                    _ => None,
                },
            };
            if let Some(sub) = sub {
                at.push(Seg::Key(name));
                ok &= self.check(sub, value, at, out);
                at.pop();
                if !ok && out.is_quiet() {
                    return false;
                }
            }
        }
        if !refused.is_empty() {
            out.push(at, || {
                let names: Vec<String> = refused.iter().map(|r| quote(r)).collect();
                format!("additionalProperties {} not allowed", names.join(", "))
            });
            ok = false;
        }
        ok
    }

    fn check_array<'v>(
        &self,
        n: &Node,
        arr: &'v [Value],
        at: &mut Vec<Seg<'v>>,
        out: &mut Sink,
    ) -> bool {
        let mut ok = true;
        let len = arr.len();
        if let Some(min) = n.min_items.filter(|&m| len < m) {
            out.push(at, || {
                format!("minimum {min} items required, but got {len} items")
            });
            ok = false;
        }
        if let Some(max) = n.max_items.filter(|&m| len > m) {
            out.push(at, || {
                format!("maximum {max} items required, but got {len} items")
            });
            ok = false;
        }
        if n.unique_items {
            if let Some((i, j)) = duplicates(arr) {
                out.push(at, || format!("items at {i} and {j} are equal"));
                ok = false;
            }
        }
        if let Some(items) = n.items {
            for (k, item) in arr.iter().enumerate() {
                if !ok && out.is_quiet() {
                    return false;
                }
                at.push(Seg::Index(k));
                ok &= self.check(items, item, at, out);
                at.pop();
            }
        }
        ok
    }

    fn check_applicators<'v>(
        &self,
        n: &Node,
        v: &'v Value,
        at: &mut Vec<Seg<'v>>,
        out: &mut Sink,
    ) -> bool {
        let mut ok = true;
        if let Some(not) = n.not {
            if self.check(not, v, at, &mut Sink::Quiet) {
                out.push(at, || "not failed".into());
                ok = false;
            }
        }
        for &sub in &n.all_of {
            ok &= self.check(sub, v, at, out);
            if !ok && out.is_quiet() {
                return false;
            }
        }
        if !n.any_of.is_empty() {
            let mut failures = out.like();
            if !n
                .any_of
                .iter()
                .any(|&sub| self.check(sub, v, at, &mut failures))
            {
                out.extend(failures);
                ok = false;
            }
        }
        if !n.one_of.is_empty() {
            let mut failures = out.like();
            let mut matched = None;
            for (k, &sub) in n.one_of.iter().enumerate() {
                let valid = match matched {
                    None => self.check(sub, v, at, &mut failures),
                    Some(_) => self.check(sub, v, at, &mut Sink::Quiet),
                };
                if valid {
                    if let Some(first) = matched {
                        out.push(at, || {
                            format!("oneOf failed, subschemas {first}, {k} matched")
                        });
                        ok = false;
                        break;
                    }
                    matched = Some(k);
                }
            }
            if matched.is_none() {
                out.extend(failures);
                ok = false;
            }
        }
        if let Some(cond) = n.if_ {
            let branch = if self.check(cond, v, at, &mut Sink::Quiet) {
                n.then
            } else {
                n.else_
            };
            if let Some(b) = branch {
                ok &= self.check(b, v, at, out);
            }
        }
        ok
    }
}

fn check_string(n: &Node, s: &str, at: &[Seg<'_>], out: &mut Sink) -> bool {
    let mut ok = true;
    if n.min_length.is_some() || n.max_length.is_some() {
        let len = s.chars().count();
        if let Some(min) = n.min_length.filter(|&m| len < m) {
            out.push(at, || format!("length must be >={min}, but got {len}"));
            ok = false;
        }
        if let Some(max) = n.max_length.filter(|&m| len > m) {
            out.push(at, || format!("length must be <={max}, but got {len}"));
            ok = false;
        }
    }
    if let Some((written, re)) = &n.pattern {
        if !re.is_match(s) {
            out.push(at, || {
                format!("{} does not match pattern {}", quote(s), quote(written))
            });
            ok = false;
        }
    }
    ok
}

fn check_number(n: &Node, num: &Number, at: &[Seg<'_>], out: &mut Sink) -> bool {
    let mut ok = true;
    let Some(x) = num.as_f64() else { return true };
    fn bound(b: &Option<Number>) -> Option<(&Number, f64)> {
        b.as_ref().and_then(|b| b.as_f64().map(|f| (b, f)))
    }
    if let Some((b, _)) = bound(&n.minimum).filter(|&(_, f)| x < f) {
        out.push(at, || format!("must be >={b}, but got {num}"));
        ok = false;
    }
    if let Some((b, _)) = bound(&n.maximum).filter(|&(_, f)| x > f) {
        out.push(at, || format!("must be <={b}, but got {num}"));
        ok = false;
    }
    if let Some((b, _)) = bound(&n.exclusive_minimum).filter(|&(_, f)| x <= f) {
        out.push(at, || format!("must be > {b} but got {num}"));
        ok = false;
    }
    if let Some((b, _)) = bound(&n.exclusive_maximum).filter(|&(_, f)| x >= f) {
        out.push(at, || format!("must be < {b} but got {num}"));
        ok = false;
    }
    if let Some((b, _)) = bound(&n.multiple_of).filter(|&(_, f)| (x / f).fract() != 0.0) {
        out.push(at, || format!("{num} is not multipleOf {b}"));
        ok = false;
    }
    ok
}

/// Where the errors go: collected lines, or nowhere (a yes/no check of `not`, `if`, a second
/// `oneOf` match, or any part of one, which may stop at the first failure).
enum Sink {
    Quiet,
    Collect(Vec<String>),
}

impl Sink {
    fn is_quiet(&self) -> bool {
        matches!(self, Sink::Quiet)
    }

    /// An empty sink of the same kind, for the failures of branches that may not count.
    fn like(&self) -> Sink {
        match self {
            Sink::Quiet => Sink::Quiet,
            Sink::Collect(_) => Sink::Collect(Vec::new()),
        }
    }

    fn push(&mut self, at: &[Seg<'_>], message: impl FnOnce() -> String) {
        if let Sink::Collect(lines) = self {
            lines.push(format!("at {}: {}", pointer(at), message()));
        }
    }

    fn extend(&mut self, other: Sink) {
        if let (Sink::Collect(lines), Sink::Collect(more)) = (self, other) {
            lines.extend(more);
        }
    }
}

/// One step of the path into the value.
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

/// The JSON pointer of a path (`/` for the value itself).
fn pointer(at: &[Seg<'_>]) -> String {
    if at.is_empty() {
        return "/".into();
    }
    let mut s = String::new();
    for seg in at {
        s.push('/');
        match seg {
            Seg::Key(k) => s.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => s.push_str(&i.to_string()),
        }
    }
    s
}

fn type_of(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

fn type_name(t: u8) -> &'static str {
    TYPE_NAMES
        .iter()
        .find(|(bit, _)| *bit == t)
        .map_or("value", |(_, name)| name)
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JSON equality where 1 and 1.0 are the same number.
fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64().is_some() && x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equals(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| equals(a, b)))
        }
        _ => a == b,
    }
}

/// The first two equal items: the earliest pair in a short array, the earliest repeat in a long one.
fn duplicates(arr: &[Value]) -> Option<(usize, usize)> {
    if arr.len() <= 20 {
        for i in 0..arr.len() {
            for j in i + 1..arr.len() {
                if equals(&arr[i], &arr[j]) {
                    return Some((i, j));
                }
            }
        }
        return None;
    }
    for j in 1..arr.len() {
        if let Some(i) = (0..j).find(|&i| equals(&arr[i], &arr[j])) {
            return Some((i, j));
        }
    }
    None
}

/// A string in single quotes, escaped as Rust's `Debug` escapes it.
fn quote(s: &str) -> String {
    let debug = format!("{s:?}").replace("\\\"", "\"").replace('\'', "\\'");
    format!("'{}'", &debug[1..debug.len() - 1])
}

fn display(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => "value".into(),
        _ => v.to_string(),
    }
}

fn enum_message(values: &[Value]) -> String {
    if values.iter().any(|v| v.is_array() || v.is_object()) {
        return "enum failed".into();
    }
    if let [only] = values {
        return format!("value must be {}", display(only));
    }
    let all: Vec<String> = values.iter().map(display).collect();
    format!("value must be one of {}", all.join(", "))
}

struct Compiler<'d> {
    doc: &'d Value,
    nodes: Vec<Node>,
    by_pointer: HashMap<String, usize>,
    /// `$anchor` name → pointer of its subschema.
    anchors: HashMap<String, String>,
    /// (node, `$ref` as written) still to resolve.
    refs: Vec<(usize, String)>,
}

impl Compiler<'_> {
    /// Compiles the subschema at `ptr` (a JSON pointer into the document, escaped), once.
    fn node(&mut self, v: &Value, ptr: String) -> Result<usize, String> {
        if let Some(&i) = self.by_pointer.get(&ptr) {
            return Ok(i);
        }
        let i = self.nodes.len();
        self.nodes.push(Node::default());
        self.by_pointer.insert(ptr.clone(), i);
        let mut n = Node::default();
        let obj = match v {
            Value::Bool(b) => {
                n.always = Some(*b);
                self.nodes[i] = n;
                return Ok(i);
            }
            Value::Object(obj) => obj,
            _ => {
                return Err(format!(
                    "{}: a schema must be an object or a boolean",
                    show(&ptr)
                ))
            }
        };
        let at = |k: &str| format!("{ptr}/{}", k.replace('~', "~0").replace('/', "~1"));
        let bad = |k: &str, why: &str| format!("{}: {k} {why}", show(&ptr));
        for (k, val) in obj {
            match k.as_str() {
                "type" => {
                    let names: Vec<&Value> = match val {
                        Value::Array(a) => a.iter().collect(),
                        one => vec![one],
                    };
                    for name in names {
                        let bit = TYPE_NAMES
                            .iter()
                            .find(|(_, t)| Some(*t) == name.as_str())
                            .ok_or_else(|| bad(k, "names an unknown type"))?;
                        n.types |= bit.0;
                    }
                }
                "const" => n.constant = Some(val.clone()),
                "enum" => {
                    n.enumeration =
                        Some(val.as_array().cloned().ok_or_else(|| bad(k, "must be an array"))?)
                }
                "format" => {
                    n.format = Some(match val.as_str() {
                        Some("date-time") => Format::DateTime,
                        Some("date") => Format::Date,
                        Some("time") => Format::Time,
                        Some("uuid") => Format::Uuid,
                        _ => return Err(bad(k, "is not one of date-time, date, time, uuid")),
                    })
                }
                "$ref" => {
                    let target = val.as_str().ok_or_else(|| bad(k, "must be a string"))?;
                    self.refs.push((i, target.to_string()));
                }
                "$defs" => {
                    let defs = val.as_object().ok_or_else(|| bad(k, "must be an object"))?;
                    for (name, sub) in defs {
                        let p = format!("{}/{}", at(k), name.replace('~', "~0").replace('/', "~1"));
                        self.node(sub, p)?;
                    }
                }
                "$anchor" => {
                    let name = val.as_str().ok_or_else(|| bad(k, "must be a string"))?;
                    self.anchors.insert(name.to_string(), ptr.clone());
                }
                "$schema" => {
                    if val.as_str() != Some("https://json-schema.org/draft/2020-12/schema") {
                        return Err(bad(k, "must be draft 2020-12"));
                    }
                }
                "properties" => {
                    let props = val.as_object().ok_or_else(|| bad(k, "must be an object"))?;
                    for (name, sub) in props {
                        let p = format!("{}/{}", at(k), name.replace('~', "~0").replace('/', "~1"));
                        let s = self.node(sub, p)?;
                        n.properties.push((name.clone(), s));
                    }
                    crate::engine::sort::sort_by(&mut n.properties, |a, b| a.0.cmp(&b.0));
                }
                "required" => {
                    let names = val.as_array().ok_or_else(|| bad(k, "must be an array"))?;
                    for name in names {
                        let name = name.as_str().ok_or_else(|| bad(k, "must list strings"))?;
                        n.required.push(name.to_string());
                    }
                }
                "additionalProperties" => {
                    n.additional = Some(match val {
                        Value::Bool(b) => Additional::Allowed(*b),
                        sub => Additional::Schema(self.node(sub, at(k))?),
                    })
                }
                "items" => n.items = Some(self.node(val, at(k))?),
                "not" => n.not = Some(self.node(val, at(k))?),
                "if" => n.if_ = Some(self.node(val, at(k))?),
                "then" => n.then = Some(self.node(val, at(k))?),
                "else" => n.else_ = Some(self.node(val, at(k))?),
                "allOf" | "anyOf" | "oneOf" => {
                    let subs = val.as_array().filter(|a| !a.is_empty());
                    let subs = subs.ok_or_else(|| bad(k, "must be a non-empty array"))?;
                    let mut list = Vec::new();
                    for (j, sub) in subs.iter().enumerate() {
                        list.push(self.node(sub, format!("{}/{j}", at(k)))?);
                    }
                    match k.as_str() {
                        "allOf" => n.all_of = list,
                        "anyOf" => n.any_of = list,
                        _ => n.one_of = list,
                    }
                }
                "minProperties" => n.min_properties = Some(count(val).ok_or_else(|| bad(k, NOT_COUNT))?),
                "maxProperties" => n.max_properties = Some(count(val).ok_or_else(|| bad(k, NOT_COUNT))?),
                "minItems" => n.min_items = Some(count(val).ok_or_else(|| bad(k, NOT_COUNT))?),
                "maxItems" => n.max_items = Some(count(val).ok_or_else(|| bad(k, NOT_COUNT))?),
                "minLength" => n.min_length = Some(count(val).ok_or_else(|| bad(k, NOT_COUNT))?),
                "maxLength" => n.max_length = Some(count(val).ok_or_else(|| bad(k, NOT_COUNT))?),
                "uniqueItems" => n.unique_items = val.as_bool().ok_or_else(|| bad(k, "must be a boolean"))?,
                "pattern" => {
                    let written = val.as_str().ok_or_else(|| bad(k, "must be a string"))?;
                    let re = Regex::new(&ecma_classes(written))
                        .map_err(|e| bad(k, &format!("is not a regular expression we support: {e}")))?;
                    n.pattern = Some((written.to_string(), re));
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                    let num = match val {
                        Value::Number(x) if k != "multipleOf" || x.as_f64().is_some_and(|f| f > 0.0) => x.clone(),
                        _ => return Err(bad(k, "must be a number (multipleOf: above 0)")),
                    };
                    let slot = match k.as_str() {
                        "minimum" => &mut n.minimum,
                        "maximum" => &mut n.maximum,
                        "exclusiveMinimum" => &mut n.exclusive_minimum,
                        "exclusiveMaximum" => &mut n.exclusive_maximum,
                        _ => &mut n.multiple_of,
                    };
                    *slot = Some(num);
                }
                other if ANNOTATIONS.contains(&other) || other.starts_with("x-") => {}
                other => {
                    return Err(format!(
                        "{}: the keyword {other} is not supported (src/engine/schema.rs lists those that are)",
                        show(&ptr)
                    ))
                }
            }
        }
        self.nodes[i] = n;
        Ok(i)
    }

    /// The node a `$ref` names: `#`, `#/pointer` (percent-decoded) or `#anchor`, in this document.
    fn resolve(&mut self, target: &str) -> Result<usize, String> {
        let fragment = target.strip_prefix('#').ok_or_else(|| {
            format!("$ref {target}: only references within the schema (#…) are supported")
        })?;
        if fragment.is_empty() || fragment.starts_with('/') {
            let ptr = percent_decode(fragment)
                .ok_or_else(|| format!("$ref {target}: bad percent-encoding"))?;
            if let Some(&i) = self.by_pointer.get(&ptr) {
                return Ok(i);
            }
            let doc = self.doc;
            let v = doc
                .pointer(&ptr)
                .ok_or_else(|| format!("$ref {target}: nothing there"))?;
            return self.node(v, ptr);
        }
        let ptr = self
            .anchors
            .get(fragment)
            .ok_or_else(|| format!("$ref {target}: no such $anchor"))?;
        Ok(self.by_pointer[ptr])
    }
}

const NOT_COUNT: &str = "must be a whole number of 0 or more";

fn count(v: &Value) -> Option<usize> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .and_then(|c| usize::try_from(c).ok()),
        _ => None,
    }
}

/// A schema location for messages: `#` and the pointer.
fn show(ptr: &str) -> String {
    format!("#{ptr}")
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k] == b'%' {
            let hex = s.get(k + 1..k + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            k += 3;
        } else {
            out.push(bytes[k]);
            k += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// JavaScript's whitespace (`\s` of ECMA-262) as a class body.
const ECMA_SPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// A pattern with `\d \D \w \W \s \S` written out as the ASCII (and, for `\s`, JavaScript) classes
/// ECMA-262 gives them; the regex engine reads the rest as written. Inside brackets the positive
/// classes become ranges (the engine has no nested classes) and the negated ones stay, read as
/// ASCII classes by the engine (`[\S]` misses JavaScript's non-ASCII spaces; no schema of ours
/// writes one).
fn ecma_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            match c {
                '[' if !in_class => {
                    in_class = true;
                    out.push(c);
                    // A `]` first in the class (after an optional `^`) is a literal.
                    if chars.peek() == Some(&'^') {
                        out.push('^');
                        chars.next();
                    }
                    if chars.peek() == Some(&']') {
                        out.push_str("\\]");
                        chars.next();
                    }
                    continue;
                }
                ']' if in_class => in_class = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push(c);
            break;
        };
        let written = match (e, in_class) {
            ('d', false) => "[0-9]".to_string(),
            ('D', false) => "[^0-9]".to_string(),
            ('w', false) => "[0-9A-Za-z_]".to_string(),
            ('W', false) => "[^0-9A-Za-z_]".to_string(),
            ('s', false) => format!("[{ECMA_SPACE}]"),
            ('S', false) => format!("[^{ECMA_SPACE}]"),
            ('d', true) => "0-9".to_string(),
            ('w', true) => "0-9A-Za-z_".to_string(),
            ('s', true) => ECMA_SPACE.to_string(),
            (other, _) => format!("\\{other}"),
        };
        out.push_str(&written);
    }
    out
}

fn check_date(s: &str) -> Result<(), String> {
    if s.len() != 10 {
        return Err("must be 10 characters long".into());
    }
    if !char_at(s, 4, '-') || !char_at(s, 7, '-') {
        return Err("missing hyphen in correct place".into());
    }
    let mut ymd = s.splitn(3, '-').filter_map(|t| t.parse::<usize>().ok());
    let (Some(y), Some(m), Some(d)) = (ymd.next(), ymd.next(), ymd.next()) else {
        return Err("non-positive year/month/day".into());
    };
    if !(1..=12).contains(&m) {
        return Err(format!("{m} months in year"));
    }
    if !(1..=31).contains(&d) {
        return Err(format!("{d} days in month"));
    }
    match m {
        2 => {
            let feb = if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) {
                29
            } else {
                28
            };
            if d > feb {
                return Err(format!("february has {feb} days only"));
            }
        }
        4 | 6 | 9 | 11 if d > 30 => return Err("month has 30 days only".into()),
        _ => {}
    }
    Ok(())
}

fn char_at(s: &str, index: usize, ch: char) -> bool {
    s.is_char_boundary(index) && s[index..].starts_with(ch)
}

fn check_time(mut s: &str) -> Result<(), String> {
    if s.len() < 9 {
        return Err("less than 9 characters long".into());
    }
    if !char_at(s, 2, ':') || !char_at(s, 5, ':') {
        return Err("missing colon in correct place".into());
    }
    if !s.is_char_boundary(8) {
        return Err("contains non-ascii char".into());
    }
    let mut hms = s[..8]
        .splitn(3, ':')
        .filter_map(|t| t.parse::<usize>().ok());
    let (Some(mut h), Some(mut m), Some(sec)) = (hms.next(), hms.next(), hms.next()) else {
        return Err("non-positive hour/min/sec".into());
    };
    if h > 23 || m > 59 || sec > 60 {
        return Err("hour/min/sec out of range".into());
    }
    s = &s[8..];
    if let Some(rest) = s.strip_prefix('.') {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return Err("no digits in second fraction".into());
        }
        s = &rest[digits..];
    }
    if s != "z" && s != "Z" {
        if s.len() != 6 {
            return Err("offset must be 6 characters long".into());
        }
        let sign: isize = match s.chars().next() {
            Some('+') => -1,
            Some('-') => 1,
            _ => return Err("offset must begin with plus/minus".into()),
        };
        s = &s[1..];
        if !char_at(s, 2, ':') {
            return Err("missing colon in offset at correct place".into());
        }
        let mut zhm = s.splitn(2, ':').filter_map(|t| t.parse::<usize>().ok());
        let (Some(zh), Some(zm)) = (zhm.next(), zhm.next()) else {
            return Err("non-positive hour/min in offset".into());
        };
        if zh > 23 || zm > 59 {
            return Err("hour/min in offset out of range".into());
        }
        // The leap second is checked in UTC.
        let mut hm = (h * 60 + m) as isize + sign * (zh * 60 + zm) as isize;
        if hm < 0 {
            hm += 24 * 60;
        }
        let hm = hm as usize;
        (h, m) = ((hm / 60) % 24, hm % 60);
    }
    if !(sec < 60 || (h == 23 && m == 59)) {
        return Err("invalid leap second".into());
    }
    Ok(())
}

fn check_date_time(s: &str) -> Result<(), String> {
    if s.len() < 20 {
        return Err("less than 20 characters long".into());
    }
    if !s.is_char_boundary(10) || !s[10..].starts_with(['t', 'T']) {
        return Err("11th character must be t or T".into());
    }
    check_date(&s[..10]).map_err(|e| format!("invalid date element: {e}"))?;
    check_time(&s[11..]).map_err(|e| format!("invalid time element: {e}"))
}

fn check_uuid(s: &str) -> Result<(), String> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut n = 0;
    for group in s.split('-') {
        let Some(&want) = GROUPS.get(n) else {
            return Err("more than 5 elements".into());
        };
        if group.len() != want {
            return Err(format!("element {} must be {want} characters long", n + 1));
        }
        if let Some(ch) = group.chars().find(|c| !c.is_ascii_hexdigit()) {
            return Err(format!("non-hex character {ch:?}"));
        }
        n += 1;
    }
    if n != GROUPS.len() {
        return Err("must have 5 elements".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
