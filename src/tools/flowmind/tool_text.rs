//! The words each tool is found by: `schema/<toolset>/<tool>.context.json`, beside the tool's input
//! schema, holds what the tool is for (`purpose`), the words people use for it (`synonyms`) and
//! requests it answers (`examples`), written from the tool's title, description and schema. The
//! registry's description says how to call a tool; these say how people ask for it, which is what
//! `field_request` matches a request against (issue 23). A test fails when a registered tool has
//! no context text, so a new tool cannot be added without one.

use serde::Deserialize;

use crate::engine::read;

/// A tool's context text.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ToolText {
    /// The tool's MCP name; the file's name without `.context.json`.
    pub tool: String,
    /// What the tool is for, in a sentence.
    pub purpose: String,
    /// Words and phrases people use for it.
    pub synonyms: Vec<String>,
    /// Requests it answers.
    pub examples: Vec<String>,
}

/// The raw `.context.json` of tool `name`, if it has one.
pub fn raw(name: &str) -> Option<&'static str> {
    Some(match name {
        "list_events" => include_str!("../../../schema/calendar/list_events.context.json"),
        "cancel_chain" => include_str!("../../../schema/chains/cancel_chain.context.json"),
        "create_chain" => include_str!("../../../schema/chains/create_chain.context.json"),
        "execute_chain" => include_str!("../../../schema/chains/execute_chain.context.json"),
        "get_chain_status" => include_str!("../../../schema/chains/get_chain_status.context.json"),
        "list_chain_executions" => {
            include_str!("../../../schema/chains/list_chain_executions.context.json")
        }
        "resume_chain" => include_str!("../../../schema/chains/resume_chain.context.json"),
        "get_confirmation" => include_str!("../../../schema/domain/get_confirmation.context.json"),
        "epic-tide-complete-tide" => {
            include_str!("../../../schema/epic_tide/epic-tide-complete-tide.context.json")
        }
        "epic-tide-create-path" => {
            include_str!("../../../schema/epic_tide/epic-tide-create-path.context.json")
        }
        "epic-tide-get-history" => {
            include_str!("../../../schema/epic_tide/epic-tide-get-history.context.json")
        }
        "epic-tide-query-patterns" => {
            include_str!("../../../schema/epic_tide/epic-tide-query-patterns.context.json")
        }
        "epic-tide-save-work" => {
            include_str!("../../../schema/epic_tide/epic-tide-save-work.context.json")
        }
        "epic-tide-start-tide" => {
            include_str!("../../../schema/epic_tide/epic-tide-start-tide.context.json")
        }
        "epic-tide-update-execution" => {
            include_str!("../../../schema/epic_tide/epic-tide-update-execution.context.json")
        }
        "approve_budget" => include_str!("../../../schema/finance/approve_budget.context.json"),
        "delete_invoice" => include_str!("../../../schema/finance/delete_invoice.context.json"),
        "get_budget" => include_str!("../../../schema/finance/get_budget.context.json"),
        "get_budget_summary" => {
            include_str!("../../../schema/finance/get_budget_summary.context.json")
        }
        "get_expense_report" => {
            include_str!("../../../schema/finance/get_expense_report.context.json")
        }
        "list_budgets" => include_str!("../../../schema/finance/list_budgets.context.json"),
        "list_invoices" => include_str!("../../../schema/finance/list_invoices.context.json"),
        "search_flights" => include_str!("../../../schema/flights/search_flights.context.json"),
        "compose_workflow" => {
            include_str!("../../../schema/flowmind/compose_workflow.context.json")
        }
        "evaluate_semantic_condition" => {
            include_str!("../../../schema/flowmind/evaluate_semantic_condition.context.json")
        }
        "execute_workflow" => {
            include_str!("../../../schema/flowmind/execute_workflow.context.json")
        }
        "field_request" => include_str!("../../../schema/flowmind/field_request.context.json"),
        "get_help" => include_str!("../../../schema/flowmind/get_help.context.json"),
        "list_available_contexts" => {
            include_str!("../../../schema/flowmind/list_available_contexts.context.json")
        }
        "delete_employee" => include_str!("../../../schema/hr/delete_employee.context.json"),
        "get_employee" => include_str!("../../../schema/hr/get_employee.context.json"),
        "get_org_chart" => include_str!("../../../schema/hr/get_org_chart.context.json"),
        "get_performance_reviews" => {
            include_str!("../../../schema/hr/get_performance_reviews.context.json")
        }
        "list_employees" => include_str!("../../../schema/hr/list_employees.context.json"),
        "update_salary" => include_str!("../../../schema/hr/update_salary.context.json"),
        "get_instruction_set" => {
            include_str!("../../../schema/instructions/get_instruction_set.context.json")
        }
        "get_mode_indicator" => {
            include_str!("../../../schema/instructions/get_mode_indicator.context.json")
        }
        "initialize_travel_assistant" => {
            include_str!("../../../schema/instructions/initialize_travel_assistant.context.json")
        }
        "list_instruction_sets" => {
            include_str!("../../../schema/instructions/list_instruction_sets.context.json")
        }
        "switch_mode" => include_str!("../../../schema/instructions/switch_mode.context.json"),
        "close_deal" => include_str!("../../../schema/sales/close_deal.context.json"),
        "delete_customer" => include_str!("../../../schema/sales/delete_customer.context.json"),
        "get_customer" => include_str!("../../../schema/sales/get_customer.context.json"),
        "get_pipeline" => include_str!("../../../schema/sales/get_pipeline.context.json"),
        "list_deals" => include_str!("../../../schema/sales/list_deals.context.json"),
        "close_ticket" => include_str!("../../../schema/support/close_ticket.context.json"),
        "get_knowledge_article" => {
            include_str!("../../../schema/support/get_knowledge_article.context.json")
        }
        "search_knowledge_base" => {
            include_str!("../../../schema/support/search_knowledge_base.context.json")
        }
        "search_tickets" => include_str!("../../../schema/support/search_tickets.context.json"),
        "create_template" => include_str!("../../../schema/templates/create_template.context.json"),
        "process_template" => {
            include_str!("../../../schema/templates/process_template.context.json")
        }
        _ => return None,
    })
}

