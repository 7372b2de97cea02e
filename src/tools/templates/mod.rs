//! Text templates stored in D1: `create_template` defines one, `process_template` renders one into
//! `text`, `markdown` or `html` (seed 000). Syntax and semantics: docs/templates.md.
//!
//! Compiled templates, and each template's parsed `variables_schema` and `default_values`, are kept
//! per wasm instance, keyed by template id and revision (every update bumps the revision, so a
//! cached parse is never stale). `use_cache: false` skips the compiled template and the result
//! cache, as its schema says; the parsed rules are kept either way, since no caller can tell them
//! from a fresh parse of the same revision. Processed results are cached in KV for
//! five minutes under a SHA-256 of everything that determines them. That is not the executor's
//! result cache (`registry::cache`), which keys on the arguments alone: a result also depends on
//! the template's revision and today's date, and `include_metadata` writes to D1.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::clock;
use crate::engine::output::{self, Format};
use crate::engine::template::{RenderOptions, Template};
use crate::engine::variables::{self, Schema};
use crate::error::{Error, Result};
use crate::registry::{self, Annotations, ToolContext, ToolDef, ToolError, ToolOutput, ToolResult};
use crate::tools::ownership::{name_clash, sharing_params, Principal, Sharing};
use crate::tools::{not_found_listing, opt_bool, refuse_if_any};

const TOOLSET: &str = "templates";
/// Most compiled templates kept per wasm instance.
const COMPILED_MAX: usize = 64;
/// How long a processed result stays in KV, in seconds.
const RESULT_TTL_SECS: u64 = 300;
/// Names every template may use without declaring them: the processing context.
const CONTEXT_ROOTS: [&str; 3] = ["agent", "session", "current_date"];

/// Most templates whose parsed rules are kept per wasm instance.
const RULES_MAX: usize = 64;

thread_local! {
    static COMPILED: RefCell<HashMap<(i64, i64), Rc<Template>>> = RefCell::new(HashMap::new());
    /// Parsed `variables_schema` and `default_values` by template id and revision: parsing them
    /// (JSON, then every rule, with a regular expression compiled to check each `pattern`) cost
    /// more than rendering the seed's trip confirmation.
    static RULES: RefCell<HashMap<(i64, i64), Rc<Rules>>> = RefCell::new(HashMap::new());
}

/// The agent every template sees unless its own `default_values` or the caller's `agent_info` say
/// otherwise (seed 000's `agent_info` defaults).
fn builtins() -> Value {
    json!({ "agent": { "name": "Kim Henderson", "title": "Travel Consultant", "agency": "Somo Travel" } })
}

/// The context a template sees besides its variables: `agent` (from `agent_info`), `session`,
/// `current_date`.
fn context(context_data: &Value) -> Value {
    let agent = context_data
        .get("agent_info")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut session = context_data
        .get("session_info")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(id) = session.get("session_id").cloned() {
        session["id"] = id;
    }
    json!({ "agent": agent, "session": session, "current_date": clock::today() })
}

fn parse_json_column(row: &Value, column: &str) -> Result<Value> {
    let text = row.get(column).and_then(Value::as_str).unwrap_or("null");
    serde_json::from_str(text)
        .map_err(|e| Error::Internal(format!("template column {column} is not JSON: {e}")))
}

fn schema_of(v: &Value) -> ToolResult<Schema> {
    variables::parse_schema(v).map_err(|errors| {
        ToolError::failed(format!(
            "variables_schema is invalid: {}. Fix these rules and try again.",
            errors.join("; ")
        ))
    })
}

/// The paths the schema and the defaults declare, and every dotted prefix of each, so checking a
/// path a template reads takes a few lookups rather than a scan of every key (a template's paths
/// times the schema's keys grew with the square of the request).
struct Declared<'k> {
    keys: HashSet<&'k str>,
    prefixes: HashSet<&'k str>,
}

