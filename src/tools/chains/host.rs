//! How chain steps run on this server: the [`StepHost`] the runner drives during `execute_chain`.
//!
//! | step type | what it does |
//! | --- | --- |
//! | `template_processing` | renders the stored template `template_id` with the chain's variables; the text becomes the first output variable |
//! | `data_transformation`, `conditional_logic` | renders `input_template`; with one output variable, the result (parsed as JSON when it is JSON); with several, the result must be a JSON object holding them |
//! | `instruction_set` | asks a model with the instruction set as system prompt and the rendered input: the client's (MCP sampling) when it declared sampling, else the configured model provider (`MODEL_PROVIDER_URL`); the reply must be a JSON object with the output variables. With neither, a tracked run pauses (`awaiting_input`) with the prompt until the client supplies the outputs (`resume_chain`). A step whose `ask` is `client` never goes to the model provider (the client's model or a pause); one whose `ask` is `explicit` always pauses (FlowMind's approvals) |
//! | `external_api` | calls the tool `tool` of this server (MCP name or registry id; never a `chains` tool) with the rendered `input_template` as its arguments (a JSON object; none → `{}`). One output variable gets the tool's `structuredContent`, or its text when it has none; several are picked from the `structuredContent` object. A tool error fails the step: a timeout or unavailable service is transient (`timeout`, `unavailable`), anything else is not retried |
//! | `database_operation` | applies `operation.action` (`create`, `update`, `delete`, `get`) to one record of the collection `operation.collection` in D1. The rendered `input_template` is a JSON object: `id` names the record (a create without one gets `rec-<32 hex>`), the other fields are its data (`update` merges them into the record, top level only; `delete` and `get` ignore them). The first output variable gets the record, `{id, ...fields}` (for `delete`, as it was) |
//!
//! **Rights.** Every step that reaches data acts as `guard::step_caller`: the roles both the chain's
//! author and its runner hold, decided again at each attempt, in a `CallContext::within` the chain
//! call's (its logs and questions go to that call; it reports no progress of its own); FlowMind tools meet the level gate a
//! direct call meets. Events show nothing a step's tool marks `x-sensitive` (`guard::hidden_steps`),
//! and a step's outputs and the run's kept inputs and outputs are bounded so the execution's record
//! fits one D1 row.
//!
//! **Writes are journaled.** Each record write and its undo-journal row (`record_changes`: execution,
//! step, sequence, record, data before and after) are one D1 batch, so neither exists without the
//! other. A write whose record changed between the step's read and its batch applies nothing and
//! fails with the transient code `conflict`. The journal lives until the execution ends for good
//! (a paused or interrupted run keeps it); then nothing can roll it back, and it is cleared.
//!
//! **Rollback** (a failed or timed-out chain with rollback enabled; completed steps in reverse
//! completion order):
//! 1. A `database_operation` step's journal rows are undone newest first: each record gets its
//!    `before` data back (absent → the record is deleted), but only while its data is still the
//!    row's `after`. Otherwise the rollback fails with "record X in collection Y changed since step …;
//!    not overwritten", and that row and the step's older rows stay as they are. An undone row is
//!    removed in the same batch, so a second rollback finds nothing to do.
//! 2. Then, for any step type, its `rollback_action` runs: the name of a tool of this server,
//!    optionally followed by whitespace and a template rendering the tool's JSON arguments over the
//!    chain's variables plus the step's outputs (strictly: a missing value is an error). In
//!    templates `{{` and `}}` are literal braces:
//!    `"delete_customer {{\"id\": {customer.id|json}}}"`. A tool error fails the rollback. When
//!    step 1 failed, it does not run: the records are not as it would expect.
//!
//! Other steps are undone only by their `rollback_action`: an `external_api` step whose tool changes
//! data (`create_template`, say) needs one to be undone.
//!
//! **Limit.** A step's `timeout_ms` abandons the attempt, but a D1 batch already sent may still
//! apply: the step is then failed with its write in place, and rollback, which covers completed
//! steps only, leaves that write alone.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use super::guard::{self, Author, Hidden};
use super::steps::{self, first_output, invalid, pick, Change, JournalRow, RecordAccess};
use super::type_name;
use crate::clock;
use crate::engine::chain::{Ask, RecordAction, RollbackAction, StepDef, StepType};
use crate::engine::chat::parser::json_object_in;
use crate::engine::output::Format;
use crate::engine::run::{
    codes, ErrorClass, RunReport, StepError, StepHost, StepOutcome, StepReport, StepState,
};
use crate::engine::template::RenderOptions;
use crate::engine::variables::{self, get_path, set_path, VarType};
use crate::error::{Error, Result};
use crate::mcp::logging::LogLevel;
use crate::random;
use crate::registry::call::CallContext;
use crate::registry::{self, Heartbeat, ToolContext};
use crate::tools::flowmind::levels::{self, Level, Thresholds};
use crate::tools::model_provider;
use crate::tools::ownership::Principal;
use crate::tools::templates::Stored;

