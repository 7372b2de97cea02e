//! The 2026-07-28 (modern, stateless) lane of `/mcp`: every request stands alone. It is served in
//! the Worker itself, with no session object: the envelope is checked (`mcp::modern`), then the
//! request is answered by the one server (`crate::server`) the 2025 session lane uses too; this
//! lane adds only what a request without a session needs for `tools/call`.
//!
//! What a session used to carry travels with the request instead: the protocol version, client
//! capabilities and log level in `_meta`; answers the server asked for in `inputResponses`, with
//! the answers of earlier rounds in a sealed, single-use `requestState` (`mcp::request_state`).
//! Tools that keep state (chain executions, the travel assistant's mode) run in Durable Objects
//! of their own, owned by the signed-in user or an anonymous caller's sealed id (`runs`,
//! `anonymous`).
//!
//! `subscriptions/listen` streams are held by a `Listeners` object per caller
//! (`server::listen`), so that changes made by other requests reach them.

mod anonymous;
mod call;
mod idempotency;
mod platform;
mod runs;

use std::rc::Rc;

use serde_json::{json, Map, Value};
use worker::{Env, Request, Response};

use crate::edge::config::Config;
use crate::edge::http::{header, json_response};
use crate::error::{Error, Result};
use crate::mcp::message::response;
use crate::mcp::modern::{self, Message, Mirrored};
use crate::mcp::subscriptions;
use crate::registry::task::{Step, TaskRun, TaskSupport};
use crate::registry::Caller;
use crate::server::listen;
use crate::server::{tasks, Deployment, Era, Host, Policy, Prepared};
use crate::tools::conformance::fixtures;

/// The policy of this lane's answers.
const POLICY: Policy = Policy::of(Era::Modern);

/// The server's [`Host`] in this lane: a request stands alone, so an anonymous caller has no
/// FlowMind count (a beginner) and no log level to keep.
pub(crate) struct Lane(Deployment);

impl Host for Lane {
    fn era(&self) -> Era {
        Era::Modern
    }

    fn deployment(&self) -> &Deployment {
        &self.0
    }
}

/// Serves a POST of the modern era. `body` is the parsed body, or the parse error.
pub async fn serve(
    req: &Request,
    env: &Env,
    cfg: &Rc<Config>,
    caller: &Caller,
    body: std::result::Result<Value, Error>,
) -> Result<Response> {
    let body = match body {
        Ok(b) => b,
        Err(e) => return POLICY.refuse(None, &e),
    };
    let mirrored = Mirrored {
        version: header(req, "mcp-protocol-version"),
        method: header(req, "mcp-method"),
        name: header(req, "mcp-name"),
        params: req
            .headers()
            .entries()
            .filter_map(|(k, v)| {
                let k = k.to_ascii_lowercase();
                k.strip_prefix("mcp-param-").map(|n| (n.to_string(), v))
            })
            .collect(),
    };
    let r = match modern::check(body, &mirrored) {
        Ok(Message::Request(r)) => r,
        Ok(Message::Notification) => return Ok(Response::empty()?.with_status(202)),
        Err((id, e)) => return POLICY.refuse(id.as_ref(), &e),
    };
    let registry = crate::store::registry(cfg.catalog)?;
    let id = r.id.clone();
    if let Some(change) = conformance_hook(cfg, &r) {
        let answer = listen::trigger(env, &listen::owner_of(caller, req), change).await;
        return POLICY.reply(&id, &r.params, answer);
    }
    let host = Lane(Deployment::new(env, cfg.clone(), registry));
    let stateful = |r: &modern::Request| {
        r.params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| host.registry().get(n))
            .is_some_and(|t| t.def.keeps_session_state())
    };
    if let Some(reply) = tasks_answer(req, env, &host, caller, &r).await {
        return reply;
    }
    match r.method.as_str() {
        "subscriptions/listen" => match listen::open(env, cfg, caller, req, &r).await {
            Ok(resp) => Ok(resp),
            Err(e) => POLICY.refuse(Some(&id), &e),
        },
        "tools/call" if stateful(&r) => {
            let platform = match platform::open(env, &host, req, &r, caller).await {
                Ok(p) => p,
                Err(e) => return POLICY.refuse(Some(&id), &e),
            };
            let owner = match anonymous::owner(&platform, caller, req) {
                Ok(owner) => owner,
                Err(e) => return POLICY.refuse(Some(&id), &e),
            };
            match runs::call(env, platform, caller, &owner, &r, req.inner().signal()).await {
                Ok(resp) => Ok(resp),
                Err(e) => POLICY.refuse(Some(&id), &e),
            }
        }
        "tools/call" => {
            let prepared = match crate::server::prepare_call(&host, caller, &r.params).await {
                Ok(Prepared::Refused(refused)) => {
                    return json_response(&response(&id, POLICY.complete(refused)), 200)
                }
                Ok(Prepared::Run { tool, args, meta }) => Ok((tool.def.name, args, meta)),
                Err(e) => Err(e),
            };
            let platform = match platform::open(env, &host, req, &r, caller).await {
                Ok(p) => p,
                Err(e) => return POLICY.refuse(Some(&id), &e),
            };
            // A bad `eventsSession` is told before an unknown tool, as it always was.
            match prepared {
                Ok(run) => {
                    let signal = req.inner().signal();
                    call::tools_call(host, platform, r, run, &mirrored, caller.clone(), signal)
                        .await
                }
                Err(e) => POLICY.refuse(Some(&id), &e),
            }
        }
        "prompts/get"
            if cfg.catalog.has_fixtures()
                && r.params.get("name").and_then(Value::as_str) == Some(fixtures::INPUT_PROMPT) =>
        {
            let platform = match platform::open(env, &host, req, &r, caller).await {
                Ok(p) => p,
                Err(e) => return POLICY.refuse(Some(&id), &e),
            };
            match call::input_prompt(&platform, &r, caller).await {
                Ok(result) => json_response(&response(&id, result), 200),
                Err(e) => POLICY.refuse(Some(&id), &e),
            }
        }
        method => {
            let answer = crate::server::answer(&host, caller, method, &r.params).await;
            POLICY.reply(&id, &r.params, answer)
        }
    }
}

