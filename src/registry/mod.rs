//! The tool registry: every tool's metadata, JSON Schemas and handler, listed and looked up in one place.
//!
//! A tool is declared once, as a [`ToolDef`] in its toolset's folder under `src/tools/`. Its schemas
//! live in `schema/<toolset>/<tool>.{input,output}.json` and are compiled here once per wasm instance;
//! the same compiled schemas validate calls and are what `tools/list` shows. The registry id
//! (`toolset::tool-name`) is derived from the toolset and the MCP name, never written down twice.
//!
//! Also here, because toolsets use them and the server builds on them: what a handler sees while it
//! runs (the traits in `context`, and `call::CallContext`, their one implementation), the executor,
//! the result cache's keys and the rate limits' arithmetic.

pub mod cache;
pub mod call;
mod context;
mod error;
mod executor;
pub mod limits;
pub mod per_tool;
pub mod redact;
pub mod task;
mod validate;

use std::collections::HashMap;

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

pub use cache::CachePolicy;
pub use context::{
    Caller, EnvServices, Handler, Heartbeat, Inbound, JobMode, Outbound, Platform, Statement,
    ToolContext, ToolOutput,
};
pub use error::{ToolError, ToolResult};
pub use executor::{execute, refused, render, result_of, CallOutcome};
use redact::Sensitive;
#[cfg(test)]
pub use validate::assert_args_match;
pub use validate::typed;
use validate::Validator;

use crate::error::{Error, Result};

/// Behaviour hints shown to clients (`ToolAnnotations`). Set them truthfully: clients use them to
/// decide what needs a human's confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not change anything.
    pub read_only: bool,
    /// The tool may destroy or overwrite data (only meaningful when not read-only).
    pub destructive: bool,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool reaches systems outside this server (external APIs).
    pub open_world: bool,
}

impl Annotations {
    /// A tool that only reads this server's own data.
    pub const READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
}

/// A tool as a toolset declares it.
#[derive(Debug)]
pub struct ToolDef {
    /// The toolset's folder name under `src/tools/`.
    pub toolset: &'static str,
    /// MCP name (`[A-Za-z0-9_.-]`, at most 64 characters), unique across the server.
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// What the tool does and when to use it; clients show this to the model.
    pub description: &'static str,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The input JSON Schema text (from `schema/`).
    pub input_schema: &'static str,
    /// The output JSON Schema text, for tools that return `structuredContent`.
    pub output_schema: Option<&'static str>,
    /// How long one call may run before it is abandoned with a timeout error.
    pub timeout_ms: u32,
    /// Roles that may use the tool (any one of them); empty: anyone, anonymous callers included.
    /// Callers without one of them neither see the tool in `tools/list` nor can call it.
    pub roles: &'static [&'static str],
    /// The code that runs the tool.
    pub handler: Handler,
    /// How the executor caches the tool's results (`cache::CachePolicy`); `None`: never cached.
    /// Only read-only tools may be cached.
    pub cache: Option<CachePolicy>,
    /// How the tool answers a call refused outside its handler; `None`: in plain text, and a
    /// caller whose roles lack it is told "unknown tool".
    pub dialect: Option<&'static Dialect>,
    /// Carries out the change a call asked the user to confirm, once they have (`src/confirm/`);
    /// `None`: the tool changes what it changes itself. A tool with one changes nothing when
    /// called, so whoever runs it for a model (the chat) need not ask the user first too.
    pub confirmed: Option<Confirmed>,
    /// What the tool keeps in an MCP session, which 2026-07-28 requests do not have.
    pub state: SessionState,
    /// Refused calls lengthen the wait (seed 001: `field_request`'s `progressive_backoff`; see
    /// `limits::Bucket::take_or_owe`).
    pub progressive_backoff: bool,
    /// The rate limit the product gives the tool (seed 001's table) where `RATE_LIMITS` neither
    /// names it nor has a `*` entry; `None`: the deployment's default (`limits::RateLimits`).
    pub rate_limit: Option<limits::Limit>,
    /// The level of FlowMind's progressive authorization (seed 001) from which a caller sees and
    /// may call the tool; `None`: the tool is not gated (`server::levels` applies it).
    pub level: Option<Level>,
    /// Whether and how a call runs as an MCP task for clients that declared tasks.
    pub task: task::TaskSupport,
    /// The MCP server name seed 003 gives the toolset where it is not `<toolset>-mcp`
    /// (`google-calendar-mcp`); a chain step may name the tool as `<server>::<tool-name>`.
    pub seed_server: Option<&'static str>,
    /// Whether a call with these arguments may change anything, for a tool that is not
    /// read-only but writes on some calls only (`process_template` records a processing only
    /// with `include_metadata`); `None`: every call of a tool that is not read-only may write.
    /// A 2026-07-28 call that cannot write is not deduplicated: its retry runs again, which is
    /// what a read does, and it saves the idempotency key's two D1 round trips.
    pub writes: Option<fn(&Value) -> bool>,
}