/// The most bytes an execution's stored report may take: `CHAIN_REPORT_MAX_BYTES`, 1 MiB by
/// default (D1 keeps at most 2 MB in one value, and a write past that would fail the run's save
/// and leave it `running`).
pub(super) fn report_max_bytes(ctx: &dyn ToolContext) -> usize {
    ctx.platform()
        .setting("CHAIN_REPORT_MAX_BYTES")
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1 << 20)
}

/// Runs steps through a tool call's (or background job's) context, reporting progress and events
/// per step.
pub struct ChainHost<'a> {
    ctx: &'a dyn ToolContext,
    chain: String,
    execution_id: String,
    /// Whether the execution has a record (and a job lease): only then can it pause, be
    /// cancelled and keep checkpoints.
    tracked: bool,
    total: usize,
    finished: Cell<usize>,
    /// Why the run was asked to stop, once it was.
    stop: RefCell<Option<String>>,
    /// Who saved the chain (`None`: shipped or built by the server); steps act with the rights
    /// both the author and the runner hold (`guard`).
    author: Option<Author>,
    /// What of each step events may not show.
    hidden: Hidden,
    /// Bytes of step inputs and outputs the execution's record holds so far.
    stored: Cell<usize>,
    /// Steps whose input is counted in `stored` already (retries share it).
    counted: RefCell<BTreeSet<u32>>,
    /// What each step's attempts noted (values converted to fit a template), until the runner
    /// takes them into the step's report.
    notes: RefCell<BTreeMap<u32, Vec<String>>>,
}

/// Largest outputs of one step (their JSON text), in bytes. The execution's record keeps them, and
/// a D1 row holds at most 2 MB.
pub const MAX_STEP_OUTPUT_BYTES: usize = 256 * 1024;

/// Largest sum of the step inputs and outputs one execution's record keeps, in bytes.
pub const MAX_RUN_BYTES: usize = 512 * 1024;

/// What a run continuing from `report` keeps already: the bytes of its step inputs and outputs
/// (see [`MAX_RUN_BYTES`]), and the steps whose input is among them (a step that was under way
/// when the run stopped runs again with the same input, which is not counted twice).
pub fn kept(report: &RunReport) -> (usize, BTreeSet<u32>) {
    let bytes = report
        .steps
        .iter()
        .map(|s| {
            s.input.as_ref().map_or(0, String::len)
                + serde_json::to_string(&s.outputs).map_or(0, |t| t.len())
        })
        .sum();
    let counted = crate::engine::sort::set(
        report
            .steps
            .iter()
            .filter(|s| s.input.is_some())
            .map(|s| s.id),
    );
    (bytes, counted)
}

impl<'a> ChainHost<'a> {
    /// A host for execution `execution_id` of `chain`, which has `total` steps, written by
    /// `author`; `hidden` says what of its steps events may not show, `kept` what its record holds
    /// already ([`kept`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &'a dyn ToolContext,
        chain: &str,
        execution_id: &str,
        tracked: bool,
        total: usize,
        author: Option<Author>,
        hidden: Hidden,
        kept: (usize, BTreeSet<u32>),
    ) -> Self {
        ChainHost {
            ctx,
            chain: chain.to_string(),
            execution_id: execution_id.to_string(),
            tracked,
            total,
            finished: Cell::new(0),
            stop: RefCell::new(None),
            author,
            hidden,
            stored: Cell::new(kept.0),
            counted: RefCell::new(kept.1),
            notes: RefCell::new(BTreeMap::new()),
        }
    }

    /// Keeps the running execution's checkpoint, and learns whether another session asked the run
    /// to stop (`stop_request`, set by `cancel_chain` from a session that does not hold the run's
    /// job lease): the run then stops at this step boundary. A checkpoint larger than the report
    /// limit is not kept (logged): the run's final save cuts its report and fails it.
    async fn save_checkpoint(&self, report: &RunReport) -> Result<()> {
        let text = serde_json::to_string(report)?;
        let kept = if text.len() > report_max_bytes(self.ctx) {
            crate::log::error!(
                "{}",
                json!({ "chain_checkpoint_too_large": self.execution_id, "bytes": text.len() })
            );
            None
        } else {
            Some(text)
        };
        let rows = self
            .ctx
            .query(
                "UPDATE chain_executions SET report = COALESCE(?2, report), updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         WHERE id = ?1 AND status = 'running' RETURNING stop_request",
                vec![json!(self.execution_id), json!(kept)],
            )
            .await?;
        if let Some(reason) = rows.first().and_then(|r| r["stop_request"].as_str()) {
            *self.stop.borrow_mut() = Some(reason.to_string());
        }
        Ok(())
    }

    /// Counts a step's input and outputs into what the record keeps: a step whose outputs are
    /// larger than [`MAX_STEP_OUTPUT_BYTES`], or that would take the run past [`MAX_RUN_BYTES`],
    /// fails instead (it cannot succeed on a retry).
    fn keep(&self, step: &StepDef, input: usize, outcome: StepOutcome) -> StepOutcome {
        if self.counted.borrow_mut().insert(step.id) {
            self.stored.set(self.stored.get() + input);
        }
        let out = outcome?;
        let size = serde_json::to_string(&out).map_or(0, |t| t.len());
        if size > MAX_STEP_OUTPUT_BYTES {
            return Err(invalid(format!(
                "step '{}' produced {size} bytes of outputs; a step's outputs are limited to {MAX_STEP_OUTPUT_BYTES} bytes (the execution's record keeps them)",
                step.name
            )));
        }
        let total = self.stored.get() + size;
        if total > MAX_RUN_BYTES {
            return Err(invalid(format!(
                "step '{}': its outputs ({size} bytes) would take the execution's kept inputs and outputs to {total} bytes; a run keeps at most {MAX_RUN_BYTES}",
                step.name
            )));
        }
        self.stored.set(total);
        Ok(out)
    }

    /// Drops the execution's record journal once the execution has ended for good (completed,
    /// failed, timed out or cancelled, rollback done): nothing can roll it back now. A paused or
    /// interrupted run keeps it, since it may still be rolled back.
    /// A failure only leaves rows behind, so it is logged rather than failing the finished run.
    pub async fn forget_changes(&self) {
        if let Err(e) = self
            .ctx
            .query(
                "DELETE FROM record_changes WHERE execution_id = ?1",
                vec![json!(self.execution_id)],
            )
            .await
        {
            self.ctx.log(
                LogLevel::Warning,
                json!(format!(
                    "record journal of {} not cleared: {}",
                    self.execution_id,
                    e.public_message()
                )),
            );
        }
    }
}

