//! How chain steps run on this server: the [`StepHost`] the runner drives during `execute_chain`.
//!
//! | step type | what it does |
//! | --- | --- |
//! | `template_processing` | renders the stored template `template_id` with the chain's variables; the text becomes the first output variable |
//! | `data_transformation`, `conditional_logic` | renders `input_template`; with one output variable, the result (parsed as JSON when it is JSON); with several, the result must be a JSON object holding them |
//! | `instruction_set` | asks a model with the instruction set as system prompt and the rendered input: the client's (MCP sampling) when it declared sampling, else the configured model provider (`MODEL_PROVIDER_URL`); the reply must be a JSON object with the output variables. With neither, a tracked run pauses (`awaiting_input`) with the prompt until the client supplies the outputs (`resume_chain`) |
//! | `external_api`, `database_operation` | not available yet: the step fails with a validation error |
//!
//! These steps change no stored data, so their rollback has nothing to undo.

use std::cell::{Cell, RefCell};

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use super::type_name;
use crate::clock;
use crate::engine::chain::{StepDef, StepType};
use crate::engine::output::Format;
use crate::engine::run::{
    ErrorClass, RunReport, StepError, StepHost, StepOutcome, StepReport, StepState,
};
use crate::error::Error;
use crate::registry::{Heartbeat, Outbound, ToolContext};
use crate::tools::templates::Stored;

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
}

impl<'a> ChainHost<'a> {
    /// A host for execution `execution_id` of `chain`, which has `total` steps.
    pub fn new(
        ctx: &'a dyn ToolContext,
        chain: &str,
        execution_id: &str,
        tracked: bool,
        total: usize,
    ) -> Self {
        ChainHost {
            ctx,
            chain: chain.to_string(),
            execution_id: execution_id.to_string(),
            tracked,
            total,
            finished: Cell::new(0),
            stop: RefCell::new(None),
        }
    }
}

fn classify(e: Error) -> StepError {
    let class = match &e {
        Error::Timeout(_) => ErrorClass::Transient("timeout".into()),
        Error::Storage(_) | Error::Internal(_) => ErrorClass::Transient("storage".into()),
        Error::Client(_) => ErrorClass::Transient("client".into()),
        _ => ErrorClass::Validation,
    };
    StepError::new(class, e.public_message())
}

fn invalid(message: String) -> StepError {
    StepError::new(ErrorClass::Validation, message)
}

fn first_output(step: &StepDef, value: Value) -> Map<String, Value> {
    let key = step
        .output_variables
        .first()
        .cloned()
        .unwrap_or_else(|| step.name.clone());
    let mut out = Map::new();
    out.insert(key, value);
    out
}