/// How far a caller has progressed in FlowMind's progressive authorization (seed 001); ordered,
/// so progression is a comparison. The rules are `tools::flowmind::levels`'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// field_request and get_help.
    Beginner,
    /// Adds execute_workflow and evaluate_semantic_condition.
    Intermediate,
    /// Every FlowMind tool.
    Advanced,
}

impl Level {
    /// The seed's name of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Beginner => "beginner",
            Level::Intermediate => "intermediate",
            Level::Advanced => "advanced",
        }
    }

    /// The seed's `max_complexity` of the level.
    pub fn max_complexity(self) -> &'static str {
        match self {
            Level::Beginner => "simple",
            Level::Intermediate => "moderate",
            Level::Advanced => "expert",
        }
    }

    /// The level after this one.
    pub fn next(self) -> Option<Level> {
        match self {
            Level::Beginner => Some(Level::Intermediate),
            Level::Intermediate => Some(Level::Advanced),
            Level::Advanced => None,
        }
    }
}

/// What a tool keeps in an MCP session. The 2026-07-28 lane has no sessions: such a tool runs in
/// a Durable Object of its own for a signed-in caller (`stateless::runs`) and is refused to, and
/// not listed for, anonymous callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Nothing: the tool runs alike with or without a session.
    None,
    /// State of the caller's (the travel assistant's mode): the caller's own object keeps it.
    Caller,
    /// A chain execution, under the session's job leases.
    Run {
        /// Each call starts a run, in a run object of its own.
        starts: bool,
        /// The call runs chain steps: answered as a stream at once, so closing it cancels.
        drives: bool,
        /// The run can pause at a step that asks the client's model.
        pauses: bool,
        /// The argument naming the execution the call addresses (its run object's).
        addressed_by: Option<&'static str>,
    },
}

impl SessionState {
    /// A run tool that only addresses an execution by `argument`.
    pub const fn addresses(argument: &'static str) -> SessionState {
        SessionState::Run {
            starts: false,
            drives: false,
            pauses: false,
            addressed_by: Some(argument),
        }
    }
}

/// How a toolset answers calls that end in an error, when not in plain text (the domain toolsets
/// answer every call in seed 002's union, refusals included).
#[derive(Debug)]
pub struct Dialect {
    /// The answer to a call that ended in a [`ToolError`], whether its handler returned it or the
    /// executor refused the call around it (arguments that fail the input schema, a rate limit, a
    /// timeout); sent with `isError: true` instead of the error's text.
    pub render: fn(&ToolDef, &ToolError) -> ToolOutput,
    /// The answer to a caller whose roles lack the tool: it stays out of their `tools/list`, but a
    /// direct call is told why instead of "unknown tool".
    pub forbidden: fn(&ToolDef, &Caller) -> ToolOutput,
}

/// Carries out a change the user confirmed: takes the context, the arguments of the call that
/// asked and the details shown to the user; answers with the JSON the user's decision gets, whose
/// `status` is `"success"` when the change was made.
pub type Confirmed =
    for<'a> fn(&'a dyn ToolContext, &'a Value, &'a Value) -> LocalBoxFuture<'a, Value>;

/// The handler of [`ToolDef::DEFAULTS`]: a declaration that forgot its own is refused, not run.
fn no_handler(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async {
        Err(ToolError::Internal(Error::Internal(
            "this tool declares no handler".into(),
        )))
    })
}