fn classify(e: impl Into<registry::ToolError>) -> StepError {
    let e = e.into();
    let class = match &e {
        registry::ToolError::Timeout(_) => ErrorClass::Transient(codes::API_TIMEOUT.into()),
        registry::ToolError::Internal(Error::Storage(_) | Error::Internal(_)) => {
            ErrorClass::Transient(codes::STORAGE.into())
        }
        registry::ToolError::Client(_) => ErrorClass::Transient(codes::CLIENT.into()),
        _ => ErrorClass::Validation,
    };
    StepError::new(class, e.public_message())
}

/// A step error with `what` (the step and what it used) in front of its message.
fn prefixed(what: &str, mut e: StepError) -> StepError {
    e.message = format!("{what}: {}", e.message);
    e
}

fn from_input(step: &StepDef, input: Option<String>) -> StepOutcome {
    let text = input.unwrap_or_default();
    let parsed = serde_json::from_str::<Value>(text.trim()).ok();
    if step.output_variables.len() <= 1 {
        return Ok(first_output(step, parsed.unwrap_or(Value::String(text))));
    }
    match parsed {
        Some(Value::Object(obj)) => pick(step, &obj).map_err(|missing| {
            invalid(format!("step '{}': input_template result lacks {}", step.name, missing.join(", ")))
        }),
        _ => Err(invalid(format!(
            "step '{}' has several output variables, so its input_template must render a JSON object with the keys {}",
            step.name,
            step.output_variables.join(", ")
        ))),
    }
}

/// A model's answer that reports an error instead of the outputs (`{"error": "vendor_unavailable",
/// "message": "…"}`): a transient error of that code, so `retry_on_errors` can name what the step
/// met (the seed's `api_timeout`, `vendor_unavailable`). `None` when the answer has no such field.
fn reported_error(step: &StepDef, answer: &Map<String, Value>) -> Option<StepError> {
    let code = answer
        .get("error")
        .or_else(|| answer.get("error_code"))
        .and_then(Value::as_str)
        .and_then(codes::normalize)?;
    let detail = answer
        .get("message")
        .and_then(Value::as_str)
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    Some(StepError::transient(
        &code,
        format!(
            "step '{}': the model reported the error {code}{detail}",
            step.name
        ),
    ))
}

