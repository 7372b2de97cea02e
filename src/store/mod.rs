//! Adapters to Cloudflare storage: D1 (shared records) and the session Durable Object's SQLite.

pub mod d1;
pub mod session_db;
