//! Travel-assistant instructions: named instruction sets stored in D1, and the session's working mode.
//!
//! An instruction set is a named block of guidance (category, description, content) that the model
//! loads on demand; chains reference them by name (seed 000). The working mode (`mobile-mode` for
//! short replies on messaging channels, `interactive-mode` for detailed desktop work) is per session
//! and lives in the session's Durable Object storage.

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use crate::error::Result;
use crate::registry::{
    Annotations, CachePolicy, SessionState, ToolContext, ToolDef, ToolError, ToolOutput, ToolResult,
};

const TOOLSET: &str = "instructions";
const MODE_KEY: &str = "mode";
const SET_COLUMNS: &str = "name, title, category, description, content, version, updated_at";

/// A working mode of the assistant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Short, scannable replies for WhatsApp, Telegram, SMS and phone follow-ups.
    Mobile,
    /// Detailed, structured replies for desktop work.
    Interactive,
}

impl Mode {
    /// The mode of a new session.
    pub const DEFAULT: Mode = Mode::Interactive;

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "mobile-mode" => Some(Mode::Mobile),
            "interactive-mode" => Some(Mode::Interactive),
            _ => None,
        }
    }

    /// The wire name, which is also the name of the mode's instruction set.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Mobile => "mobile-mode",
            Mode::Interactive => "interactive-mode",
        }
    }

    /// The line the assistant shows at the top of its replies so the agent knows the mode.
    pub fn indicator(self) -> &'static str {
        match self {
            Mode::Mobile => "📱 MOBILE MODE",
            Mode::Interactive => "💻 INTERACTIVE MODE",
        }
    }

    /// What the mode means for replies.
    pub fn description(self) -> &'static str {
        match self {
            Mode::Mobile => "Short replies (at most a few lines), one question at a time, no tables: suited to WhatsApp, Telegram, SMS and phone follow-ups.",
            Mode::Interactive => "Detailed, structured replies with options, tables and full itineraries: suited to desktop planning sessions.",
        }
    }

    fn summary(self) -> Value {
        json!({ "mode": self.as_str(), "indicator": self.indicator(), "description": self.description() })
    }
}

/// Reads the session's mode; a session that never chose one is in [`Mode::DEFAULT`].
fn current_mode(ctx: &dyn ToolContext) -> Result<Mode> {
    Ok(ctx
        .platform()
        .session_get(MODE_KEY)?
        .as_deref()
        .and_then(Mode::parse)
        .unwrap_or(Mode::DEFAULT))
}

fn mode_arg(args: &Value) -> Option<Mode> {
    args.get("mode")
        .and_then(Value::as_str)
        .and_then(Mode::parse)
}

async fn load_set(ctx: &dyn ToolContext, name: &str) -> ToolResult<Value> {
    let sql = format!("SELECT {SET_COLUMNS} FROM instruction_sets WHERE name = ?1");
    let row = ctx.query(&sql, vec![json!(name)]).await?.into_iter().next();
    match row {
        Some(row) => Ok(row),
        None => {
            let names: Vec<String> = ctx
                .query("SELECT name FROM instruction_sets ORDER BY name", vec![])
                .await?
                .iter()
                .filter_map(|r| r.get("name").and_then(Value::as_str).map(str::to_string))
                .collect();
            Err(ToolError::not_found(format!(
                "instruction set {name:?} does not exist. Available instruction sets: {}. Call list_instruction_sets for descriptions.",
                names.join(", ")
            )))
        }
    }
}

fn brief(set: &Value) -> Value {
    json!({ "name": set["name"], "title": set["title"], "content": set["content"] })
}

fn initialize_travel_assistant(
    ctx: &dyn ToolContext,
    args: Value,
) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let mode = match mode_arg(&args) {
            Some(m) => {
                ctx.platform().session_set(MODE_KEY, m.as_str())?;
                m
            }
            None => current_mode(ctx)?,
        };
        let core = load_set(ctx, "core-travel-assistant").await?;
        let mode_set = load_set(ctx, mode.as_str()).await?;
        let available = ctx
            .query(
                "SELECT name, title, category FROM instruction_sets ORDER BY category, name",
                vec![],
            )
            .await?;
        let greeting = match args.get("agent_name").and_then(Value::as_str) {
            Some(agent) => format!("{} — Travel assistant ready for {agent}.", mode.indicator()),
            None => format!("{} — Travel assistant ready.", mode.indicator()),
        };
        Ok(ToolOutput::Structured(json!({
            "mode": mode.as_str(),
            "indicator": mode.indicator(),
            "greeting": greeting,
            "core_instructions": brief(&core),
            "mode_instructions": brief(&mode_set),
            "available_instruction_sets": available,
        })))
    })
}