/// What the tasks extension (`server::tasks`) answers (`None`: the request goes on as before):
/// `tasks/get|update|cancel`, refused (-32021) to requests that did not declare the extension;
/// and `tools/call` of a tool that runs as a scripted task, which creates the task when the
/// request declared the extension and is refused when the tool runs only as one.
async fn tasks_answer(
    req: &Request,
    env: &Env,
    host: &Lane,
    caller: &Caller,
    r: &modern::Request,
) -> Option<Result<Response>> {
    let declared = tasks::declared(&r.capabilities);
    let id = &r.id;
    let refuse = |what: &str| {
        let mut reply = json!({ "jsonrpc": "2.0", "id": id.as_value(), "error": tasks::missing_extension(what) });
        if let Some(Value::Object(m)) = reply.get_mut("error") {
            m.retain(|_, v| !v.is_null());
        }
        json_response(&reply, 400)
    };
    if tasks::object_method(&r.method).is_some() {
        if !declared {
            return Some(refuse(&r.method));
        }
        let chain = tasks::task_id(&r.params).is_ok_and(tasks::is_chain_task);
        let answer = match chain {
            false => runs::task(env, caller, None, r).await,
            true => match owner_of(req, env, host, caller, r).await {
                Ok((platform, owner)) => {
                    runs::task(env, caller, Some((&platform, &owner)), r).await
                }
                Err(e) => Err(e),
            },
        };
        return Some(match answer {
            Ok(result) => json_response(&response(id, result), 200),
            Err(e) => POLICY.refuse(Some(id), &e),
        });
    }
    if r.method != "tools/call" {
        return None;
    }
    let name = r.params.get("name").and_then(Value::as_str)?;
    let support = host.registry().get_for(name, caller)?.def.task;
    let script = match support.run() {
        Some(TaskRun::Script(script)) => script,
        // A retry with a requestState continues the rounds of a call that was not a task.
        Some(TaskRun::Chain(background) | TaskRun::Linked(background, _))
            if declared && !r.params.contains_key("requestState") =>
        {
            let answer = match owner_of(req, env, host, caller, r).await {
                Ok((platform, owner)) => {
                    runs::create_chain_task(env, &platform, caller, &owner, background, r).await
                }
                Err(e) => Err(e),
            };
            return Some(match answer {
                Ok(reply) => json_response(&reply, 200),
                Err(e) => POLICY.refuse(Some(id), &e),
            });
        }
        _ => return None,
    };
    if !declared {
        return matches!(support, TaskSupport::Required(_))
            .then(|| refuse(&format!("tools/call {name}")));
    }
    let (args, answers) = match crate::server::prepare_call(host, caller, &r.params).await {
        Ok(Prepared::Refused(refused)) => {
            return Some(json_response(&response(id, POLICY.complete(refused)), 200))
        }
        Ok(Prepared::Run { args, .. }) => {
            let answers: Map<String, Value> = r
                .params
                .get("inputResponses")
                .and_then(Value::as_object)
                .map(|m| {
                    crate::engine::sort::object(
                        m.iter()
                            .filter(|(_, v)| v.is_object())
                            .map(|(k, v)| (k.clone(), v.clone())),
                    )
                })
                .unwrap_or_default();
            (args, answers)
        }
        Err(e) => return Some(POLICY.refuse(Some(id), &e)),
    };
    // Questions the call asks in its own rounds, before a task exists (SEP-2663 composition).
    if let Step::Rounds(asked) = script(&args, &answers) {
        let result = json!({ "resultType": "input_required", "inputRequests": asked });
        return Some(json_response(&response(id, result), 200));
    }
    Some(
        match runs::create_task(env, caller, name, args, answers).await {
            Ok(created) => json_response(&response(id, created), 200),
            Err(e) => POLICY.refuse(Some(id), &e),
        },
    )
}

