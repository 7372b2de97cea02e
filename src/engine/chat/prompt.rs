//! The system prompt of a chat: who the model is talking for, the tools this caller may use (their
//! MCP names, descriptions and input schemas, as `tools/list` gives them), and the text format of a
//! tool call and of the results that come back.

use serde_json::Value;

/// The system prompt for tools given as `tools/list` entries (`name`, `description`,
/// `inputSchema`).
pub fn system_prompt(tools: &[Value]) -> String {
    let mut p = String::from(
        "You are a helpful travel and business assistant. You can use tools of the mcp-edge server.\n\n\
         To call a tool, write a tool call tag in your answer, exactly like this:\n\
         <tool_call name=\"TOOL_NAME\" args={\"argument\":\"value\"}></tool_call>\n\n\
         Rules:\n\
         - name is one of the tools listed below, in double quotes.\n\
         - args is one JSON object matching the tool's input schema, written directly after args= without quotes around it; use args={} when the tool takes no arguments.\n\
         - You may write several tool calls in one answer; they run in parallel. After your tool calls, stop and wait.\n\
         - The results come back in the next message as <tool_result name=\"TOOL_NAME\" status=\"ok\">…</tool_result> (status=\"error\" when the call failed; read the error and correct the call). Never invent a result.\n\
         - When you need no more tools, answer the user in plain text, without any tag.\n",
    );
    if tools.is_empty() {
        p.push_str("\nNo tools are available to this user: answer directly.\n");
        return p;
    }
    p.push_str("\nTools:\n");
    for t in tools {
        let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
        let description = t
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let schema = t.get("inputSchema").cloned().unwrap_or(Value::Null);
        p.push_str(&format!(
            "\n## {name}\n{description}\nInput schema: {schema}\n"
        ));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_each_tool_with_its_schema_and_teaches_the_tag() {
        let p = system_prompt(&[json!({
            "name": "switch_mode",
            "description": "Switch the mode.",
            "inputSchema": {"type":"object","properties":{"mode":{"type":"string"}}}
        })]);
        assert!(p.contains(r#"<tool_call name="TOOL_NAME" args={"argument":"value"}></tool_call>"#));
        assert!(p.contains("## switch_mode\nSwitch the mode.\nInput schema: {\"properties\":{\"mode\":{\"type\":\"string\"}},\"type\":\"object\"}"));
        assert!(p.contains("<tool_result"));
    }

    #[test]
    fn says_so_when_there_are_no_tools() {
        assert!(system_prompt(&[]).contains("No tools are available"));
    }
}