/// Picks the step's output variables from a JSON object.
fn pick(step: &StepDef, obj: &Map<String, Value>) -> Result<Map<String, Value>, Vec<String>> {
    let missing: Vec<String> = step
        .output_variables
        .iter()
        .filter(|k| !obj.contains_key(*k))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    Ok(step
        .output_variables
        .iter()
        .map(|k| (k.clone(), obj[k].clone()))
        .collect())
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

/// The first `{…}` block of a model's reply, parsed.
fn json_object_in(text: &str) -> Option<Map<String, Value>> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    match serde_json::from_str(text.get(start..=end)?) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

impl ChainHost<'_> {
    /// Why the run was asked to stop, if it was.
    pub fn stop_reason(&self) -> Option<String> {
        self.stop.borrow().clone()
    }

    async fn template(&self, step: &StepDef, vars: &Value) -> StepOutcome {
        let name = step.template_id.as_deref().unwrap_or_default();
        let stored = Stored::load(self.ctx, name).await.map_err(classify)?;
        let merged = stored.variables(&json!({}), vars);
        stored.validate(&merged).map_err(classify)?;
        let text = stored
            .render(&merged, Format::Text, true, true)
            .map_err(classify)?;
        Ok(first_output(step, Value::String(text)))
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
        let text = if self.ctx.client_capabilities().get("sampling").is_some() {
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
        } else if let Some(url) = self.ctx.platform().setting("MODEL_PROVIDER_URL") {
            self.provider(&url, &system, &prompt).await?
        } else if self.tracked {
            let mut e = StepError::new(
                ErrorClass::AwaitingInput,
                format!(
                    "no model to run it: supply {} with resume_chain",
                    step.output_variables.join(", ")
                ),
            );
            e.prompt = Some(json!({
                "instructions": content,
                "input": prompt,
                "output_variables": step.output_variables,
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
                "model_output",
                format!(
                    "step '{}': the model did not answer with a JSON object",
                    step.name
                ),
            )
        })?;
        pick(step, &obj).map_err(|missing| {
            StepError::transient(
                "model_output",
                format!(
                    "step '{}': the model's answer lacks {}",
                    step.name,
                    missing.join(", ")
                ),
            )
        })
    }

    /// Asks the configured model provider (an OpenAI-compatible chat completions endpoint).
    async fn provider(&self, url: &str, system: &str, prompt: &str) -> Result<String, StepError> {
        let platform = self.ctx.platform();
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(key) = platform.setting("MODEL_PROVIDER_KEY") {
            headers.push(("authorization".into(), format!("Bearer {key}")));
        }
        let body = json!({
            "model": platform.setting("MODEL_PROVIDER_MODEL").unwrap_or_else(|| "default".into()),
            "messages": [
                { "role": "system", "content": system },
                { "role": "user", "content": prompt }
            ],
            "max_tokens": 1000
        });
        let reply = platform
            .fetch(Outbound {
                method: "POST",
                url: url.to_string(),
                headers,
                body: Some(body.to_string()),
            })
            .await
            .map_err(|e| StepError::transient("model_unavailable", e.public_message()))?;
        if reply.status == 429 || reply.status >= 500 {
            return Err(StepError::transient(
                "model_unavailable",
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
        serde_json::from_str::<Value>(&reply.body)
            .ok()
            .and_then(|v| {
                v.pointer("/choices/0/message/content")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .ok_or_else(|| {
                StepError::transient(
                    "model_output",
                    "the model provider's answer has no choices[0].message.content",
                )
            })
    }

    async fn attempt(&self, step: &StepDef, input: Option<String>, vars: &Value) -> StepOutcome {
        match step.kind {
            StepType::TemplateProcessing => self.template(step, vars).await,
            StepType::DataTransformation | StepType::ConditionalLogic => from_input(step, input),
            StepType::InstructionSet => self.instruction(step, input).await,
            StepType::ExternalApi | StepType::DatabaseOperation => Err(invalid(format!(
                "step '{}': external_api and database_operation steps are not available yet",
                step.name
            ))),
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
            platform.emit(
                "tool_call",
                json!({ "tool": tool, "execution_id": self.execution_id, "step": step.id, "type": type_name(step.kind), "input": input }),
            );
            let started = clock::now_ms();
            let outcome = self.attempt(step, input, vars).await;
            let duration_ms = (clock::now_ms() - started).round();
            match &outcome {
                Ok(out) => platform.emit(
                    "tool_result",
                    json!({ "tool": tool, "execution_id": self.execution_id, "step": step.id, "duration_ms": duration_ms, "cached": false, "result": out }),
                ),
                Err(e) => platform.emit(
                    "error",
                    json!({ "tool": tool, "execution_id": self.execution_id, "step": step.id, "duration_ms": duration_ms, "error": e.message }),
                ),
            }
            outcome
        })
    }

    fn rollback_step<'a>(
        &'a self,
        _step: &'a StepDef,
        _outputs: &'a Map<String, Value>,
    ) -> LocalBoxFuture<'a, Result<(), StepError>> {
        Box::pin(async { Ok(()) })
    }

    fn should_continue(&self) -> bool {
        if !self.tracked {
            return true;
        }
        match self.ctx.platform().job_heartbeat(&self.execution_id) {
            Ok(Heartbeat::Continue) => true,
            Ok(Heartbeat::Stop(reason)) => {
                *self.stop.borrow_mut() = Some(reason);
                false
            }
            Err(e) => {
                worker::console_error!("job heartbeat: {e}");
                true
            }
        }
    }

    fn checkpoint<'a>(&'a self, report: &'a RunReport) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            if !self.tracked {
                return;
            }
            if let Err(e) =
                super::executions::save_checkpoint(self.ctx, &self.execution_id, report).await
            {
                worker::console_error!("chain checkpoint: {e}");
            }
        })
    }

    fn sleep(&self, ms: u64) -> LocalBoxFuture<'_, ()> {
        self.ctx.sleep(u32::try_from(ms).unwrap_or(u32::MAX))
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
    fn model_replies_may_wrap_the_json() {
        let m = json_object_in("Sure! ```json\n{\"status\": \"approved\"}\n```").unwrap();
        assert_eq!(m["status"], "approved");
        assert!(json_object_in("no json here").is_none());
    }
}
