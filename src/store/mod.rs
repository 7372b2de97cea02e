//! Adapters to Cloudflare storage and the Worker environment: D1 (shared records), the session
//! Durable Object's SQLite, and the env-backed services tools use.

pub mod d1;
pub mod services;
pub mod session_db;