impl<'k> Declared<'k> {
    fn new(keys: &[&'k String]) -> Self {
        let mut prefixes = HashSet::new();
        for k in keys {
            prefixes.extend(k.match_indices('.').map(|(i, _)| &k[..i]));
        }
        Declared {
            keys: keys.iter().map(|k| k.as_str()).collect(),
            prefixes,
        }
    }

    /// Whether a path a template reads is declared (a declared prefix or extension counts:
    /// `flight.outbound` covers `flight.outbound.airline`, `flight.outbound.airline` covers
    /// `flight`).
    fn covers(&self, path: &str) -> bool {
        let root = path.split(['.', '[']).next().unwrap_or(path);
        CONTEXT_ROOTS.contains(&root)
            || self.keys.contains(path)
            || self.prefixes.contains(path)
            || path
                .match_indices('.')
                .any(|(i, _)| self.keys.contains(&path[..i]))
    }
}

#[cfg(test)]
fn declared(path: &str, keys: &[&String]) -> bool {
    Declared::new(keys).covers(path)
}

fn create_template(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let def = &args["template_definition"];
        let opts = args
            .get("creation_options")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let name = def["name"].as_str().unwrap_or_default();
        let me = Principal::of(ctx);
        let owner = me.require_owner("save a template")?.to_string();
        let sharing = Sharing::from_args(&opts, "creation_options.")?;
        let content = def["content"].as_str().unwrap_or_default();
        let schema = schema_of(&def["variables_schema"])?;
        let defaults = def
            .get("default_values")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let bad_defaults: Vec<&String> = defaults
            .keys()
            .filter(|k| !variables::valid_path(k))
            .collect();
        if !bad_defaults.is_empty() {
            return Err(ToolError::failed(format!(
                    "default_values keys must be dotted paths like client.tier; not valid: {bad_defaults:?}"
                )));
        }

        let mut warnings = Vec::new();
        let template = Template::parse(content)
            .map_err(|e| ToolError::failed(format!("Template syntax validation failed: {e}")));
        if opt_bool(&opts, "validate_syntax", true) {
            let template = template.as_ref().map_err(Clone::clone)?;
            let keys: Vec<&String> = schema.keys().chain(defaults.keys()).collect();
            let known = Declared::new(&keys);
            let undeclared: Vec<String> = template
                .variables()
                .into_iter()
                .filter(|v| !known.covers(v))
                .collect();
            if !undeclared.is_empty() {
                warnings.push(format!(
                    "Template contains undefined variables: {}\nConsider adding these to variables_schema for proper validation.",
                    undeclared.join(", ")
                ));
            }
        }
        if opt_bool(&opts, "validate_security", true) {
            refuse_if_any(
                "Template security validation failed",
                &output::security_issues(content),
            )?;
        }
        let examples = def
            .get("usage_examples")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if opt_bool(&opts, "test_compilation", true) {
            if let Some(example) = examples.first() {
                let template = template.as_ref().map_err(Clone::clone)?;
                let vars = variables::merge_over(
                    builtins(),
                    &defaults,
                    &schema,
                    &context(&json!({})),
                    &example["variables"],
                );
                template
                    .render(&vars, RenderOptions::default())
                    .map_err(|e| {
                        ToolError::failed(format!(
                            "Template compilation test failed with usage example {:?}: {e}",
                            example["name"].as_str().unwrap_or("1")
                        ))
                    })?;
            }
        }

        let title = def["title"].as_str().unwrap_or_default();
        let category = def["category"].as_str().unwrap_or_default();
        let metadata = def.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let version = metadata
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("1.0")
            .to_string();
        let active = i64::from(opt_bool(&opts, "set_active", true));
        let mut params = vec![
            json!(name),
            json!(title),
            json!(category),
            json!(content),
            json!(def["variables_schema"].to_string()),
            json!(Value::Object(defaults.clone()).to_string()),
            json!(Value::Array(examples.clone()).to_string()),
            json!(metadata.to_string()),
            json!(version),
            json!(active),
            json!(owner),
        ];
        params.extend(sharing_params(sharing.as_ref()));
        let insert = "INSERT INTO template_definitions (name, title, category, content, variables_schema, default_values, usage_examples, metadata, version, is_active, owner, visibility, shared_roles)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, COALESCE(?12, 'private'), COALESCE(?13, '[]'))";
        let overwrite = opt_bool(&opts, "overwrite_existing", false);
        let sql = if overwrite {
            // Only the owner replaces a template (an admin a shipped one); its owner never
            // changes, and its sharing only when this call names one.
            let mine = me.can_write("template_definitions.", 14);
            params.extend(mine.params);
            format!(
                "{insert}
             ON CONFLICT (name) DO UPDATE SET title = excluded.title, category = excluded.category, content = excluded.content,
               variables_schema = excluded.variables_schema, default_values = excluded.default_values,
               usage_examples = excluded.usage_examples, metadata = excluded.metadata, version = excluded.version,
               is_active = excluded.is_active, revision = template_definitions.revision + 1,
               visibility = COALESCE(?12, template_definitions.visibility),
               shared_roles = COALESCE(?13, template_definitions.shared_roles),
               updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
             WHERE {}
             RETURNING id, revision, visibility",
                mine.sql
            )
        } else {
            format!("{insert} ON CONFLICT (name) DO NOTHING RETURNING id, revision, visibility")
        };
        let saved = ctx.query(&sql, params).await?.into_iter().next();
        let Some(saved) = saved else {
            return Err(name_clash(
                ctx,
                &me,
                ("template_definitions", "", "Template"),
                name,
                |_| None,
            )
            .await);
        };
        let updated = saved["revision"].as_i64().unwrap_or(1) > 1;

        let mut text = format!(
            "Template '{name}' {} successfully.\n\n**Template Details:**\n- Name: {name}\n- Title: {title}\n- Category: {category}\n- Content Length: {} characters\n- Variables: {}\n- Status: {}\n- Visibility: {}",
            if updated { "updated" } else { "created" },
            content.chars().count(),
            schema.len(),
            if active == 1 { "Active" } else { "Inactive" },
            saved["visibility"].as_str().unwrap_or("private"),
        );
        if !schema.is_empty() {
            text.push_str("\n\n**Variables:**");
            for (path, spec) in &schema {
                text.push_str(&format!(
                    "\n- {{{path}}} ({}){}{}",
                    def["variables_schema"][path]["type"]
                        .as_str()
                        .unwrap_or("?"),
                    if spec.required { " - required" } else { "" },
                    spec.default
                        .as_ref()
                        .map(|d| format!(" - default: {d}"))
                        .unwrap_or_default(),
                ));
            }
        }
        for w in &warnings {
            text.push_str(&format!("\n\n**Warning:** {w}"));
        }
        text.push_str(&format!(
            "\n\n**Usage Example:**\n```\nprocess_template({{\n  \"template_name\": \"{name}\",\n  \"variables\": {{\n    // Provide variables here\n  }}\n}})\n```"
        ));
        if let Some(example) = examples.first() {
            text.push_str(&format!(
                "\n\n**Sample Variables ({}):**\n```json\n{}\n```",
                example["name"].as_str().unwrap_or(""),
                serde_json::to_string_pretty(&example["variables"])?
            ));
        }
        Ok(ToolOutput::Content(vec![
            json!({ "type": "text", "text": text }),
        ]))
    })
}

