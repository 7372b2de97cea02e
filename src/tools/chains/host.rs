//! How chain steps run on this server: the [`StepHost`] the runner drives during `execute_chain`.
//!
//! | step type | what it does |
//! | --- | --- |
//! | `template_processing` | renders the stored template `template_id` with the chain's variables; the text becomes the first output variable |
//! | `data_transformation`, `conditional_logic` | renders `input_template`; with one output variable, the result (parsed as JSON when it is JSON); with several, the result must be a JSON object holding them |
//! | `instruction_set` | asks the client's model (MCP sampling) with the instruction set as system prompt and the rendered input; the reply must be a JSON object with the output variables |
//! | `external_api`, `database_operation` | not available yet: the step fails with a validation error |
//!
//! These steps change no stored data, so their rollback has nothing to undo.

use std::cell::Cell;

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use crate::clock;
use crate::engine::chain::{StepDef, StepType};
use crate::engine::output::Format;
use crate::engine::run::{ErrorClass, StepError, StepHost, StepOutcome, StepReport, StepState};
use crate::error::Error;
use crate::registry::ToolContext;
use crate::tools::templates::Stored;

/// Runs steps through a tool call's context, reporting progress per finished step.
pub struct ChainHost<'a> {
    ctx: &'a dyn ToolContext,
    total: usize,
    finished: Cell<usize>,
}

impl<'a> ChainHost<'a> {
    /// A host for a chain of `total` steps.
    pub fn new(ctx: &'a dyn ToolContext, total: usize) -> Self {
        ChainHost {
            ctx,
            total,
            finished: Cell::new(0),
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
    StepError {
        class,
        message: e.public_message(),
    }
}

fn invalid(message: String) -> StepError {
    StepError {
        class: ErrorClass::Validation,
        message,
    }
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
        if self.ctx.client_capabilities().get("sampling").is_none() {
            return Err(invalid(format!(
                "step '{}' needs a model: this client did not declare the MCP sampling capability (pausing for input is not available yet)",
                step.name
            )));
        }
        let prompt = input
            .or_else(|| step.description.clone())
            .unwrap_or_else(|| step.name.clone());
        let params = json!({
            "systemPrompt": format!(
                "{content}\n\nAnswer with one JSON object and nothing else. Its keys: {}.",
                step.output_variables.join(", ")
            ),
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": 1000
        });
        let reply = self
            .ctx
            .ask_client("sampling/createMessage", params)
            .await
            .map_err(classify)?;
        let text = reply
            .pointer("/content/text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let obj = json_object_in(text).ok_or_else(|| {
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
}

impl StepHost for ChainHost<'_> {
    fn run_step<'a>(
        &'a self,
        step: &'a StepDef,
        input: Option<String>,
        vars: &'a Value,
    ) -> LocalBoxFuture<'a, StepOutcome> {
        Box::pin(async move {
            match step.kind {
                StepType::TemplateProcessing => self.template(step, vars).await,
                StepType::DataTransformation | StepType::ConditionalLogic => {
                    from_input(step, input)
                }
                StepType::InstructionSet => self.instruction(step, input).await,
                StepType::ExternalApi | StepType::DatabaseOperation => Err(invalid(format!(
                    "step '{}': external_api and database_operation steps are not available yet",
                    step.name
                ))),
            }
        })
    }

    fn rollback_step<'a>(
        &'a self,
        _step: &'a StepDef,
        _outputs: &'a Map<String, Value>,
    ) -> LocalBoxFuture<'a, Result<(), StepError>> {
        Box::pin(async { Ok(()) })
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