impl ToolDef {
    /// What a declaration leaves out (`..ToolDef::DEFAULTS`): no output schema, 10 s timeout,
    /// never cached, refusals in plain text, no confirmation asked, no session state, no progressive
    /// backoff, no rate limit of its own, no FlowMind level, the seed's usual server name; the hints MCP assumes when a
    /// server gives none (may write and destroy, not idempotent, open world). Every declaration
    /// names its toolset, name, title, description, input schema, roles and handler.
    pub const DEFAULTS: ToolDef = ToolDef {
        toolset: "",
        name: "",
        title: "",
        description: "",
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        },
        input_schema: "",
        output_schema: None,
        timeout_ms: 10_000,
        roles: &[],
        handler: no_handler,
        cache: None,
        dialect: None,
        confirmed: None,
        state: SessionState::None,
        progressive_backoff: false,
        rate_limit: None,
        level: None,
        task: task::TaskSupport::Forbidden,
        seed_server: None,
        writes: None,
    };

    /// Whether a call of this tool with `args` may change anything ([`ToolDef::writes`]).
    pub fn may_write(&self, args: &Value) -> bool {
        !self.annotations.read_only && self.writes.is_none_or(|writes| writes(args))
    }

    /// Whether a call asks the user to confirm its change and waits for their decision
    /// ([`ToolDef::confirmed`]).
    pub const fn asks_user(&self) -> bool {
        self.confirmed.is_some()
    }

    /// Whether the tool keeps state in an MCP session ([`SessionState`]).
    pub fn keeps_session_state(&self) -> bool {
        self.state != SessionState::None
    }

    /// The registry id, `toolset::tool-name`.
    pub fn id(&self) -> String {
        format!("{}::{}", self.toolset, self.name.replace('_', "-"))
    }

    /// Whether `id` is [`ToolDef::id`], compared without building it (lookups by id try every
    /// tool).
    pub fn is_id(&self, id: &str) -> bool {
        id.strip_prefix(self.toolset)
            .and_then(|rest| rest.strip_prefix("::"))
            .is_some_and(|tool| self.is_dashed_name(tool))
    }

    /// Whether `tool` is the MCP name with `-` for each `_` (`tool-name`, as ids write it).
    fn is_dashed_name(&self, tool: &str) -> bool {
        self.name.len() == tool.len()
            && self
                .name
                .bytes()
                .zip(tool.bytes())
                .all(|(n, t)| if n == b'_' { t == b'-' } else { n == t })
    }
}

/// A registered tool with its compiled schemas and its `tools/list` entry.
pub struct Tool {
    /// The declaration.
    pub def: &'static ToolDef,
    listing: Value,
    input: Validator,
    output: Option<Validator>,
    /// The input schema says `"x-validated-by": "tool"`: the handler checks its own arguments.
    validates_itself: bool,
    /// What the schemas mark `x-sensitive`, hidden from events and logs.
    sensitive: Sensitive,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("id", &self.def.id())
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// The input JSON Schema as `tools/list` shows it.
    pub fn input_schema(&self) -> &Value {
        &self.listing["inputSchema"]
    }

    /// Checks call arguments against the input schema; the error names each failing field and rule.
    pub fn check_input(&self, args: &Value) -> ToolResult<()> {
        self.input.check(args).map_err(|problems| ToolError::Invalid {
            message: format!(
                "Invalid arguments for tool {}: {}. Fix the arguments to match the tool's inputSchema and call again.",
                self.def.name,
                problems.join("; ")
            ),
        })
    }

    /// Every way `args` fails the input schema, one line per failing rule (empty when valid).
    pub fn input_problems(&self, args: &Value) -> Vec<String> {
        self.input.check(args).err().unwrap_or_default()
    }

    /// Whether the handler validates its own arguments: its input schema carries
    /// `"x-validated-by": "tool"`. The executor then passes arguments through unchecked, so the
    /// tool can answer a bad call in its own format (FlowMind's teaching errors, seed 001), and
    /// must call [`Tool::input_problems`] itself.
    pub fn validates_itself(&self) -> bool {
        self.validates_itself
    }