/// The compiled template of a stored row, and whether it came from this instance's cache.
fn compiled(row: &Value, use_cache: bool) -> ToolResult<(Rc<Template>, bool)> {
    let key = version_of(row);
    if use_cache {
        if let Some(t) = COMPILED.with(|c| c.borrow().get(&key).cloned()) {
            return Ok((t, true));
        }
    }
    let content = row["content"].as_str().unwrap_or_default();
    let t = Rc::new(
        Template::parse(content)
            .map_err(|e| ToolError::failed(format!("Stored template does not compile: {e}")))?,
    );
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= COMPILED_MAX {
            c.clear();
        }
        c.insert(key, t.clone());
    });
    Ok((t, false))
}

fn cache_key(row: &Value, vars: &Value, format: &str, secure: bool, strict: bool) -> String {
    let mut h = Sha256::new();
    // "answer" marks entries holding the whole structured answer (text and warnings), not the
    // text alone as entries written before.
    h.update(format!(
        "answer\n{}\n{}\n{format}\n{secure}\n{strict}\n",
        row["id"], row["revision"]
    ));
    h.update(vars.to_string());
    let digest: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("template-result:{digest}")
}

/// A template's parsed `variables_schema` and `default_values`.
struct Rules {
    schema: Schema,
    defaults: Map<String, Value>,
}

