//! `subscriptions/listen` of 2026-07-28 (`basic/patterns/subscriptions`): the notification filter a
//! client sends, the subset of it the server acknowledges, and the frames of a listen stream. The
//! stream itself lives in `server::listen`.
//!
//! Every message on a listen stream carries the subscription's id (the JSON-RPC id of the
//! `subscriptions/listen` request) in `_meta` under [`META_SUBSCRIPTION_ID`], so a client with
//! several subscriptions can tell them apart.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

/// `_meta` key of the subscription a listen-stream message belongs to.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A change a listen stream can announce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The caller's tool list changed (`toolsListChanged`).
    Tools,
    /// The prompt list changed (`promptsListChanged`).
    Prompts,
}

impl Change {
    /// The notification that announces it.
    pub fn method(self) -> &'static str {
        match self {
            Change::Tools => "notifications/tools/list_changed",
            Change::Prompts => "notifications/prompts/list_changed",
        }
    }

    /// The change a notification method announces, if it is one of these.
    pub fn from_method(method: &str) -> Option<Self> {
        [Change::Tools, Change::Prompts]
            .into_iter()
            .find(|c| c.method() == method)
    }
}

/// What this deployment can deliver on a listen stream: the notifications it would really send.
/// Resource changes are never offered: the resources served (EPIC-TIDE's vocabulary, the
/// conformance fixtures) do not change while a deployment runs, so a subscription to them would
/// promise notifications that never come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offer {
    /// `notifications/tools/list_changed` (FlowMind levels on, or the conformance hook).
    pub tools: bool,
    /// `notifications/prompts/list_changed` (only the conformance catalog's hook).
    pub prompts: bool,
}

/// The notification types a listen stream carries: what the client asked for and the server
/// offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Filter {
    /// `toolsListChanged`.
    pub tools: bool,
    /// `promptsListChanged`.
    pub prompts: bool,
}

impl Filter {
    /// Reads `params.notifications` of a `subscriptions/listen` request and keeps what `offer`
    /// delivers. Fields this server does not know are not an error: the acknowledgement simply
    /// omits them (the specification's rule for unsupported types), so a newer client still gets
    /// a stream. A missing filter, or a known field of the wrong type, is invalid params naming it.
    pub fn from_params(params: &Map<String, Value>, offer: Offer) -> Result<Self> {
        let Some(filter) = params.get("notifications") else {
            return Err(Error::InvalidParams(
                "Invalid params: subscriptions/listen needs params.notifications, an object naming the notifications to receive, e.g. {\"toolsListChanged\": true}".into(),
            ));
        };
        let Some(filter) = filter.as_object() else {
            return Err(Error::InvalidParams(format!(
                "Invalid params: params.notifications must be an object (e.g. {{\"toolsListChanged\": true}}), not {filter}"
            )));
        };
        let flag = |name: &str| -> Result<bool> {
            match filter.get(name) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(v) => Err(Error::InvalidParams(format!(
                    "Invalid params: params.notifications.{name} must be true or false, not {v}"
                ))),
            }
        };
        let tools = flag("toolsListChanged")?;
        let prompts = flag("promptsListChanged")?;
        flag("resourcesListChanged")?;
        match filter.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(uris)) if uris.iter().all(Value::is_string) => {}
            Some(v) => {
                return Err(Error::InvalidParams(format!(
                    "Invalid params: params.notifications.resourceSubscriptions must be an array of resource URIs (strings), not {v}"
                )))
            }
        }
        Ok(Filter {
            tools: tools && offer.tools,
            prompts: prompts && offer.prompts,
        })
    }

    /// Whether the stream carries `change`.
    pub fn wants(self, change: Change) -> bool {
        match change {
            Change::Tools => self.tools,
            Change::Prompts => self.prompts,
        }
    }

    /// The filter as the acknowledgement reports it: only the types honoured.
    pub fn to_json(self) -> Value {
        let mut m = Map::new();
        if self.tools {
            m.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if self.prompts {
            m.insert("promptsListChanged".into(), Value::Bool(true));
        }
        Value::Object(m)
    }

    /// Reads the filter back from [`Filter::to_json`] (what the listen object is sent).
    pub fn from_json(v: &Value) -> Self {
        Filter {
            tools: v.get("toolsListChanged") == Some(&Value::Bool(true)),
            prompts: v.get("promptsListChanged") == Some(&Value::Bool(true)),
        }
    }
}

