//! Pure engines, free of Worker types so `cargo test` runs them natively: the expression language
//! (shared by templates and chain conditions), the template engine, its output formats, template variables, the chain planner and the chain runner, and the chat loop's parsers and decisions.

pub mod chain;
pub mod chat;
pub mod expr;
pub mod output;
pub mod run;
pub mod template;
pub mod variables;
