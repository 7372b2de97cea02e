//! Pure engines, free of Worker types so `cargo test` runs them natively: the expression language
//! (shared by templates and chain conditions), the template engine and template variables.

pub mod expr;
pub mod template;
pub mod variables;