    /// The arguments as events may show them: every top-level argument the input schema marks
    /// `"x-sensitive": true` (a new salary, say) is replaced by `*** (Hidden)`.
    pub fn redact(&self, args: &Value) -> Value {
        self.sensitive.redact_args(args)
    }

    /// A result of a call with `args` as events, logs and dashboards may show it: a
    /// `CallToolResult`, its structured content, a chain step's output or an error text (any
    /// JSON). Every property the output schema marks `"x-sensitive": true` is hidden wherever it
    /// appears, and the hidden values and the call's sensitive arguments are cut out of every
    /// string (`redact` module). The caller's own result is not changed: only what others see.
    pub fn redact_output(&self, args: &Value, result: &Value) -> Value {
        self.sensitive.redact_output(args, result)
    }

    /// Whether the schemas mark anything sensitive (else both redactions return their input).
    pub fn has_sensitive(&self) -> bool {
        !self.sensitive.is_empty()
    }

    /// Checks a handler's structured result against the output schema. A failure is our bug.
    pub fn check_output(&self, out: &Value) -> Result<()> {
        match &self.output {
            None => Ok(()),
            Some(v) => v.check(out).map_err(|problems| {
                Error::Internal(format!(
                    "tool {} broke its outputSchema: {}",
                    self.def.id(),
                    problems.join("; ")
                ))
            }),
        }
    }

    /// The `tools/list` entry.
    pub fn listing(&self) -> &Value {
        &self.listing
    }

    /// Whether the tool declares an output schema.
    pub fn has_output_schema(&self) -> bool {
        self.output.is_some()
    }
}

/// All tools of one deployment, in a stable order (by name).
#[derive(Debug)]
pub struct Registry {
    tools: Vec<Tool>,
    by_name: HashMap<&'static str, usize>,
}

/// Names the conformance suite accepts (stricter than the specification's 128).
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

impl Registry {
    /// Compiles every tool's schemas. Fails on a duplicate or malformed name or a broken schema, so a
    /// bad declaration is caught by `cargo test`, never by a client.
    pub fn new(defs: impl IntoIterator<Item = &'static ToolDef>) -> Result<Self> {
        let mut tools: Vec<Tool> = Vec::new();
        for def in defs {
            if !valid_tool_name(def.name) {
                return Err(Error::Internal(format!(
                    "tool name {:?} is not 1-64 of [A-Za-z0-9_.-]",
                    def.name
                )));
            }
            if let Some(policy) = &def.cache {
                if !def.annotations.read_only {
                    return Err(Error::Internal(format!(
                        "{}: only read-only tools may be cached (a hit skips the handler and its effects)",
                        def.id()
                    )));
                }
                if policy.ttl_secs < cache::MIN_TTL_SECS {
                    return Err(Error::Internal(format!(
                        "{}: cache ttl_secs must be at least {} (KV's shortest expiration)",
                        def.id(),
                        cache::MIN_TTL_SECS
                    )));
                }
            }
            let input_json = parse_schema(def, "input", def.input_schema)?;
            if input_json.get("type").and_then(Value::as_str) != Some("object") {
                return Err(Error::Internal(format!(
                    "{}: inputSchema must have type object",
                    def.id()
                )));
            }
            let output_json = def
                .output_schema
                .map(|s| parse_schema(def, "output", s))
                .transpose()?;
            let mut listing = Map::new();
            listing.insert("name".into(), json!(def.name));
            listing.insert("title".into(), json!(def.title));
            listing.insert("description".into(), json!(def.description));
            listing.insert("inputSchema".into(), input_json.clone());
            if let Some(o) = &output_json {
                listing.insert("outputSchema".into(), o.clone());
            }
            let a = def.annotations;
            listing.insert(
                "annotations".into(),
                json!({
                    "title": def.title,
                    "readOnlyHint": a.read_only,
                    "destructiveHint": a.destructive,
                    "idempotentHint": a.idempotent,
                    "openWorldHint": a.open_world,
                }),
            );
            let validates_itself =
                input_json.get("x-validated-by").and_then(Value::as_str) == Some("tool");
            let sensitive = Sensitive::from_schemas(&input_json, output_json.as_ref());
            tools.push(Tool {
                def,
                validates_itself,
                sensitive,
                listing: Value::Object(listing),
                input: Validator::new(&def.id(), input_json)?,
                output: output_json
                    .map(|o| Validator::new(&def.id(), o))
                    .transpose()?,
            });
        }
        crate::engine::sort::sort_by(&mut tools, |a, b| a.def.name.cmp(b.def.name));
        let mut by_name = HashMap::new();
        for (i, t) in tools.iter().enumerate() {
            if by_name.insert(t.def.name, i).is_some() {
                return Err(Error::Internal(format!(
                    "tool name {:?} is registered twice",
                    t.def.name
                )));
            }
        }
        Ok(Registry { tools, by_name })
    }

