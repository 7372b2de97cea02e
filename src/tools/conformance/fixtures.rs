//! Resources, prompts and completions of the conformance suite.

use serde_json::{json, Map, Value};

use super::PNG;
use crate::error::{Error, Result};
use crate::mcp::message::required_str;

const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

/// The fixture resources (`resources/list` entries).
pub fn resources() -> Value {
    json!([
        { "uri": "test://static-text", "name": "static-text", "title": "Static text",
          "description": "A fixed text resource", "mimeType": "text/plain" },
        { "uri": "test://static-binary", "name": "static-binary", "title": "Static binary",
          "description": "A fixed PNG image", "mimeType": "image/png" },
        { "uri": "test://watched-resource", "name": "watched-resource", "title": "Watched resource",
          "description": "A resource clients may subscribe to", "mimeType": "text/plain" }
    ])
}

fn prompts() -> Value {
    json!([
        { "name": "test_simple_prompt", "description": "A prompt without arguments" },
        { "name": "test_prompt_with_arguments", "description": "A prompt with two required arguments",
          "arguments": [
            { "name": "arg1", "description": "First test argument", "required": true },
            { "name": "arg2", "description": "Second test argument", "required": true }
          ] },
        { "name": "test_prompt_with_embedded_resource", "description": "A prompt that embeds a resource",
          "arguments": [{ "name": "resourceUri", "description": "URI of the resource to embed", "required": true }] },
        { "name": "test_prompt_with_image", "description": "A prompt with an image" }
    ])
}

/// These lists fit in one page, so no cursor is ever issued and any cursor is invalid.
fn no_cursor(params: &Map<String, Value>) -> Result<()> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(Error::InvalidParams(
            "Invalid params: this list has one page; call it without a cursor".into(),
        )),
    }
}

fn read(uri: &str) -> Result<Value> {
    let contents = match uri {
        "test://static-text" => {
            json!({ "uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource." })
        }
        "test://static-binary" => json!({ "uri": uri, "mimeType": "image/png", "blob": PNG }),
        "test://watched-resource" => {
            json!({ "uri": uri, "mimeType": "text/plain", "text": "Watched resource content" })
        }
        _ => {
            let id = uri
                .strip_prefix(TEMPLATE_PREFIX)
                .and_then(|rest| rest.strip_suffix(TEMPLATE_SUFFIX))
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .ok_or_else(|| {
                    Error::ResourceNotFound(format!(
                        "Resource not found: {uri}; resources/list shows the available URIs"
                    ))
                })?;
            let body =
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
            json!({ "uri": uri, "mimeType": "application/json", "text": body.to_string() })
        }
    };
    Ok(json!({ "contents": [contents] }))
}

fn get_prompt(params: &Map<String, Value>) -> Result<Value> {
    let name = required_str(params, "name")?;
    let args = params
        .get("arguments")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let arg = |n: &str| -> Result<String> {
        args.get(n)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                Error::InvalidParams(format!(
                    "Invalid params: prompt {name} needs argument {n} (string)"
                ))
            })
    };
    let user = |content: Value| json!({ "role": "user", "content": content });
    let text = |t: &str| json!({ "type": "text", "text": t });
    let messages = match name {
        "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => {
            let (a1, a2) = (arg("arg1")?, arg("arg2")?);
            vec![user(text(&format!(
                "Prompt with arguments: arg1='{a1}', arg2='{a2}'"
            )))]
        }
        "test_prompt_with_embedded_resource" => {
            let uri = arg("resourceUri")?;
            vec![
                user(json!({ "type": "resource", "resource": {
                    "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing." } })),
                user(text("Please process the embedded resource above.")),
            ]
        }
        "test_prompt_with_image" => vec![
            user(json!({ "type": "image", "data": PNG, "mimeType": "image/png" })),
            user(text("Please analyze the image above.")),
        ],
        other => {
            return Err(Error::InvalidParams(format!(
                "Invalid params: unknown prompt {other:?}; prompts/list shows the available prompts"
            )))
        }
    };
    Ok(json!({ "messages": messages }))
}

fn complete(params: &Map<String, Value>) -> Result<Value> {
    let value = params
        .get("argument")
        .and_then(|a| a.get("value"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Error::InvalidParams("Invalid params: argument.value (string) is required".into())
        })?;
    let candidates = ["testValue1", "testValue2", "test", "example"];
    let values: Vec<&str> = candidates
        .into_iter()
        .filter(|c| c.starts_with(value))
        .collect();
    Ok(json!({ "completion": { "values": values, "total": values.len(), "hasMore": false } }))
}

/// The prompt that asks the client for context before it is returned: served only by the
/// 2026-07-28 lane, which can pause a request for input (`stateless::call::input_prompt`).
pub const INPUT_PROMPT: &str = "test_input_required_result_prompt";

/// [`INPUT_PROMPT`] once the client told its `context`.
pub fn input_prompt(context: &str) -> Value {
    json!({
        "description": "A prompt built from context the client provided",
        "messages": [{ "role": "user", "content": { "type": "text", "text": format!("Use this context: {context}") } }]
    })
}

/// Answers a fixture method (resources, prompts, completion).
pub fn request(method: &str, params: &Map<String, Value>) -> Result<Value> {
    match method {
        "resources/list" => no_cursor(params).map(|()| json!({ "resources": resources() })),
        "resources/templates/list" => no_cursor(params).map(|()| {
            json!({ "resourceTemplates": [{
                "uriTemplate": "test://template/{id}/data", "name": "template",
                "description": "A templated resource", "mimeType": "application/json"
            }] })
        }),
        "resources/read" => read(required_str(params, "uri")?),
        "resources/subscribe" | "resources/unsubscribe" => {
            read(required_str(params, "uri")?).map(|_| json!({}))
        }
        "prompts/list" => no_cursor(params).map(|()| json!({ "prompts": prompts() })),
        "prompts/get" => get_prompt(params),
        "completion/complete" => complete(params),
        m => Err(Error::MethodNotFound(format!(
            "{m} is not served by this server"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str, params: Value) -> Result<Value> {
        request(method, params.as_object().unwrap())
    }

    #[test]
    fn template_reads_echo_the_id_as_text() {
        let r = call("resources/read", json!({"uri": "test://template/123/data"})).unwrap();
        assert!(r["contents"][0]["text"].as_str().unwrap().contains("123"));
        assert_eq!(
            call("resources/read", json!({"uri": "test://nope"}))
                .unwrap_err()
                .rpc_code(),
            -32002
        );
    }

    #[test]
    fn prompts_substitute_arguments_and_reject_missing_ones() {
        let r = call(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
        );
        assert!(r.unwrap().to_string().contains("arg1='a', arg2='b'"));
        let e = call(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
        );
        assert_eq!(e.unwrap_err().rpc_code(), -32602);
        assert_eq!(
            call("prompts/get", json!({"name": "nope"}))
                .unwrap_err()
                .rpc_code(),
            -32602
        );
        assert_eq!(
            call("resources/list", json!({"cursor": "x"}))
                .unwrap_err()
                .rpc_code(),
            -32602
        );
    }
}