impl ChainHost<'_> {
    /// Why the run was asked to stop, if it was.
    pub fn stop_reason(&self) -> Option<String> {
        self.stop.borrow().clone()
    }

    /// A step's outputs as events show them: hidden for a step that may carry a sensitive value
    /// (`guard::hidden_steps`). The one place step outputs are redacted for events.
    fn shown_outputs(&self, step: &StepDef, outputs: &Map<String, Value>) -> Value {
        if self.hidden.outputs(step.id) {
            guard::hide(outputs)
        } else {
            Value::Object(outputs.clone())
        }
    }

    async fn template(&self, sc: &CallContext<'_>, step: &StepDef, vars: &Value) -> StepOutcome {
        let name = step.template_id.as_deref().unwrap_or_default();
        let what = format!("step '{}': template {name}", step.name);
        let stored = Stored::load(sc, name)
            .await
            .map_err(|e| prefixed(&what, classify(e)))?;
        let mut merged = stored.variables(&json!({}), vars);
        self.fit_text(sc, step, name, &mut merged).await;
        stored
            .validate(&merged)
            .map_err(|e| prefixed(&what, classify(e)))?;
        let text = stored
            .render(&merged, Format::Text, true, true)
            .map_err(|e| prefixed(&what, classify(e)))?;
        Ok(first_output(step, Value::String(text)))
    }

    /// Turns a list or object given for a variable the template declares as text (a model asked
    /// for `vendor_options` answering with a list, say) into text (`steps::as_text`), noting it in
    /// the step's report. Reading the rules is best effort: without them the template's own
    /// validation still names the field.
    async fn fit_text(&self, sc: &CallContext<'_>, step: &StepDef, name: &str, vars: &mut Value) {
        let Ok(rows) = sc
            .query(
                "SELECT variables_schema FROM template_definitions WHERE name = ?1",
                vec![json!(name)],
            )
            .await
        else {
            return;
        };
        let Some(schema) = rows
            .first()
            .and_then(|r| r["variables_schema"].as_str())
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|v| variables::parse_schema(&v).ok())
        else {
            return;
        };
        for (path, spec) in &schema {
            if spec.kind != VarType::String {
                continue;
            }
            let Some(given) = get_path(vars, path).filter(|v| v.is_array() || v.is_object()) else {
                continue;
            };
            let text = steps::as_text(given);
            let kind = if given.is_array() {
                "a list"
            } else {
                "an object"
            };
            self.note(
                step,
                format!("{path}: {kind} where template {name} expects text; rendered as text"),
            );
            set_path(vars, path, Value::String(text));
        }
    }

    /// Keeps a note for the step's report.
    fn note(&self, step: &StepDef, note: String) {
        self.notes
            .borrow_mut()
            .entry(step.id)
            .or_default()
            .push(note);
    }

    async fn instruction(&self, step: &StepDef, input: Option<String>) -> StepOutcome {
        let name = step.instruction_set.as_deref().unwrap_or_default();
        let rows = self
            .ctx
            .query(
                "SELECT content FROM instruction_sets WHERE name = ?1",
                vec![json!(name)],
            )
            .await
            .map_err(classify)?;
        let Some(content) = rows
            .first()
            .and_then(|r| r["content"].as_str())
            .map(str::to_string)
        else {
            return Err(invalid(format!(
                "step '{}': instruction set {name:?} does not exist",
                step.name
            )));
        };
        let prompt = input
            .or_else(|| step.description.clone())
            .unwrap_or_else(|| step.name.clone());
        let system = format!(
            "{content}\n\nAnswer with one JSON object and nothing else. Its keys: {}.",
            step.output_variables.join(", ")
        );
        let sampling =
            step.ask != Ask::Explicit && self.ctx.client_capabilities().get("sampling").is_some();
        let provider = match step.ask {
            Ask::Model => self.ctx.platform().setting("MODEL_PROVIDER_URL"),
            Ask::Client | Ask::Explicit => None,
        };
        let text = if sampling {
            let params = json!({
                "systemPrompt": system,
                "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
                "maxTokens": 1000
            });
            let reply = self
                .ctx
                .ask_client("sampling/createMessage", params)
                .await
                .map_err(classify)?;
            reply
                .pointer("/content/text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        } else if let Some(url) = provider {
            self.provider(&url, &system, &prompt).await?
        } else if self.tracked {
            let why = match step.ask {
                Ask::Model => "no model to run it",
                Ask::Client | Ask::Explicit => "waits for the caller's answer",
            };
            let mut e = StepError::new(
                ErrorClass::AwaitingInput,
                format!(
                    "{why}: supply {} with resume_chain",
                    step.output_variables.join(", ")
                ),
            );
            // `ask` tells a 2025-11-25 tasks/result whom to put the question to: only the
            // caller's user answers an explicit step, never a model.
            e.prompt = Some(json!({
                "instructions": content,
                "input": prompt,
                "output_variables": step.output_variables,
                "ask": match step.ask {
                    Ask::Model => "model",
                    Ask::Client => "client",
                    Ask::Explicit => "explicit",
                },
            }));
            return Err(e);
        } else {
            return Err(invalid(format!(
                "step '{}' needs a model: the client did not declare MCP sampling, no MODEL_PROVIDER_URL is configured, and a run with track_progress: false cannot pause for input",
                step.name
            )));
        };
        let obj = json_object_in(&text).ok_or_else(|| {
            StepError::transient(
                codes::MODEL_OUTPUT,
                format!(
                    "step '{}': the model did not answer with a JSON object",
                    step.name
                ),
            )
        })?;
        pick(step, &obj).map_err(|missing| {
            reported_error(step, &obj).unwrap_or_else(|| {
                StepError::transient(
                    codes::MODEL_OUTPUT,
                    format!(
                        "step '{}': the model's answer lacks {}",
                        step.name,
                        missing.join(", ")
                    ),
                )
            })
        })
    }

    /// Asks the configured model provider (an OpenAI-compatible chat completions endpoint).
    async fn provider(&self, url: &str, system: &str, prompt: &str) -> Result<String, StepError> {
        let platform = self.ctx.platform();
        let ask = model_provider::request(platform, url.to_string(), system, prompt, 1000, None);
        let reply = platform
            .fetch(ask)
            .await
            .map_err(|e| StepError::transient(codes::MODEL_UNAVAILABLE, e.public_message()))?;
        if reply.status == 429 || reply.status >= 500 {
            return Err(StepError::transient(
                codes::MODEL_UNAVAILABLE,
                format!("the model provider answered HTTP {}", reply.status),
            ));
        }
        if !(200..300).contains(&reply.status) {
            return Err(invalid(format!(
                "the model provider refused the request (HTTP {}): {}",
                reply.status,
                reply.body.chars().take(300).collect::<String>()
            )));
        }
        model_provider::reply_text(&reply.body)
            .ok_or_else(|| StepError::transient(codes::MODEL_OUTPUT, model_provider::NO_REPLY_TEXT))
    }

    async fn attempt(&self, step: &StepDef, input: Option<String>, vars: &Value) -> StepOutcome {
        // Decided at every attempt: a resumed or background run acts with the runner's rights
        // as they are now.
        let sc = self.step_context();
        match step.kind {
            StepType::TemplateProcessing => self.template(&sc, step, vars).await,
            StepType::DataTransformation | StepType::ConditionalLogic => from_input(step, input),
            StepType::InstructionSet => self.instruction(step, input).await,
            StepType::ExternalApi => self.external(&sc, step, input).await,
            StepType::DatabaseOperation => self.record(&sc, step, input).await,
        }
    }
}

