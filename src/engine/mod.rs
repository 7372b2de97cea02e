//! Pure engines, free of Worker types so `cargo test` runs them natively: the expression language
//! (shared by templates and chain conditions), the template engine, its output formats, template
//! variables, the chain planner and the chain runner, the chat loop's parsers and decisions, and
//! the semantic matcher (BM25F and a calibrated confidence) behind FlowMind's `field_request`.

pub mod chain;
pub mod chat;
pub mod expr;
pub mod matcher;
pub mod output;
pub mod read;
pub mod run;
pub mod schema;
pub mod sort;
pub mod template;
pub mod variables;

/// `text` cut to its first `max` characters, with `…` when something was cut: so a large value
/// cannot make a large message.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