fn get_instruction_set(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
        Ok(ToolOutput::Structured(load_set(ctx, name).await?))
    })
}

fn list_instruction_sets(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let rows = match args.get("category").and_then(Value::as_str) {
            Some(c) => {
                ctx.query(
                    "SELECT name, title, category, description, version FROM instruction_sets WHERE category = ?1 ORDER BY name",
                    vec![json!(c)],
                )
                .await?
            }
            None => {
                ctx.query(
                    "SELECT name, title, category, description, version FROM instruction_sets ORDER BY category, name",
                    vec![],
                )
                .await?
            }
        };
        Ok(ToolOutput::Structured(
            json!({ "count": rows.len(), "instruction_sets": rows }),
        ))
    })
}

fn get_mode_indicator(ctx: &dyn ToolContext, _args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move { Ok(ToolOutput::Structured(current_mode(ctx)?.summary())) })
}

fn switch_mode(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let previous = current_mode(ctx)?;
        let mode = mode_arg(&args)
            .ok_or_else(|| ToolError::invalid("mode must be mobile-mode or interactive-mode"))?;
        ctx.platform().session_set(MODE_KEY, mode.as_str())?;
        let mut out = mode.summary();
        out["previous_mode"] = json!(previous.as_str());
        out["changed"] = json!(previous != mode);
        Ok(ToolOutput::Structured(out))
    })
}

/// Session-writing tools change only this session's mode: not destructive, and idempotent.
const SESSION_WRITE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "initialize_travel_assistant",
        title: "Initialize travel assistant",
        description: "Start a travel-agency session: sets the working mode (optional) and returns the core instructions, the instructions of the mode, the mode indicator to show, and the names of all instruction sets. Call this first in a new conversation.",
        annotations: SESSION_WRITE,
        input_schema: include_str!("../../../schema/instructions/initialize_travel_assistant.input.json"),
        output_schema: Some(include_str!("../../../schema/instructions/initialize_travel_assistant.output.json")),
        roles: &[],
        handler: initialize_travel_assistant,
        state: SessionState::Caller,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_instruction_set",
        title: "Get instruction set",
        description: "Return one instruction set by name (e.g. vendor-search, policy-compliance) with its full content, to follow for the current task.",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/instructions/get_instruction_set.input.json"),
        output_schema: Some(include_str!("../../../schema/instructions/get_instruction_set.output.json")),
        roles: &[],
        handler: get_instruction_set,
        cache: Some(CachePolicy::SHARED),
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "list_instruction_sets",
        title: "List instruction sets",
        description: "List the available instruction sets (name, title, category, description, version), optionally only one category: core, mode, workflow, compliance, research or communication.",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/instructions/list_instruction_sets.input.json"),
        output_schema: Some(include_str!("../../../schema/instructions/list_instruction_sets.output.json")),
        roles: &[],
        handler: list_instruction_sets,
        cache: Some(CachePolicy::SHARED),
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_mode_indicator",
        title: "Get mode indicator",
        description: "Return the session's current working mode and the indicator line to show at the top of replies.",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/instructions/get_mode_indicator.input.json"),
        output_schema: Some(include_str!("../../../schema/instructions/get_mode_indicator.output.json")),
        timeout_ms: 5_000,
        roles: &[],
        handler: get_mode_indicator,
        state: SessionState::Caller,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "switch_mode",
        title: "Switch mode",
        description: "Switch the session between mobile-mode (short replies for messaging channels) and interactive-mode (detailed desktop work). Returns the previous and new mode and the new indicator.",
        annotations: SESSION_WRITE,
        input_schema: include_str!("../../../schema/instructions/switch_mode.input.json"),
        output_schema: Some(include_str!("../../../schema/instructions/switch_mode.output.json")),
        timeout_ms: 5_000,
        roles: &[],
        handler: switch_mode,
        state: SessionState::Caller,
        ..ToolDef::DEFAULTS
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_and_have_distinct_indicators() {
        for m in [Mode::Mobile, Mode::Interactive] {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        assert_ne!(Mode::Mobile.indicator(), Mode::Interactive.indicator());
        assert_eq!(Mode::parse("desktop"), None);
    }
}
