//! The context catalog as the FlowMind tools see it: the `contexts` rows of D1 plus one `tool://`
//! context per tool of the registry, with the matcher's index built over them.
//!
//! Building the index costs far more than a search (every context's text is tokenised and
//! stemmed), so it is built once per wasm instance and reused for as long as the catalog's
//! generation (the D1 row `flowmind_generation`, bumped by every write to `contexts`) and the
//! registry stay the same. A call reads the generation (one indexed D1 row) and rebuilds only when
//! it moved. The generation read is itself reused for [`DEFAULT_GENERATION_TTL_MS`]
//! (`FLOWMIND_GENERATION_TTL_MS`; 0 reads it on every call): a write made through another
//! instance is seen within that bound, and one made through this instance at once, since its
//! writes ([`bump`], [`record_use`]) forget the generation this instance last read.
//!
//! Running a workflow moves its context's `popularity` and `last_used_at` ([`record_use`]), which
//! the index does not depend on: it bumps a second counter in the same row, `usage_generation`, and
//! a call that sees only that one move re-reads those two columns into the catalog it has, keeping
//! the index.

use std::cell::RefCell;
use std::rc::Rc;

use crate::tools::strings;
use serde_json::{json, Map, Value};

use crate::engine::matcher::bm25::Params;
use crate::engine::matcher::{Entry, Matcher};
use crate::error::Result;
use crate::registry::{Registry, Statement, ToolContext};

/// The columns every catalog read selects.
pub const COLUMNS: &str =
    "uri, type, name, description, domain, tags, complexity, example_requests, \
     activation_condition, confidence_required, required_variables, optional_variables, \
     execution_preview, steps, popularity, last_used_at, created_at";

/// The six domains of the seed, in the order the docs list them.
pub const DOMAINS: [&str; 6] = [
    "technical",
    "creative",
    "business",
    "regulatory",
    "personal",
    "emergency",
];

/// One context with everything the tools show about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// `workflow://…`, `agent://…`, `pattern://…` or `tool://…`.
    pub uri: String,
    /// `workflow`, `agent`, `pattern` or `tool`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// One of [`DOMAINS`].
    pub domain: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// `simple`, `moderate`, `complex` or `expert`.
    pub complexity: String,
    /// Requests it is known to answer.
    pub examples: Vec<String>,
    /// When it should be activated, in words.
    pub activation_condition: String,
    /// The caller's confidence needed to run it without asking.
    pub confidence_required: f64,
    /// Variables it needs.
    pub required: Vec<String>,
    /// Variables it can use.
    pub optional: Vec<String>,
    /// What running it looks like (`type`, `estimated_steps`, `contexts_involved`,
    /// `stopping_condition`).
    pub preview: Value,
    /// A workflow's steps (`name`, `instruction`, `outputs`); `Null` for the others.
    pub steps: Value,
    /// How often it was used.
    pub popularity: i64,
    /// When it was last used (ISO 8601), if ever.
    pub last_used_at: Option<String>,
    /// When it was added.
    pub created_at: String,
}