/// The platform of request `r` and the user its runs and chain tasks belong to (the signed-in
/// user, or an anonymous caller's sealed id).
async fn owner_of(
    req: &Request,
    env: &Env,
    host: &Lane,
    caller: &Caller,
    r: &modern::Request,
) -> Result<(platform::StatelessPlatform, String)> {
    let platform = platform::open(env, host, req, r, caller).await?;
    let owner = anonymous::owner(&platform, caller, req)?;
    Ok((platform, owner))
}

/// The change a `tools/call` of the conformance catalog's diagnostic hooks announces
/// (`listen::hook`); `None` for every other request and in the production catalog.
fn conformance_hook(cfg: &Config, r: &modern::Request) -> Option<subscriptions::Change> {
    if !cfg.catalog.has_fixtures() || r.method != "tools/call" {
        return None;
    }
    r.params
        .get("name")
        .and_then(Value::as_str)
        .and_then(listen::hook)
}

#[cfg(test)]
mod tests {
    use crate::tools::Catalog;

    #[test]
    fn session_state_and_backoff_are_declared_on_the_tools() {
        let registry = crate::registry::Registry::new(crate::tools::catalog(Catalog::Production))
            .expect("the production registry builds");
        let keeps: Vec<&str> = registry
            .tools()
            .filter(|t| t.def.keeps_session_state())
            .map(|t| t.def.name)
            .collect();
        for name in [
            "execute_chain",
            "get_chain_status",
            "resume_chain",
            "cancel_chain",
            "execute_workflow",
            "initialize_travel_assistant",
            "switch_mode",
            "get_mode_indicator",
        ] {
            assert!(keeps.contains(&name), "{name} keeps no session state");
        }
        assert_eq!(keeps.len(), 8, "{keeps:?}");
        let backs_off = |n: &str| registry.get(n).is_some_and(|t| t.def.progressive_backoff);
        assert!(backs_off("field_request") && !backs_off("get_help"));
    }

    #[test]
    fn only_calls_that_may_write_are_deduplicated() {
        let registry = crate::registry::Registry::new(crate::tools::catalog(Catalog::Production))
            .expect("the production registry builds");
        let writes = |n: &str, args: serde_json::Value| {
            registry
                .get(n)
                .expect("the tool exists")
                .def
                .may_write(&args)
        };
        let render = serde_json::json!({ "template_name": "t", "variables": {} });
        assert!(!writes("process_template", render.clone()));
        let mut recorded = render;
        recorded["processing_options"] = serde_json::json!({ "include_metadata": true });
        assert!(
            writes("process_template", recorded),
            "include_metadata records the processing"
        );
        assert!(writes("update_salary", serde_json::json!({})));
        assert!(!writes("get_instruction_set", serde_json::json!({})));
    }
}