/// The context text of tool `name`; `None` when it has none or its file does not parse (the
/// completeness test rules both out for every registered tool).
pub fn of(name: &str) -> Option<ToolText> {
    tool_text(raw(name)?).ok()
}

/// A context file, read by hand from the parsed `Value` rather than by a derived reader of its own
/// (docs/decisions.md, "Derived readers").
fn tool_text(text: &str) -> read::Read<ToolText> {
    let mut m = read::object(serde_json::from_str(text)?, "ToolText")?;
    Ok(ToolText {
        tool: read::string(read::required(&mut m, "tool")?)?,
        purpose: read::string(read::required(&mut m, "purpose")?)?,
        synonyms: read::list(read::required(&mut m, "synonyms")?, read::string)?,
        examples: read::list(read::required(&mut m, "examples")?, read::string)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::tools::{catalog, Catalog};

    #[test]
    fn every_registered_tool_has_its_context_text() {
        // The conformance fixtures are not the product's tools and need none.
        let registry = Registry::new(catalog(Catalog::Production)).expect("registry");
        {
            for tool in registry.tools() {
                let name = tool.def.name;
                let raw = raw(name).unwrap_or_else(|| {
                    panic!("{name} has no schema/{}/{name}.context.json (and an arm in tool_text::raw)", tool.def.toolset)
                });
                let text: ToolText = serde_json::from_str(raw)
                    .unwrap_or_else(|e| panic!("{name}.context.json: {e}"));
                assert_eq!(
                    tool_text(raw).ok().as_ref(),
                    Some(&text),
                    "{name}: the hand reader"
                );
                assert_eq!(text.tool, name);
                assert!(
                    text.purpose.split_whitespace().count() >= 6,
                    "{name}: purpose"
                );
                assert!(text.synonyms.len() >= 5, "{name}: at least 5 synonyms");
                assert!(
                    text.examples.len() >= 5,
                    "{name}: at least 5 example requests"
                );
                let mut seen = std::collections::HashSet::new();
                for e in &text.examples {
                    assert!(
                        seen.insert(e.to_lowercase()),
                        "{name}: example repeated: {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_context_file_belongs_to_a_registered_tool_in_its_toolset() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/schema");
        let registry = Registry::new(catalog(Catalog::Production)).expect("registry");
        let mut files = 0;
        for dir in std::fs::read_dir(root).expect("schema/") {
            let dir = dir.expect("entry").path();
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for f in entries {
                let path = f.expect("entry").path();
                let file = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                let Some(name) = file.strip_suffix(".context.json") else {
                    continue;
                };
                files += 1;
                let tool = registry.tools().find(|t| t.def.name == name);
                let tool =
                    tool.unwrap_or_else(|| panic!("{}: no registered tool {name}", path.display()));
                assert_eq!(
                    dir.file_name().and_then(|n| n.to_str()),
                    Some(tool.def.toolset),
                    "{name}"
                );
                assert_eq!(
                    raw(name),
                    Some(std::fs::read_to_string(&path).expect("read").as_str()),
                    "{name}: raw() includes another file"
                );
            }
        }
        assert_eq!(
            files,
            registry.tools().count(),
            "one context file per production tool"
        );
    }
}