    /// Finds a tool by its MCP name, or by its id as seed 003 writes it, with a server name
    /// (`flights-mcp::search-flights`).
    pub fn get(&self, name: &str) -> Option<&Tool> {
        match self.by_name.get(name) {
            Some(&i) => Some(&self.tools[i]),
            None => self.seed(name),
        }
    }

    /// Finds a tool by its registry id (`toolset::tool-name`) or its seed id with a server name.
    pub fn by_id(&self, id: &str) -> Option<&Tool> {
        self.registry_id(id).or_else(|| self.seed(id))
    }

    fn registry_id(&self, id: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.def.is_id(id))
    }

    /// The tool of an id written as seed 003 writes them, with a server name for the toolset
    /// (`google-calendar-mcp::list-events`, `templates-mcp::process-template`).
    fn seed(&self, id: &str) -> Option<&Tool> {
        let (server, tool) = id.split_once("::")?;
        self.tools.iter().find(|t| {
            let d = t.def;
            (d.seed_server == Some(server) || server.strip_suffix("-mcp") == Some(d.toolset))
                && d.is_dashed_name(tool)
        })
    }

    /// Finds a tool by MCP name that `caller` may use: a tool the caller's roles do not allow is
    /// as absent as an unknown one.
    pub fn get_for(&self, name: &str, caller: &Caller) -> Option<&Tool> {
        self.get(name).filter(|t| caller.has_any(t.def.roles))
    }

    /// The answer to `caller` calling `name`, a tool their roles lack, if the tool's [`Dialect`]
    /// says why; `None` for a tool that does not (it is as unknown as a missing one).
    pub fn forbidden(&self, name: &str, caller: &Caller) -> Option<Value> {
        let tool = self.get(name)?;
        let dialect = tool.def.dialect?;
        Some(refused(tool, (dialect.forbidden)(tool.def, caller)))
    }

    /// Every tool, by name.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// One page of `tools/list`: the listings and the cursor of the next page, if any.
    ///
    /// A cursor names the last tool of the previous page, so pages stay stable when the server's
    /// tool set grows between calls. A cursor we did not issue is `-32602`.
    /// Only the tools `caller` may use are listed.
    pub fn page(
        &self,
        cursor: Option<&str>,
        page_size: usize,
        caller: &Caller,
    ) -> Result<(Vec<Value>, Option<String>)> {
        self.page_where(cursor, page_size, caller, &|_| true)
    }

    /// The `tools/list` result for `params` in either era: the page after `params.cursor` of the
    /// tools `caller`'s roles allow that `keep` also accepts, with `nextCursor` unless it is the
    /// last.
    pub fn tools_list(
        &self,
        params: &Map<String, Value>,
        page_size: usize,
        caller: &Caller,
        keep: &dyn Fn(&Tool) -> bool,
    ) -> Result<Value> {
        let cursor = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.as_str()),
            Some(_) => {
                return Err(Error::InvalidParams(
                    "Invalid params: cursor must be a string".into(),
                ))
            }
        };
        let (tools, next) = self.page_where(cursor, page_size, caller, keep)?;
        let mut result = json!({ "tools": tools });
        if let Some(n) = next {
            result["nextCursor"] = json!(n);
        }
        Ok(result)
    }

    /// [`Registry::page`] of only the tools `keep` also accepts (beyond the caller's roles).
    pub fn page_where(
        &self,
        cursor: Option<&str>,
        page_size: usize,
        caller: &Caller,
        keep: &dyn Fn(&Tool) -> bool,
    ) -> Result<(Vec<Value>, Option<String>)> {
        let start = match cursor {
            None => 0,
            Some(c) => {
                let name = decode_cursor(c).ok_or_else(|| {
                    Error::InvalidParams(format!(
                        "Invalid params: cursor {c:?} was not issued by this server; call tools/list without a cursor to start again"
                    ))
                })?;
                self.tools.partition_point(|t| t.def.name <= name.as_str())
            }
        };
        let visible: Vec<&Tool> = self.tools[start..]
            .iter()
            .filter(|t| caller.has_any(t.def.roles) && keep(t))
            .collect();
        let page_size = page_size.max(1);
        let end = page_size.min(visible.len());
        let items = visible[..end].iter().map(|t| t.listing.clone()).collect();
        let next = (end < visible.len()).then(|| encode_cursor(visible[end - 1].def.name));
        Ok((items, next))
    }
}