/// The id and revision of a stored row: what names one version of a template.
fn version_of(row: &Value) -> (i64, i64) {
    (
        row["id"].as_i64().unwrap_or(0),
        row["revision"].as_i64().unwrap_or(0),
    )
}

/// The parsed rules of a stored row, from this instance's cache when it parsed that revision
/// before.
fn rules_of(row: &Value) -> Result<Rc<Rules>> {
    let key = version_of(row);
    if let Some(rules) = RULES.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(rules);
    }
    let schema = schema_of(&parse_json_column(row, "variables_schema")?)?;
    let defaults = match parse_json_column(row, "default_values")? {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let rules = Rc::new(Rules { schema, defaults });
    RULES.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= RULES_MAX {
            c.clear();
        }
        c.insert(key, rules.clone());
    });
    Ok(rules)
}

/// A stored, active template with its parsed rules.
pub struct Stored {
    row: Value,
    rules: Rc<Rules>,
}

impl Stored {
    /// Loads an active template by name that the caller may read; a missing one lists the
    /// templates they may use.
    pub async fn load(ctx: &dyn ToolContext, name: &str) -> Result<Stored> {
        let readable = Principal::of(ctx).can_read("", 2);
        let params = [vec![json!(name)], readable.params].concat();
        let rows = ctx
            .query(
                &format!(
                    "SELECT id, revision, name, title, category, content, variables_schema, default_values
                     FROM template_definitions WHERE name = ?1 AND is_active = 1 AND {}",
                    readable.sql
                ),
                params,
            )
            .await?;
        let Some(row) = rows.into_iter().next() else {
            return Err(
                not_found_listing(ctx, "Template", name, "template_definitions")
                    .await?
                    .into(),
            );
        };
        let rules = rules_of(&row)?;
        Ok(Stored { row, rules })
    }

    /// The variables the template sees: built-in agent < the template's defaults < context <
    /// `variables` (see `engine::variables`).
    pub fn variables(&self, context_data: &Value, variables: &Value) -> Value {
        variables::merge_over(
            builtins(),
            &self.rules.defaults,
            &self.rules.schema,
            &context(context_data),
            variables,
        )
    }

    /// Checks variables against the template's rules, naming every failing field.
    pub fn validate(&self, vars: &Value) -> ToolResult<()> {
        refuse_if_any(
            "Template variable validation failed",
            &variables::validate(vars, &self.rules.schema),
        )
    }

    /// Renders leniently into `format`.
    pub fn render(
        &self,
        vars: &Value,
        format: Format,
        secure: bool,
        use_cache: bool,
    ) -> ToolResult<String> {
        let (template, _) = compiled(&self.row, use_cache)?;
        let rendered = template
            .render(vars, RenderOptions::default())
            .map_err(|e| ToolError::failed(format!("Template processing failed: {e}")))?;
        Ok(output::finish(&rendered, format, secure))
    }
}

/// The warning for each path a lenient render printed as nothing.
fn missing_warnings(missing: &[String]) -> Vec<String> {
    missing
        .iter()
        .map(|path| format!("missing value for {path}: rendered empty. Provide it in variables, or set processing_options.strict: true to make a missing value an error"))
        .collect()
}

/// `process_template`'s answer: the text, with what the caller should know about it.
fn answer(text: String, format: &str, missing: &[String], fallback: bool) -> Value {
    json!({
        "text": text,
        "output_format": format,
        "missing_variables": missing,
        "warnings": missing_warnings(missing),
        "fallback_used": fallback,
    })
}

/// `process_template`'s arguments.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessTemplate {
    template_name: String,
    /// An object (the schema says so); the stored template's own schema checks its fields.
    variables: Value,
    processing_options: Option<ProcessingOptions>,
    /// `agent_info` and `session_info`, as [`context`] reads them.
    context_data: Option<Value>,
}

/// `process_template`'s `processing_options`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessingOptions {
    output_format: Option<String>,
    validate_variables: Option<bool>,
    apply_security: Option<bool>,
    use_cache: Option<bool>,
    include_metadata: Option<bool>,
    strict: Option<bool>,
    fallback_content: Option<String>,
}