fn subscription_meta(id: &Value) -> Value {
    json!({ META_SUBSCRIPTION_ID: id })
}

/// `notifications/subscriptions/acknowledged`, the first message of subscription `id`.
pub fn acknowledged(id: &Value, filter: Filter) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": { "_meta": subscription_meta(id), "notifications": filter.to_json() },
    })
}

/// The notification announcing `change` on subscription `id`.
pub fn announcement(id: &Value, change: Change) -> Value {
    json!({ "jsonrpc": "2.0", "method": change.method(), "params": { "_meta": subscription_meta(id) } })
}

/// The response to the `subscriptions/listen` request `id` that ends it gracefully: the server
/// closes the stream after it, and a client that got it knows the end was not a dropped connection.
pub fn closed(id: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": { "resultType": "complete", "_meta": subscription_meta(id) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Offer = Offer {
        tools: true,
        prompts: true,
    };

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_acknowledged_filter_is_what_was_asked_and_is_offered() {
        let asked = params(json!({ "notifications": {
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["epic-tide://vocabulary"], "tasks": true
        }}));
        let f = Filter::from_params(&asked, ALL).unwrap();
        assert_eq!(
            f.to_json(),
            json!({ "toolsListChanged": true, "promptsListChanged": true })
        );
        let tools_only = Filter::from_params(
            &asked,
            Offer {
                tools: true,
                prompts: false,
            },
        )
        .unwrap();
        assert_eq!(tools_only.to_json(), json!({ "toolsListChanged": true }));
        assert!(tools_only.wants(Change::Tools) && !tools_only.wants(Change::Prompts));
        let narrow = Filter::from_params(
            &params(
                json!({ "notifications": {"promptsListChanged": true, "toolsListChanged": false} }),
            ),
            ALL,
        )
        .unwrap();
        assert!(!narrow.wants(Change::Tools));
        assert_eq!(Filter::from_json(&narrow.to_json()), narrow);
        assert_eq!(
            Filter::from_params(&params(json!({ "notifications": {} })), ALL)
                .unwrap()
                .to_json(),
            json!({})
        );
    }

    #[test]
    fn a_missing_or_mistyped_filter_is_invalid_params_naming_the_field() {
        for (p, field) in [
            (json!({}), "params.notifications"),
            (json!({ "notifications": [] }), "params.notifications"),
            (
                json!({ "notifications": { "toolsListChanged": "yes" } }),
                "toolsListChanged",
            ),
            (
                json!({ "notifications": { "resourcesListChanged": 1 } }),
                "resourcesListChanged",
            ),
            (
                json!({ "notifications": { "resourceSubscriptions": "epic-tide://vocabulary" } }),
                "resourceSubscriptions",
            ),
            (
                json!({ "notifications": { "resourceSubscriptions": [1] } }),
                "resourceSubscriptions",
            ),
        ] {
            let e = Filter::from_params(&params(p.clone()), ALL).unwrap_err();
            assert_eq!(e.rpc_code(), -32602, "{p}");
            assert!(e.to_string().contains(field), "{p}: {e}");
        }
    }

    #[test]
    fn every_frame_carries_the_subscription_id() {
        let id = json!("sub-1");
        let f = Filter {
            tools: true,
            prompts: false,
        };
        assert_eq!(
            acknowledged(&id, f)["params"]["_meta"][META_SUBSCRIPTION_ID],
            id
        );
        let n = announcement(&id, Change::Tools);
        assert_eq!(n["method"], "notifications/tools/list_changed");
        assert_eq!(n["params"]["_meta"][META_SUBSCRIPTION_ID], id);
        let end = closed(&json!(7));
        assert_eq!(end["id"], 7);
        assert_eq!(end["result"]["resultType"], "complete");
        assert_eq!(end["result"]["_meta"][META_SUBSCRIPTION_ID], 7);
        assert_eq!(
            Change::from_method("notifications/prompts/list_changed"),
            Some(Change::Prompts)
        );
        assert_eq!(Change::from_method("notifications/message"), None);
    }
}
