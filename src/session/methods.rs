//! Requests and notifications answered at once (everything but `initialize` and `tools/call`).

use serde_json::{json, Value};

use super::Core;
use crate::error::{Error, Result};
use crate::mcp::logging::LogLevel;
use crate::mcp::message::{params_object, required_str};
use crate::registry::{Caller, Tool};
use crate::tools;
use crate::tools::conformance::fixtures;

/// Handles a client notification.
pub fn notification(core: &Core, method: &str, params: Option<&Value>) -> Result<()> {
    match method {
        "notifications/initialized" => core.db.set("initialized", "1"),
        "notifications/cancelled" => {
            if let Some(id) = params.and_then(|p| p.get("requestId")) {
                core.hub.cancel(&id.to_string());
            }
            Ok(())
        }
        // Other notifications (roots/list_changed, progress of client work) need no action.
        _ => Ok(()),
    }
}

/// Answers a request that completes without streaming; `tools/list` shows the tools `caller`'s
/// roles allow that `visible` also accepts (FlowMind's progressive authorization).
pub fn request(
    core: &Core,
    method: &str,
    params: Option<&Value>,
    caller: &Caller,
    visible: &dyn Fn(&Tool) -> bool,
) -> Result<Value> {
    let p = params_object(params);
    match method {
        "ping" => Ok(json!({})),
        "tools/list" => core
            .registry
            .tools_list(&p, core.cfg.tools_page_size, caller, visible),
        "logging/setLevel" => {
            let level = LogLevel::parse(required_str(&p, "level")?)?;
            core.db.set("log_level", level.as_str())?;
            Ok(json!({}))
        }
        "resources/list" => {
            if !matches!(p.get("cursor"), None | Some(Value::Null)) {
                return Err(Error::InvalidParams(
                    "Invalid params: resources/list has one page; call it without a cursor".into(),
                ));
            }
            let mut resources = tools::resources();
            if core.cfg.catalog.has_fixtures() {
                resources.extend(
                    fixtures::resources()
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            Ok(json!({ "resources": resources }))
        }
        "resources/read" => match tools::read_resource(required_str(&p, "uri")?) {
            Some(contents) => Ok(contents),
            None if core.cfg.catalog.has_fixtures() => fixtures::request(method, &p),
            None => Err(Error::ResourceNotFound(format!(
                "Resource not found: {}; resources/list shows the available URIs",
                required_str(&p, "uri")?
            ))),
        },
        m if core.cfg.catalog.has_fixtures() => fixtures::request(m, &p),
        m => Err(Error::MethodNotFound(format!(
            "{m} is not served by this server"
        ))),
    }
}
