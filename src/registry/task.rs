//! What a tool declares about running as an MCP task (`ToolDef::task`): whether it may or must,
//! what runs the task, and (for a chain run) how the call's arguments ask for the background run.
//! The task itself (its record, states and wire shapes) is `server::tasks`'.

use futures::future::LocalBoxFuture;
use serde_json::{Map, Value};

use crate::registry::{ToolContext, ToolResult};

/// Whether and how a tool runs as a task, for clients that declared tasks (the 2026-07-28
/// extension `io.modelcontextprotocol/tasks`, or 2025-11-25 `capabilities.tasks`).
#[derive(Debug, Clone, Copy)]
pub enum TaskSupport {
    /// Never a task: the call is answered when it ends.
    Forbidden,
    /// A task for clients that declared tasks; synchronous for the others.
    Optional(TaskRun),
    /// Only as a task: a client that did not declare tasks is refused (-32021).
    Required(TaskRun),
}

impl TaskSupport {
    /// What runs the task, when the tool may be one.
    pub fn run(self) -> Option<TaskRun> {
        match self {
            TaskSupport::Forbidden => None,
            TaskSupport::Optional(run) | TaskSupport::Required(run) => Some(run),
        }
    }

    /// The 2025-11-25 `execution.taskSupport` value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional(_) => "optional",
            TaskSupport::Required(_) => "required",
        }
    }
}

/// What runs a tool's task.
#[derive(Debug, Clone, Copy)]
pub enum TaskRun {
    /// A chain execution in the background: the task is the execution record, its id the
    /// execution id (`execute_chain`, `resume_chain`).
    Chain(Background),
    /// Like [`TaskRun::Chain`], for a chain the tool's toolset built and runs itself
    /// (`tools::chains::run_linked`: FlowMind's `execute_workflow`), whose ended task's result is
    /// the toolset's own answer, rendered by the [`Render`] hook.
    Linked(Background, Render),
    /// A script: what the task does next, from the call's arguments and the answers it has
    /// (the conformance fixtures, whose work is a wait and whose results are known up front).
    Script(Script),
}

/// A chain tool's call arguments rewritten for a call as a task: the run goes on in the
/// background and is tracked, whatever the call asked, because the task is the execution record.
/// Each tool says it in its own schema's terms, so the rewrite is declared with the tool.
pub type Background = fn(Value) -> Value;

/// How a toolset answers for an ended execution of a chain it linked (`TaskRun::Linked`): from
/// the context, the execution id and what the toolset kept with the run when it started it
/// (`tools::chains::Linked::kept`), the answer its tool's synchronous call gives.
pub type Render =
    for<'a> fn(&'a dyn ToolContext, &'a str, &'a Value) -> LocalBoxFuture<'a, ToolResult>;

/// A task's script: what the task does next, from the call's arguments and the answers so far.
pub type Script = fn(&Value, &Map<String, Value>) -> Step;

/// What a scripted task does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Before any task exists: ask these questions (key → `{method, params}`) in the call's own
    /// rounds (2026-07-28 `input_required`); the retry's answers come back to the script.
    Rounds(Map<String, Value>),
    /// The task waits for the client's answers to these questions (`input_required`).
    Ask(Map<String, Value>),
    /// The task works for this many milliseconds, then ends this way.
    After(u64, Outcome),
}

/// How a task ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// With the tool's `CallToolResult` (`isError` included: a tool error is a completed task).
    Result(Value),
    /// With a protocol error (`failed`).
    Error {
        /// The JSON-RPC error code.
        code: i64,
        /// The message.
        message: String,
    },
}
