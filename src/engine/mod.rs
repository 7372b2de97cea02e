//! Pure engines, free of Worker types so `cargo test` runs them natively: the expression language
//! (shared by templates and chain conditions) and the template engine.

pub mod expr;
pub mod template;