fn parse_schema(def: &ToolDef, which: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text)
        .map_err(|e| Error::Internal(format!("{}: {which} schema is not JSON: {e}", def.id())))
}

const CURSOR_PREFIX: &str = "tools:v1:";

fn encode_cursor(last_name: &str) -> String {
    format!("{CURSOR_PREFIX}{last_name}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_cursor(cursor: &str) -> Option<String> {
    if cursor.len() % 2 != 0 || !cursor.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&cursor[i..i + 2], 16).ok())
        .collect();
    let text = String::from_utf8(bytes?).ok()?;
    let name = text.strip_prefix(CURSOR_PREFIX)?;
    valid_tool_name(name).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools;

    fn registry() -> Registry {
        Registry::new(tools::catalog(tools::Catalog::Conformance))
            .expect("all declared tools compile")
    }

    #[test]
    fn every_tool_has_a_valid_listing_and_a_derived_id() {
        let r = registry();
        assert!(r.len() >= 5);
        for name in [
            "switch_mode",
            "get_instruction_set",
            "process_template",
            "create_chain",
            "test_simple_text",
        ] {
            let t = r.get(name).expect(name);
            assert_eq!(r.by_id(&t.def.id()).map(|t| t.def.name), Some(name));
            assert_eq!(t.listing["inputSchema"]["type"], "object");
        }
        assert_eq!(
            r.get("switch_mode").unwrap().def.id(),
            "instructions::switch-mode"
        );
    }

    #[test]
    fn an_id_is_recognised_without_being_built() {
        let r = registry();
        for t in r.tools() {
            let id = t.def.id();
            assert!(t.def.is_id(&id), "{id}");
            assert!(!t.def.is_id(&format!("{id}x")), "{id}x");
            assert!(!t.def.is_id(&id[..id.len() - 1]), "{id} shortened");
            assert!(!t.def.is_id(&format!("x{id}")), "x{id}");
            if t.def.name.contains('_') {
                let underscored = format!("{}::{}", t.def.toolset, t.def.name);
                assert!(!t.def.is_id(&underscored), "{underscored}");
            }
        }
        assert_eq!(
            r.get("templates-mcp::process-template").map(|t| t.def.name),
            Some("process_template")
        );
        assert!(r.get("templates-mcp::process_template").is_none());
    }

    #[test]
    fn pages_cover_every_tool_once_in_order() {
        let r = registry();
        let everyone = Caller {
            user: Some("E1".into()),
            roles: vec![
                "executive".into(),
                "manager".into(),
                "hr-write".into(),
                "calendar-read".into(),
            ],
        };
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (items, next) = r.page(cursor.as_deref(), 2, &everyone).unwrap();
            assert!(items.len() <= 2);
            seen.extend(
                items
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_string()),
            );
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(seen, sorted);
        assert_eq!(seen.len(), r.len());
    }

    #[test]
    fn foreign_cursors_are_invalid_params() {
        let r = registry();
        for c in ["", "zz", "abc", &encode_cursor("no such/tool!")] {
            if c.is_empty() {
                continue;
            }
            assert_eq!(
                r.page(Some(c), 2, &Caller::anonymous())
                    .unwrap_err()
                    .rpc_code(),
                -32602,
                "{c}"
            );
        }
    }

    #[test]
    fn a_schema_may_leave_validation_to_its_tool() {
        let r = registry();
        let fr = r.get("field_request").unwrap();
        assert!(fr.validates_itself());
        assert!(!r.get("switch_mode").unwrap().validates_itself());
        let problems = fr.input_problems(&json!({"query": "short"}));
        assert!(
            problems.iter().any(|p| p.starts_with("at /query")),
            "{problems:?}"
        );
        assert!(fr
            .input_problems(&json!({"query": "a long enough query", "confidence_level": 0.5}))
            .is_empty());
    }

    #[test]
    fn bad_arguments_name_the_field_and_the_rule() {
        let r = registry();
        let t = r.get("switch_mode").unwrap();
        let e = t.check_input(&json!({"mode": "desktop-mode"})).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("/mode"), "{msg}");
        assert!(msg.contains("interactive-mode"), "{msg}");
        let e = t
            .check_input(&json!({"mode": "mobile-mode", "extra": 1}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("extra"), "{e}");
        assert!(t.check_input(&json!({"mode": "mobile-mode"})).is_ok());
    }

    fn nothing(_: &dyn ToolContext, _: Value) -> futures::future::LocalBoxFuture<'_, ToolResult> {
        Box::pin(async { Ok(ToolOutput::Content(vec![])) })
    }

    const fn restricted(name: &'static str, roles: &'static [&'static str]) -> ToolDef {
        ToolDef {
            toolset: "test",
            name,
            title: name,
            description: "a test tool",
            annotations: Annotations::READ_ONLY,
            input_schema: r#"{"type":"object"}"#,
            timeout_ms: 1000,
            roles,
            handler: nothing,
            ..ToolDef::DEFAULTS
        }
    }

    #[test]
    fn only_read_only_tools_may_be_cached_and_not_below_kv_minimum() {
        static WRITER: ToolDef = ToolDef {
            annotations: Annotations {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            cache: Some(CachePolicy::SHARED),
            ..restricted("writer", &[])
        };
        static SHORT: ToolDef = ToolDef {
            cache: Some(CachePolicy {
                ttl_secs: 59,
                ..CachePolicy::SHARED
            }),
            ..restricted("short", &[])
        };
        let e = Registry::new([&WRITER]).unwrap_err().to_string();
        assert!(e.contains("only read-only tools may be cached"), "{e}");
        let e = Registry::new([&SHORT]).unwrap_err().to_string();
        assert!(e.contains("at least 60"), "{e}");
        let ok = ToolDef {
            cache: Some(CachePolicy::SHARED),
            ..restricted("fine", &[])
        };
        let ok: &'static ToolDef = Box::leak(Box::new(ok));
        assert!(Registry::new([ok]).is_ok());
    }

    static RESTRICTED: [ToolDef; 4] = [
        restricted("a_open", &[]),
        restricted("b_hr", &["hr-read", "executive"]),
        restricted("c_sales", &["sales-read", "executive"]),
        restricted("d_open", &[]),
    ];

    #[test]
    fn callers_see_and_get_only_the_tools_their_roles_allow() {
        let r = Registry::new(RESTRICTED.iter()).unwrap();
        let names = |caller: &Caller| -> Vec<String> {
            let mut all = Vec::new();
            let mut cursor = None;
            loop {
                let (items, next) = r.page(cursor.as_deref(), 1, caller).unwrap();
                all.extend(
                    items
                        .iter()
                        .map(|t| t["name"].as_str().unwrap().to_string()),
                );
                match next {
                    Some(c) => cursor = Some(c),
                    None => return all,
                }
            }
        };
        let who = |roles: &[&str]| Caller {
            user: Some("E1".into()),
            roles: roles.iter().map(|r| r.to_string()).collect(),
        };
        assert_eq!(names(&Caller::anonymous()), vec!["a_open", "d_open"]);
        assert_eq!(names(&who(&["hr-read"])), vec!["a_open", "b_hr", "d_open"]);
        assert_eq!(
            names(&who(&["executive"])),
            vec!["a_open", "b_hr", "c_sales", "d_open"]
        );
        assert!(r.get_for("b_hr", &who(&["sales-read"])).is_none());
        assert!(r.get_for("c_sales", &who(&["sales-read"])).is_some());
        assert!(r.get_for("a_open", &Caller::anonymous()).is_some());
    }
}
