//! Pure engines, free of Worker types so `cargo test` runs them natively: the expression language
//! (shared by templates and chain conditions).

pub mod expr;