/// What a tool's `roles` ask of a caller, for an error.
fn needs(roles: &[&str]) -> String {
    let named: Vec<&str> = roles.iter().copied().filter(|r| *r != "*").collect();
    match (roles.contains(&"*"), named.is_empty()) {
        (true, true) => "a signed-in user".into(),
        (true, false) => format!("a signed-in user or one of the roles {}", named.join(", ")),
        (false, _) => format!("one of the roles {}", named.join(", ")),
    }
}

/// Session-storage key of an anonymous caller's count of successful FlowMind calls: the one
/// `server::levels` keeps it under.
const ANONYMOUS_SUCCESSES: &str = "flowmind_successes";

impl ChainHost<'_> {
    /// The context a step acts in now: the rights both the chain's author and its runner hold.
    fn step_context(&self) -> CallContext<'_> {
        CallContext::within(
            self.ctx,
            guard::step_caller(self.author.as_ref(), &self.ctx.caller()),
        )
    }

    /// Why the step's rights are narrower than the runner's, when they are.
    fn narrowed(&self) -> Option<String> {
        guard::narrowed(self.author.as_ref(), &self.ctx.caller())
    }

    /// A step error for a failed tool call, saying when the step acted with fewer rights than the
    /// runner has (the likely reason a tool found nothing or refused).
    fn explained(&self, mut e: StepError) -> StepError {
        if matches!(e.class, ErrorClass::Validation | ErrorClass::Permission) {
            if let Some(why) = self.narrowed() {
                e.message = format!("{} (Note: {why})", e.message);
            }
        }
        e
    }

    /// The tool `name` as the step's caller may use it (`what` names the step in errors). A tool
    /// the runner could use but the step cannot is refused naming the rights it lacks; one the
    /// runner cannot use either reads as unknown, as in `tools/list`.
    fn tool_for(
        &self,
        sc: &CallContext<'_>,
        what: &str,
        name: &str,
    ) -> Result<&registry::Tool, StepError> {
        let registry = self.ctx.platform().registry();
        steps::resolve_tool(registry, name, sc.caller_ref()).map_err(|e| {
            let runner = self.ctx.caller();
            match (
                steps::resolve_tool(registry, name, &runner),
                self.narrowed(),
            ) {
                (Ok(tool), Some(why)) => StepError::new(
                    ErrorClass::Permission,
                    format!(
                        "{what}: tool {name} needs {}, which this step lacks: {why}",
                        needs(tool.def.roles)
                    ),
                ),
                _ => invalid(format!("{what}: {e}")),
            }
        })
    }

    /// A caller's count of successful FlowMind calls, as the session's gate counts it: a user's in
    /// D1, an anonymous caller's in this session. A count that cannot be read is 0: a storage
    /// fault never widens access.
    async fn successes(&self, user: Option<&str>) -> u64 {
        let counted = match user {
            Some(u) => self
                .ctx
                .query(
                    "SELECT successes FROM flowmind_progress WHERE caller = ?1",
                    vec![json!(u)],
                )
                .await
                .map(|rows| rows.first().and_then(|r| r["successes"].as_u64())),
            None => self
                .ctx
                .platform()
                .session_get(ANONYMOUS_SUCCESSES)
                .map(|v| v.and_then(|v| v.parse().ok())),
        };
        counted.ok().flatten().unwrap_or(0)
    }

    /// FlowMind's level gate for a step calling `tool`, as a direct call meets it: the runner's
    /// level, and the author's too when someone else wrote the chain (an anonymous author counts
    /// as a beginner). Calls made by steps never count towards a level.
    async fn level_gate(&self, what: &str, tool: &registry::Tool) -> Result<(), StepError> {
        let name = tool.def.name;
        if !levels::is_gated(tool.def.toolset, name) {
            return Ok(());
        }
        let setting = self.ctx.platform().setting("FLOWMIND_LEVELS");
        // A setting that does not parse stops the deployment's start (Config::check); the
        // default here only keeps the gate closed, never open.
        let Some(t) = Thresholds::parse_setting(setting.as_deref().unwrap_or_default())
            .unwrap_or(Some(Thresholds::default()))
        else {
            return Ok(());
        };
        let runner = self.ctx.caller();
        let mut n = self.successes(runner.user.as_deref()).await;
        if let Some(author) = &self.author {
            let same = author.user.is_some() && author.user == runner.user;
            if !same {
                let theirs = match &author.user {
                    Some(a) => self.successes(Some(a)).await,
                    None => 0,
                };
                n = n.min(theirs);
            }
        }
        let level: Level = t.level(n);
        if levels::allows(level, name) {
            return Ok(());
        }
        let known: Vec<&str> = self
            .ctx
            .platform()
            .registry()
            .tools()
            .filter(|t| levels::is_gated(t.def.toolset, t.def.name))
            .map(|t| t.def.name)
            .collect();
        Err(StepError::new(ErrorClass::Permission, format!(
            "{what}: {} Chain steps meet FlowMind's levels as direct calls do, at the runner's level (and the author's, when someone else saved the chain); calls made by chain steps do not count towards a level.",
            levels::locked_message(name, level, &t, n, &known)
        )))
    }

    async fn external(
        &self,
        sc: &CallContext<'_>,
        step: &StepDef,
        input: Option<String>,
    ) -> StepOutcome {
        let name = step.tool.as_deref().unwrap_or_default();
        let what = format!("step '{}'", step.name);
        // create_chain checked the tool, but a stored chain may predate a tool's removal or the
        // chains-tool rule, and the runner's rights are known only now; the check is cheap.
        let tool = self.tool_for(sc, &what, name)?;
        self.level_gate(&what, tool).await?;
        let args = steps::json_object(
            &format!("step '{}': the tool arguments (input_template)", step.name),
            input.as_deref(),
        )
        .map_err(invalid)?;
        let out = registry::execute(tool, sc, Value::Object(args)).await;
        steps::tool_outputs(step, name, &out.result, out.outcome).map_err(|e| self.explained(e))
    }

    async fn record(
        &self,
        sc: &CallContext<'_>,
        step: &StepDef,
        input: Option<String>,
    ) -> StepOutcome {
        let Some(op) = &step.operation else {
            return Err(invalid(format!(
                "step '{}' is a database_operation step without an operation",
                step.name
            )));
        };
        let collection = op.collection.as_str();
        let fail = |e: String| invalid(format!("step '{}': {e}", step.name));
        let data = steps::json_object(
            &format!("the record (input_template) of {}", op.action.as_str()),
            input.as_deref(),
        )
        .map_err(fail)?;
        let request = steps::record_request(op.action, data).map_err(fail)?;
        let sharing = steps::record_sharing(op).map_err(fail)?;
        // Records are owned and read as the step acts (guard.rs), never with more rights.
        let me = Principal::of(sc);
        let owner = match op.action {
            RecordAction::Get => None,
            _ => Some(
                me.require_owner("write records")
                    .map_err(|e| fail(e.to_string()))?
                    .to_string(),
            ),
        };
        let id = match request.id {
            Some(id) => id,
            None => format!("rec-{}", random::hex(16).map_err(classify)?),
        };
        let read = steps::read_record(collection, &id, &me);
        let rows = sc.query(&read.sql, read.params).await.map_err(classify)?;
        let current = rows
            .first()
            .and_then(|r| r["data"].as_str())
            .map(str::to_string);
        if let Some(refusal) = rows
            .first()
            .and_then(|r| steps::record_refusal(op.action, collection, &id, r))
        {
            return Err(fail(refusal));
        }
        if op.action == RecordAction::Create && current.is_none() {
            let held = steps::record_held(collection, &id);
            if !self
                .ctx
                .query(&held.sql, held.params)
                .await
                .map_err(classify)?
                .is_empty()
            {
                return Err(fail(steps::id_taken(collection, &id)));
            }
        }
        let access = RecordAccess::new(owner.as_deref().unwrap_or_default(), &sharing);
        let change = steps::plan_change(
            op.action,
            collection,
            &id,
            current.as_deref(),
            request.fields,
        )
        .map_err(fail)?;
        if change.writes() {
            self.write(step, collection, &id, &change, &access, &me)
                .await?;
        }
        Ok(first_output(step, change.record))
    }

    /// Journals and applies a change in one batch, as `writer`; a record it creates gets `access`.
    async fn write(
        &self,
        step: &StepDef,
        collection: &str,
        id: &str,
        change: &Change,
        access: &RecordAccess,
        writer: &Principal,
    ) -> Result<(), StepError> {
        let statements = vec![
            steps::journal(&self.execution_id, step.id, collection, id, change),
            steps::transition(
                collection,
                id,
                change.before.as_deref(),
                change.after.as_deref(),
                access,
                writer,
            ),
        ];
        let results = self
            .ctx
            .platform()
            .batch(statements)
            .await
            .map_err(classify)?;
        if results.get(1).is_none_or(Vec::is_empty) {
            return Err(StepError::transient(
                "conflict",
                format!(
                    "step '{}': record {id:?} in collection {collection:?} changed while the step ran; nothing was written",
                    step.name
                ),
            ));
        }
        Ok(())
    }

    /// Undoes the step's journal rows, newest first, stopping at the first record that changed since.
    async fn undo_records(&self, step: &StepDef) -> Result<(), StepError> {
        let rows = self
            .ctx
            .query(
                "SELECT seq, collection, record_id, before, after, owner, visibility, shared_roles FROM record_changes
                 WHERE execution_id = ?1 AND step_id = ?2 ORDER BY seq DESC",
                vec![json!(self.execution_id), json!(step.id)],
            )
            .await
            .map_err(classify)?;
        // Undone as the step that wrote them acted.
        let me = Principal::of(&self.step_context());
        for row in rows.iter().filter_map(JournalRow::from_row) {
            let results = self
                .ctx
                .platform()
                .batch(row.undo(&self.execution_id, &me))
                .await
                .map_err(classify)?;
            if results.get(1).is_none_or(Vec::is_empty) {
                return Err(invalid(format!(
                    "record {:?} in collection {:?} changed since step {} '{}' wrote it; not overwritten",
                    row.record_id, row.collection, step.id, step.name
                )));
            }
        }
        Ok(())
    }

    /// Calls the step's `rollback_action` tool with its rendered arguments.
    async fn rollback_call(
        &self,
        step: &StepDef,
        text: &str,
        outputs: &Map<String, Value>,
        vars: &Value,
    ) -> Result<(), StepError> {
        let fail = |e: String| invalid(format!("step '{}': rollback_action {e}", step.name));
        let action = RollbackAction::parse(text).map_err(fail)?;
        let sc = self.step_context();
        let what = format!("step '{}': rollback_action", step.name);
        let tool = self.tool_for(&sc, &what, &action.tool)?;
        self.level_gate(&what, tool).await?;
        let args = match &action.arguments {
            None => Map::new(),
            Some(template) => {
                let mut scope = vars.as_object().cloned().unwrap_or_default();
                scope.extend(outputs.clone());
                // Strict: an undo with a silently empty value could hit the wrong record.
                let opts = RenderOptions {
                    strict: true,
                    ..RenderOptions::default()
                };
                let text = template
                    .render(&Value::Object(scope), opts)
                    .map_err(|e| fail(format!("arguments {e}")))?
                    .text();
                steps::json_object("arguments", Some(&text)).map_err(fail)?
            }
        };
        let out = registry::execute(tool, &sc, Value::Object(args)).await;
        match steps::tool_failure(
            &format!("step '{}': rollback_action tool {}", step.name, action.tool),
            &out.result,
            out.outcome,
        ) {
            Some(e) => Err(self.explained(e)),
            None => Ok(()),
        }
    }
}