async fn process(ctx: &dyn ToolContext, args: &ProcessTemplate) -> ToolResult<Value> {
    let name = args.template_name.as_str();
    let opts = args.processing_options.as_ref();
    let opt =
        |o: fn(&ProcessingOptions) -> Option<bool>, default| opts.and_then(o).unwrap_or(default);
    let format_name = opts
        .and_then(|o| o.output_format.as_deref())
        .unwrap_or("text");
    let format = Format::parse(format_name).unwrap_or(Format::Text);
    let secure = opt(|o| o.apply_security, true);
    let use_cache = opt(|o| o.use_cache, true);
    let with_metadata = opt(|o| o.include_metadata, false);
    let strict = opt(|o| o.strict, false);

    let stored = Stored::load(ctx, name).await?;
    let row = &stored.row;
    let context_data = args.context_data.as_ref().unwrap_or(&Value::Null);
    let vars = stored.variables(context_data, &args.variables);
    if opt(|o| o.validate_variables, true) {
        stored.validate(&vars)?;
    }

    // The key is a SHA-256 of the variables: computed only when the result cache is used.
    let key = use_cache.then(|| cache_key(row, &vars, format_name, secure, strict));
    if let (Some(key), false) = (&key, with_metadata) {
        if let Ok(Some(hit)) = ctx.cache_get(key).await {
            if let Ok(answer @ Value::Object(_)) = serde_json::from_str::<Value>(&hit) {
                return Ok(answer);
            }
        }
    }
    let started = clock::now_ms();
    let (template, reused) = compiled(row, use_cache)?;
    let rendered = template
        .render(
            &vars,
            RenderOptions {
                strict,
                ..Default::default()
            },
        )
        .map_err(|e| ToolError::failed(format!("Template processing failed: {e}")))?;
    let mut text = output::finish(&rendered, format, secure);
    let elapsed = clock::now_ms() - started;

    if with_metadata {
        let session = context_data["session_info"]["session_id"].clone();
        ctx.query(
            "INSERT INTO template_processings (template_id, template_revision, output_format, variables_provided, processed_content, processing_time_ms, session_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            vec![row["id"].clone(), row["revision"].clone(), json!(format_name), json!(vars.to_string()), json!(text), json!(elapsed), session],
        )
        .await?;
        let used = template.variables();
        text.push_str(&format!(
            "\n\n---\n**Processing Metadata:**\n- Template: {} ({name})\n- Variables Used: {}\n- Processing Time: {elapsed}ms\n- Output Format: {format_name}\n- Security Applied: {}\n- Compiled Template: {}",
            row["title"].as_str().unwrap_or(""),
            if used.is_empty() { "None".to_string() } else { used.join(", ") },
            if secure { "Yes" } else { "No" },
            if reused { "reused from this instance's cache" } else { "compiled for this call" },
        ));
        if !rendered.missing.is_empty() {
            text.push_str(&format!(
                "\n- Warnings: missing values for {}",
                rendered.missing.join(", ")
            ));
        }
        return Ok(answer(text, format_name, &rendered.missing, false));
    }
    let answer = answer(text, format_name, &rendered.missing, false);
    if let Some(key) = &key {
        if let Err(e) = ctx
            .cache_put(key, &answer.to_string(), RESULT_TTL_SECS)
            .await
        {
            ctx.log(
                crate::mcp::logging::LogLevel::Warning,
                json!(format!("result not cached: {e}")),
            );
        }
    }
    Ok(answer)
}

/// Whether a `process_template` call writes: only `include_metadata` records the processing
/// (`template_processings`); otherwise it reads and renders.
fn records_processing(args: &Value) -> bool {
    args.pointer("/processing_options/include_metadata") == Some(&Value::Bool(true))
}