/// A JSON column: D1 returns it as text.
fn json_column(row: &Value, name: &str) -> Value {
    match row.get(name) {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

fn text(row: &Value, name: &str) -> String {
    row.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Context {
    /// A context from a `contexts` row (JSON columns as text, as D1 returns them).
    pub fn from_row(row: &Value) -> Context {
        Context {
            uri: text(row, "uri"),
            kind: text(row, "type"),
            name: text(row, "name"),
            description: text(row, "description"),
            domain: text(row, "domain"),
            tags: strings(&json_column(row, "tags")),
            complexity: text(row, "complexity"),
            examples: strings(&json_column(row, "example_requests")),
            activation_condition: text(row, "activation_condition"),
            confidence_required: row
                .get("confidence_required")
                .and_then(Value::as_f64)
                .unwrap_or(0.5),
            required: strings(&json_column(row, "required_variables")),
            optional: strings(&json_column(row, "optional_variables")),
            preview: json_column(row, "execution_preview"),
            steps: json_column(row, "steps"),
            popularity: row.get("popularity").and_then(Value::as_i64).unwrap_or(0),
            last_used_at: row
                .get("last_used_at")
                .and_then(Value::as_str)
                .map(str::to_string),
            created_at: text(row, "created_at"),
        }
    }

    /// The `tool://` context of a registered tool: its schema's required and other properties are
    /// its variables; read-only tools are simple and need little confidence, tools that change
    /// things are moderate and need more (destructive ones the most).
    pub fn of_tool(tool: &crate::registry::Tool) -> Context {
        let def = tool.def;
        let schema = tool.input_schema();
        let required = strings(schema.get("required").unwrap_or(&Value::Null));
        let optional: Vec<String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.keys()
                    .filter(|k| !required.contains(k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let a = def.annotations;
        // What people say for it (schema/<toolset>/<tool>.context.json) leads; the registry's
        // description, written for a model calling the tool, follows.
        let text = super::tool_text::of(def.name).unwrap_or_default();
        let mut tags: Vec<String> = vec![def.toolset.to_string()];
        tags.extend(def.name.split(['_', '-']).map(str::to_string));
        tags.extend(text.synonyms);
        let description = if text.purpose.is_empty() {
            def.description.to_string()
        } else {
            format!("{} {}", text.purpose, def.description)
        };
        Context {
            uri: format!("tool://{}", def.name),
            kind: "tool".into(),
            name: def.title.to_string(),
            description,
            domain: tool_domain(def.toolset).to_string(),
            tags,
            complexity: if a.read_only { "simple" } else { "moderate" }.into(),
            examples: text.examples,
            activation_condition: format!(
                "The user's request is answered by calling {} directly.",
                def.name
            ),
            confidence_required: if a.read_only {
                0.5
            } else if a.destructive {
                0.85
            } else {
                0.7
            },
            required,
            optional,
            preview: json!({
                "type": "tool_call",
                "estimated_steps": "1",
                "contexts_involved": [],
                "stopping_condition": "The tool returns its result",
            }),
            steps: Value::Null,
            popularity: 0,
            last_used_at: None,
            created_at: String::new(),
        }
    }

    /// The context as the matcher indexes it (the same shape as the calibration set's entries).
    pub fn entry(&self) -> Entry {
        Entry {
            uri: self.uri.clone(),
            domain: self.domain.clone(),
            name: self.name.clone(),
            tags: self.tags.clone(),
            examples: self.examples.clone(),
            description: format!("{} {}", self.description, self.activation_condition),
            required: self.required.clone(),
            optional: self.optional.clone(),
        }
    }

    /// Every variable it takes, required first.
    pub fn variables(&self) -> impl Iterator<Item = &String> {
        self.required.iter().chain(self.optional.iter())
    }

    /// The call that runs this context with the `variables` the caller already extracted. A workflow's call
    /// carries the caller's `confidence` (their field_request `confidence_level`), so execute_workflow
    /// holds the run to the same confidence rules `activation.can_execute` reported; `None` when
    /// there is no request to take it from.
    pub fn next_action(&self, variables: &Map<String, Value>, confidence: Option<f64>) -> Value {
        let initial = crate::engine::sort::object(
            variables
                .iter()
                .filter(|(k, _)| self.variables().any(|v| v == *k) || k.as_str() == "urgency")
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        match self.uri.strip_prefix("tool://") {
            Some(tool) => {
                let params = crate::engine::sort::object(
                    initial
                        .into_iter()
                        .filter(|(k, _)| self.variables().any(|v| v == k)),
                );
                json!({ "tool": tool, "parameters": params })
            }
            None => {
                let mut parameters =
                    json!({ "workflow_uri": self.uri, "initial_variables": initial });
                if let Some(level) = confidence {
                    parameters["confidence_level"] = json!(level);
                }
                json!({ "tool": "execute_workflow", "parameters": parameters })
            }
        }
    }

    /// The context as `list_available_contexts` and `get_help` show it.
    pub fn summary(&self) -> Value {
        json!({
            "uri": self.uri,
            "type": self.kind,
            "name": self.name,
            "description": self.description,
            "domain": self.domain,
            "tags": self.tags,
            "complexity": self.complexity,
            "example_requests": self.examples,
            "activation_condition": self.activation_condition,
            "confidence_required": self.confidence_required,
            "variables": { "required": self.required, "optional": self.optional },
            "execution_preview": self.preview,
            "popularity": self.popularity,
            "last_used_at": self.last_used_at,
        })
    }
}

/// The domain a toolset's tools belong to: the company's data tools are business, the travel
/// assistant's are personal, the workflow machinery is technical.
fn tool_domain(toolset: &str) -> &'static str {
    match toolset {
        "hr" | "finance" | "sales" | "support" | "domain" => "business",
        "instructions" | "flights" | "calendar" => "personal",
        "templates" => "creative",
        _ => "technical",
    }
}

/// The searchable catalog of one generation.
#[derive(Debug)]
pub struct Catalog {
    /// The generation it was built from.
    pub generation: i64,
    /// Every context, in index order.
    pub contexts: Vec<Context>,
    /// The index over them (shared by the catalogs of one generation that differ only in usage).
    pub matcher: Rc<Matcher>,
    /// The contexts other than tools, grouped by type and complexity (shared like `matcher`).
    pub groups: Rc<Groups>,
}

/// The contexts of a catalog that are not tools, grouped by type and complexity: what the
/// filters of a search look at for them (the type filter, and a caller's level by complexity;
/// roles only ever hide tools). A search decides once per group instead of once per context, so
/// the filters cost the number of groups and tools, not the catalog's size, and never touch the
/// contexts themselves (with 10,000 of them, reading each one's type and URI costs more than the
/// search).
#[derive(Debug, Default)]
pub struct Groups {
    /// Each context's group, or [`Groups::TOOL`] for a tool, decided one by one.
    pub of: Vec<u16>,
    /// A context of each group, whose verdict is its group's.
    pub first: Vec<usize>,
    /// How many contexts each group has.
    pub size: Vec<usize>,
    /// The positions of the tools (and of anything whose URI says `tool://`).
    pub tools: Vec<usize>,
}

impl Groups {
    /// The group of a context decided on its own.
    pub const TOOL: u16 = u16::MAX;

    fn of(contexts: &[Context]) -> Groups {
        let mut g = Groups::default();
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for (i, c) in contexts.iter().enumerate() {
            let key = (c.kind.as_str(), c.complexity.as_str());
            let alone = c.kind == "tool" || c.uri.starts_with("tool://");
            let found = keys.iter().position(|k| *k == key);
            match found {
                // Types and complexities are a handful each; past u16::MAX - 1 groups (never,
                // with the CHECK constraints) a context is decided on its own.
                _ if alone => {
                    g.of.push(Groups::TOOL);
                    g.tools.push(i);
                }
                Some(k) => {
                    g.of.push(k as u16);
                    g.size[k] += 1;
                }
                None if keys.len() < usize::from(Groups::TOOL) => {
                    g.of.push(keys.len() as u16);
                    keys.push(key);
                    g.first.push(i);
                    g.size.push(1);
                }
                None => {
                    g.of.push(Groups::TOOL);
                    g.tools.push(i);
                }
            }
        }
        g
    }
}

impl Catalog {
    /// Indexes `contexts`.
    pub fn new(generation: i64, contexts: Vec<Context>) -> Catalog {
        Catalog::with_params(generation, contexts, Params::default())
    }

    /// Indexes `contexts` with ranking parameters `params` (fitting compares them).
    pub fn with_params(generation: i64, contexts: Vec<Context>, params: Params) -> Catalog {
        let entries = contexts.iter().map(Context::entry).collect();
        Catalog {
            generation,
            matcher: Rc::new(Matcher::new(entries, params)),
            groups: Rc::new(Groups::of(&contexts)),
            contexts,
        }
    }

    /// The same catalog with each context's `popularity` and `last_used_at` taken from `rows`
    /// (`uri`, `popularity`, `last_used_at`); contexts without a row keep theirs.
    pub fn with_usage(&self, rows: &[Value]) -> Catalog {
        let usage: std::collections::HashMap<&str, &Value> = rows
            .iter()
            .filter_map(|r| Some((r.get("uri")?.as_str()?, r)))
            .collect();
        let contexts = self
            .contexts
            .iter()
            .map(|c| {
                let mut c = c.clone();
                if let Some(r) = usage.get(c.uri.as_str()) {
                    c.popularity = r.get("popularity").and_then(Value::as_i64).unwrap_or(0);
                    c.last_used_at = r
                        .get("last_used_at")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
                c
            })
            .collect();
        Catalog {
            generation: self.generation,
            contexts,
            matcher: self.matcher.clone(),
            groups: self.groups.clone(),
        }
    }

    /// The context with `uri`, if any.
    pub fn get(&self, uri: &str) -> Option<&Context> {
        self.contexts.iter().find(|c| c.uri == uri)
    }
}

/// The catalog an instance keeps: built from `generation`, with the registry's `tools`, and the
/// usage of `usage`.
struct Built {
    generation: i64,
    usage: i64,
    tools: usize,
    catalog: Rc<Catalog>,
}

thread_local! {
    /// The last catalog built in this instance.
    static BUILT: RefCell<Option<Built>> = const { RefCell::new(None) };
}

/// How long, in milliseconds, an instance reuses the catalog generation it read when
/// `FLOWMIND_GENERATION_TTL_MS` does not say: the longest a write made through another instance
/// stays unseen. A second is short next to how often the catalog changes (a composed workflow
/// saved, a workflow run counted) and saves the D1 read on every call of a busy instance.
pub const DEFAULT_GENERATION_TTL_MS: u32 = 1000;

/// The generation and usage generation this instance read last, and when.
struct Seen {
    generation: i64,
    usage: i64,
    at_ms: f64,
}

thread_local! {
    /// The last generation read in this instance.
    static SEEN: RefCell<Option<Seen>> = const { RefCell::new(None) };
}

/// Makes this instance's next call read the generation from D1: after its own writes.
fn forget_generation() {
    SEEN.with(|s| *s.borrow_mut() = None);
}

/// The catalog's current generation and usage generation: as this instance read them less than
/// `FLOWMIND_GENERATION_TTL_MS` ago, else from D1.
pub async fn generation(ctx: &dyn ToolContext) -> Result<(i64, i64)> {
    let now = crate::clock::now_ms();
    // Parsed once per isolate with the other settings (`Config`).
    let ttl = f64::from(ctx.platform().generation_ttl_ms());
    let recent = SEEN.with(|s| {
        s.borrow()
            .as_ref()
            .filter(|s| now >= s.at_ms && now - s.at_ms < ttl)
            .map(|s| (s.generation, s.usage))
    });
    if let Some(seen) = recent {
        return Ok(seen);
    }
    let rows = ctx
        .query(
            "SELECT generation, usage_generation FROM flowmind_generation WHERE id = 1",
            vec![],
        )
        .await?;
    let get = |k: &str| {
        rows.first()
            .and_then(|r| r.get(k))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let (generation, usage) = (get("generation"), get("usage_generation"));
    SEEN.with(|s| {
        *s.borrow_mut() = Some(Seen {
            generation,
            usage,
            at_ms: now,
        })
    });
    Ok((generation, usage))
}

/// Counts a run of context `uri`: its `popularity` goes up by one and `last_used_at` becomes now,
/// in one batch with the usage generation, so this instance's catalog shows it at its next call
/// and every other instance's within `FLOWMIND_GENERATION_TTL_MS`.
pub async fn record_use(ctx: &dyn ToolContext, uri: &str) -> Result<()> {
    ctx.platform()
        .batch(vec![
            Statement::new(
                "UPDATE contexts SET popularity = popularity + 1,
                   last_used_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
                 WHERE uri = ?1",
                vec![json!(uri)],
            ),
            Statement::new(
                "UPDATE flowmind_generation SET usage_generation = usage_generation + 1 WHERE id = 1",
                vec![],
            ),
        ])
        .await?;
    forget_generation();
    Ok(())
}

/// Makes every instance rebuild its index at its next call (this one at once, the others within
/// `FLOWMIND_GENERATION_TTL_MS`): after any write to `contexts`.
pub async fn bump(ctx: &dyn ToolContext) -> Result<()> {
    ctx.query(
        "UPDATE flowmind_generation SET generation = generation + 1 WHERE id = 1",
        vec![],
    )
    .await?;
    forget_generation();
    Ok(())
}

/// The catalog of the current generation, and whether its index came from this instance's cache
/// (usage figures are re-read whenever they moved).
pub async fn load(ctx: &dyn ToolContext) -> Result<(Rc<Catalog>, bool)> {
    let (generation, usage) = generation(ctx).await?;
    let registry = ctx.platform().registry();
    let tools = registry.len();
    let cached = BUILT.with(|b| {
        b.borrow()
            .as_ref()
            .filter(|b| b.generation == generation && b.tools == tools)
            .map(|b| (b.usage, b.catalog.clone()))
    });
    let catalog = match cached {
        Some((u, c)) if u == usage => return Ok((c, true)),
        Some((_, c)) => {
            let rows = ctx
                .query("SELECT uri, popularity, last_used_at FROM contexts", vec![])
                .await?;
            let catalog = Rc::new(c.with_usage(&rows));
            keep(generation, usage, tools, &catalog);
            return Ok((catalog, true));
        }
        None => {
            let rows = ctx
                .query(
                    &format!("SELECT {COLUMNS} FROM contexts ORDER BY uri"),
                    vec![],
                )
                .await?;
            Rc::new(build(generation, &rows, registry))
        }
    };
    keep(generation, usage, tools, &catalog);
    Ok((catalog, false))
}

fn keep(generation: i64, usage: i64, tools: usize, catalog: &Rc<Catalog>) {
    BUILT.with(|b| {
        *b.borrow_mut() = Some(Built {
            generation,
            usage,
            tools,
            catalog: catalog.clone(),
        })
    });
}

/// The catalog of `rows` (from D1) and the registry's tools. Stored `tool://` rows are skipped:
/// the registry is the truth about tools.
pub fn build(generation: i64, rows: &[Value], registry: &Registry) -> Catalog {
    let mut contexts: Vec<Context> = rows
        .iter()
        .map(Context::from_row)
        .filter(|c| c.kind != "tool")
        .collect();
    contexts.extend(registry.tools().map(Context::of_tool));
    Catalog::new(generation, contexts)
}