impl StepHost for ChainHost<'_> {
    fn run_step<'a>(
        &'a self,
        step: &'a StepDef,
        input: Option<String>,
        vars: &'a Value,
    ) -> LocalBoxFuture<'a, StepOutcome> {
        Box::pin(async move {
            let platform = self.ctx.platform();
            let tool = format!("{}/{}", self.chain, step.name);
            let shown =
                guard::shown_input(&self.hidden, platform.registry(), step, input.as_deref());
            platform.emit(
                "tool_call",
                json!({ "tool": tool, "name": tool, "args": shown, "execution_id": self.execution_id, "step": step.id, "type": type_name(step.kind), "input": shown }),
            );
            let started = clock::now_ms();
            let size = input.as_ref().map_or(0, String::len);
            let outcome = self.attempt(step, input, vars).await;
            let outcome = self.keep(step, size, outcome);
            let duration_ms = (clock::now_ms() - started).round();
            match &outcome {
                Ok(out) => platform.emit(
                    "tool_result",
                    json!({ "tool": tool, "execution_id": self.execution_id, "step": step.id, "duration_ms": duration_ms, "cached": false, "result": self.shown_outputs(step, out) }),
                ),
                Err(e) => platform.emit(
                    "error",
                    json!({ "tool": tool, "execution_id": self.execution_id, "step": step.id, "duration_ms": duration_ms, "error": e.message, "message": format!("Tool execution error: {}", e.message) }),
                ),
            }
            outcome
        })
    }

    fn rollback_step<'a>(
        &'a self,
        step: &'a StepDef,
        outputs: &'a Map<String, Value>,
        vars: &'a Value,
    ) -> LocalBoxFuture<'a, Result<(), StepError>> {
        Box::pin(async move {
            // A step that fell back to a database_operation wrote through its journal as well.
            let wrote = step.kind == StepType::DatabaseOperation
                || step
                    .fallback_step
                    .as_ref()
                    .is_some_and(|f| f.kind == "database_operation");
            if wrote {
                self.undo_records(step).await?;
            }
            if let Some(text) = &step.rollback_action {
                self.rollback_call(step, text, outputs, vars).await?;
            }
            Ok(())
        })
    }

    fn should_continue(&self) -> bool {
        if !self.tracked {
            return true;
        }
        if self.stop.borrow().is_some() {
            return false;
        }
        match self.ctx.platform().job_heartbeat(&self.execution_id) {
            Ok(Heartbeat::Continue) => true,
            Ok(Heartbeat::Stop(reason)) => {
                *self.stop.borrow_mut() = Some(reason);
                false
            }
            Err(e) => {
                crate::log::error!("job heartbeat: {e}");
                true
            }
        }
    }

    fn checkpoint<'a>(&'a self, report: &'a RunReport) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            if !self.tracked {
                return;
            }
            if let Err(e) = self.save_checkpoint(report).await {
                crate::log::error!("chain checkpoint: {e}");
            }
        })
    }

    fn sleep(&self, ms: u64) -> LocalBoxFuture<'_, ()> {
        self.ctx.sleep(u32::try_from(ms).unwrap_or(u32::MAX))
    }

    fn take_warnings(&self, step: &StepDef) -> Vec<String> {
        self.notes.borrow_mut().remove(&step.id).unwrap_or_default()
    }

    fn now_ms(&self) -> f64 {
        clock::now_ms()
    }

    fn on_step(&self, report: &StepReport) {
        if report.state == StepState::Pending {
            return;
        }
        self.finished.set(self.finished.get() + 1);
        self.ctx.progress(
            self.finished.get() as f64,
            Some(self.total as f64),
            Some(&format!("{}: {}", report.name, report.state.as_str())),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(outputs: &[&str]) -> StepDef {
        serde_json::from_value(json!({ "id": 1, "name": "s", "type": "data_transformation", "output_variables": outputs })).unwrap()
    }

    #[test]
    fn transformations_take_text_json_or_an_object_of_outputs() {
        assert_eq!(
            from_input(&step(&["x"]), Some("hello".into())).unwrap()["x"],
            "hello"
        );
        assert_eq!(
            from_input(&step(&["x"]), Some("[1, 2]".into())).unwrap()["x"],
            json!([1, 2])
        );
        let two = from_input(
            &step(&["a", "b"]),
            Some("{\"a\": 1, \"b\": true, \"c\": 0}".into()),
        )
        .unwrap();
        assert_eq!(Value::Object(two), json!({ "a": 1, "b": true }));
        assert!(from_input(&step(&["a", "b"]), Some("{\"a\": 1}".into()))
            .unwrap_err()
            .message
            .contains("lacks b"));
        assert!(from_input(&step(&["a", "b"]), Some("text".into()))
            .unwrap_err()
            .message
            .contains("JSON object"));
    }

    #[test]
    fn a_model_may_report_an_error_code_instead_of_the_outputs() {
        let s = step(&["vendor_options"]);
        let answer =
            json_object_in("{\"error\": \"Vendor unavailable\", \"message\": \"Amadeus is down\"}")
                .unwrap();
        let e = reported_error(&s, &answer).unwrap();
        assert_eq!(e.class, ErrorClass::Transient("vendor_unavailable".into()));
        assert_eq!(
            e.message,
            "step 's': the model reported the error vendor_unavailable: Amadeus is down"
        );
        assert!(reported_error(&s, &Map::new()).is_none());
        assert!(reported_error(&s, &json_object_in("{\"error\": \" - \"}").unwrap()).is_none());
    }

    #[test]
    fn model_replies_may_wrap_the_json() {
        let m = json_object_in("Sure! ```json\n{\"status\": \"approved\"}\n```").unwrap();
        assert_eq!(m["status"], "approved");
        assert!(json_object_in("no json here").is_none());
    }
}