fn process_template(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let args: ProcessTemplate = registry::typed("process_template", args)?;
        let value = match process(ctx, &args).await {
            Ok(value) => value,
            Err(e) => {
                let opts = args.processing_options.as_ref();
                let Some(fallback) = opts.and_then(|o| o.fallback_content.as_deref()) else {
                    return Err(e);
                };
                let format = opts
                    .and_then(|o| o.output_format.as_deref())
                    .unwrap_or("text");
                let mut value = answer(
                    format!(
                        "Template processing failed, using fallback content:\n\n{fallback}\n\n**Error:** {}",
                        e.public_message()
                    ),
                    format,
                    &[],
                    true,
                );
                value["warnings"] = json!([format!(
                    "the template failed and fallback_content was used: {}",
                    e.public_message()
                )]);
                value
            }
        };
        let summary = value["text"].as_str().unwrap_or_default().to_string();
        Ok(ToolOutput::Described { value, summary })
    })
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "create_template",
        title: "Create template",
        description: "Define (or, with overwrite_existing, replace) a text template with {expression} placeholders, a variables_schema keyed by dotted paths, default values and usage examples. Checks syntax, security (no scripts, event handlers or javascript: URLs) and renders the first usage example before saving. The template is yours: private unless creation_options.visibility makes it shared (with shared_roles) or public; only you replace it, and a name another owner holds is refused.",
        annotations: Annotations { read_only: false, destructive: true, idempotent: false, open_world: false },
        input_schema: include_str!("../../../schema/templates/create_template.input.json"),
        timeout_ms: 15_000,
        roles: &[],
        handler: create_template,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "process_template",
        title: "Process template",
        description: "Render a stored template with variables into text, markdown or html. Variables are validated against the template's schema; agent_info and session_info are available as agent and session (over the template's own agent defaults), plus current_date. The template's markup renders as markup; values are escaped for the output format. A missing value renders empty and is listed in warnings, or fails the call with processing_options.strict.",
        annotations: Annotations { read_only: false, destructive: false, idempotent: true, open_world: false },
        input_schema: include_str!("../../../schema/templates/process_template.input.json"),
        output_schema: Some(include_str!("../../../schema/templates/process_template.output.json")),
        timeout_ms: 15_000,
        roles: &[],
        handler: process_template,
        writes: Some(records_processing),
        ..ToolDef::DEFAULTS
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_args_structs_are_the_schemas_properties() {
        registry::assert_args_match::<ProcessTemplate>(include_str!(
            "../../../schema/templates/process_template.input.json"
        ));
        let options: Value = serde_json::from_str(include_str!(
            "../../../schema/templates/process_template.input.json"
        ))
        .expect("the schema is JSON");
        registry::assert_args_match::<ProcessingOptions>(
            &options["properties"]["processing_options"].to_string(),
        );
    }

    #[test]
    fn declared_paths_cover_prefixes_extensions_and_context() {
        let a = "flight.outbound".to_string();
        let b = "client.name".to_string();
        let keys = vec![&a, &b];
        assert!(declared("flight.outbound.airline", &keys));
        assert!(declared("client", &keys));
        assert!(declared("agent.phone", &keys));
        assert!(declared("current_date", &keys));
        assert!(!declared("hotel.name", &keys));
        assert!(!declared("clientele", &keys));
    }

    #[test]
    fn declared_paths_are_checked_without_scanning_every_key() {
        let owned: Vec<String> = (0..40_000).map(|i| format!("k{i}.x")).collect();
        let keys: Vec<&String> = owned.iter().collect();
        let started = std::time::Instant::now();
        let known = Declared::new(&keys);
        let covered = (0..2_500)
            .filter(|i| known.covers(&format!("k{i}")) && !known.covers(&format!("z{i}")))
            .count();
        let took = started.elapsed();
        assert_eq!(covered, 2_500);
        assert!(known.covers("k7.x.y") && !known.covers("k7.xy"));
        // The scan it replaces took seconds for these sizes (the square of a 1 MiB request).
        let limit = if cfg!(debug_assertions) { 1_000 } else { 100 };
        assert!(took.as_millis() < limit, "took {took:?}");
    }

    #[test]
    fn the_seeded_templates_compile_and_pass_the_security_check() {
        let seed = include_str!("../../engine/testdata/trip-confirmation-comprehensive.txt");
        assert!(Template::parse(seed).is_ok());
        assert!(output::security_issues(seed).is_empty());
    }
}
