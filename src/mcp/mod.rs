//! The MCP protocol: messages, versions, lifecycle and the SSE framing of Streamable HTTP.

pub mod logging;
pub mod message;
pub mod modern;
pub mod request_state;
pub mod sse;
pub mod subscriptions;
pub mod version;

use serde_json::{json, Map, Value};

use crate::error::Result;
use crate::tools::Catalog;
use message::{optional_object, required_str};

/// `serverInfo.name`.
pub const SERVER_NAME: &str = "mcp-edge";

/// `serverInfo.version`: the crate version.
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Shown to the model after `initialize` (and in `server/discover`).
pub const INSTRUCTIONS: &str = "mcp-edge serves several toolsets; tools/list shows the ones your \
roles allow. Travel assistant: start with initialize_travel_assistant, follow the instruction sets it \
names (get_instruction_set) and keep the mode indicator at the top of replies; search_flights and \
list_events reach the travel APIs. Templates and chains: process_template renders stored templates, \
execute_chain runs multi-step workflows (get_chain_status, resume_chain, cancel_chain follow a run). \
Company data (HR, finance, sales, support) answers per your roles, and writes ask a person to confirm. \
Not sure which workflow fits? field_request finds it from a short description; get_help explains \
errors. EPIC-TIDE (epic-tide-*) records works, paths and attempts so projects improve over time.";

/// What the server implements, and nothing more: tools, logging and resources (the EPIC-TIDE
/// vocabulary); subscriptions, prompts and completions exist only as conformance fixtures, so only
/// the conformance catalog declares them. `tools.listChanged`: a caller's tool list grows as FlowMind's
/// progressive authorization unlocks tools (`server::levels`).
pub fn capabilities(catalog: Catalog) -> Value {
    // 2025-11-25 tasks (server::tasks): execute_chain runs as one in every catalog
    // (docs/decisions.md, "Tasks on both eras"). `tasks/list` lists scripted tasks, which only
    // the conformance fixtures create, so only that catalog declares it.
    let mut caps = json!({
        "tools": { "listChanged": true },
        "logging": {},
        "resources": { "listChanged": false },
        "tasks": { "cancel": {}, "requests": { "tools": { "call": {} } } },
    });
    if catalog.has_fixtures() {
        caps["tasks"]["list"] = json!({});
        caps["resources"] = json!({ "subscribe": true, "listChanged": false });
        caps["prompts"] = json!({ "listChanged": false });
        caps["completions"] = json!({});
    }
    caps
}

/// The parts of `initialize` params the server keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Initialize {
    /// The version the client asked for.
    pub requested_version: String,
    /// The client's declared capabilities.
    pub client_capabilities: Value,
    /// `clientInfo` as sent.
    pub client_info: Value,
}

impl Initialize {
    /// Reads `initialize` params; missing or mistyped fields are `-32602` naming the field.
    pub fn from_params(params: &Map<String, Value>) -> Result<Self> {
        Ok(Initialize {
            requested_version: required_str(params, "protocolVersion")?.to_string(),
            client_capabilities: optional_object(params, "capabilities")?,
            client_info: optional_object(params, "clientInfo")?,
        })
    }

    /// The negotiated version: the requested one if supported, else our latest.
    pub fn negotiated(&self) -> &'static str {
        version::negotiate(&self.requested_version)
    }

    /// The `InitializeResult`.
    pub fn result(&self, catalog: Catalog) -> Value {
        json!({
            "protocolVersion": self.negotiated(),
            "capabilities": capabilities(catalog),
            "serverInfo": { "name": SERVER_NAME, "title": "mcp-edge", "version": SERVER_VERSION },
            "instructions": INSTRUCTIONS,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_negotiates_and_declares_only_what_exists() {
        let p = json!({"protocolVersion": "1900-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        let init = Initialize::from_params(p.as_object().unwrap()).unwrap();
        let r = init.result(Catalog::Production);
        assert_eq!(r["protocolVersion"], version::LATEST);
        assert_eq!(
            r["capabilities"]["resources"],
            json!({ "listChanged": false })
        );
        assert!(r["capabilities"].get("prompts").is_none());
        assert_eq!(
            r["capabilities"]["tasks"],
            json!({ "cancel": {}, "requests": { "tools": { "call": {} } } }),
            "execute_chain runs as a task; only the fixtures' tasks are listed"
        );
        assert!(capabilities(Catalog::Conformance)["tasks"]
            .get("list")
            .is_some());
        assert_eq!(r["serverInfo"]["name"], SERVER_NAME);
        assert!(Catalog::Conformance.has_fixtures());
        assert!(capabilities(Catalog::Conformance).get("prompts").is_some());
    }

    #[test]
    fn initialize_requires_a_version() {
        let e =
            Initialize::from_params(json!({"capabilities": {}}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.rpc_code(), -32602);
    }
}
