//! The session Durable Object's SQLite: protocol state (`meta`), the event log (`events`), tracked
//! jobs (`jobs`) and the chat conversation (`chat_messages`).
//!
//! State lives here rather than in struct fields because any panic or uncaught JS exception resets
//! the wasm instance and wipes Durable Object memory; storage survives. Cursors are always drained
//! with `to_array` (`SqlCursor::one` throws across wasm on zero rows and hangs the request).

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::error::{Error, Result};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        stream TEXT NOT NULL,
        event TEXT NOT NULL,
        data TEXT NOT NULL,
        at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS events_by_stream ON events (stream, seq)",
    "CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        background INTEGER NOT NULL,
        lease_until INTEGER NOT NULL,
        stop TEXT)",
    "CREATE TABLE IF NOT EXISTS chat_messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        at INTEGER NOT NULL)",
];

/// One stored chat message (see `engine::chat::Message`).
#[derive(Debug, Clone, Deserialize)]
pub struct ChatRow {
    /// Position in the conversation.
    pub seq: i64,
    /// `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
    /// When it was stored (ms since the epoch).
    pub at: i64,
}

/// A tracked job (see `registry::Platform::job_start`).
#[derive(Debug, Clone, Deserialize)]
pub struct Job {
    /// The job's id (an execution id).
    pub id: String,
    /// Which toolset hook runs it.
    pub kind: String,
    /// 1 for background jobs, 0 for jobs attached to a call.
    pub background: i64,
}

#[derive(Deserialize)]
struct StopRow {
    stop: Option<String>,
}

#[derive(Deserialize)]
struct LeaseRow {
    lease_until: Option<i64>,
}

/// One logged SSE event.
#[derive(Debug, Clone, Deserialize)]
pub struct LoggedEvent {
    /// Session-wide position.
    pub seq: i64,
    /// `message` for JSON-RPC messages; `tool_call`, `tool_result`, `error` for executor events.
    pub event: String,
    /// The event's data.
    pub data: String,
}

#[derive(Deserialize)]
struct ValueRow {
    value: String,
}

#[derive(Deserialize)]
struct SeqRow {
    seq: i64,
}

/// Typed access to one session's SQLite database.
#[derive(Clone)]
pub struct SessionDb {
    sql: SqlStorage,
}

fn storage_err(what: &str) -> impl Fn(worker::Error) -> Error + '_ {
    move |e| Error::Storage(format!("session storage, {what}: {e}"))
}

impl SessionDb {
    /// Wraps the object's SQL storage and creates the tables if needed (idempotent, synchronous).
    pub fn open(sql: SqlStorage) -> Result<Self> {
        for stmt in SCHEMA {
            sql.exec(stmt, None).map_err(storage_err("create schema"))?;
        }
        Ok(SessionDb { sql })
    }

    /// Reads a meta value.
    pub fn get(&self, key: &str) -> Result<Option<String>> {
        let rows: Vec<ValueRow> = self
            .sql
            .exec("SELECT value FROM meta WHERE key = ?", vec![key.into()])
            .and_then(|c| c.to_array())
            .map_err(storage_err("read meta"))?;
        Ok(rows.into_iter().next().map(|r| r.value))
    }

    /// Removes a meta value.
    pub fn remove(&self, key: &str) -> Result<()> {
        self.sql
            .exec("DELETE FROM meta WHERE key = ?", vec![key.into()])
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("remove meta"))
    }

    /// Writes a meta value.
    pub fn set(&self, key: &str, value: &str) -> Result<()> {
        self.set_all(&[(key, value)])
    }

    /// Writes several meta values in one statement: all of them or none.
    pub fn set_all(&self, pairs: &[(&str, &str)]) -> Result<()> {
        let rows = vec!["(?, ?)"; pairs.len()].join(", ");
        let bindings = pairs
            .iter()
            .flat_map(|(k, v)| [(*k).into(), (*v).into()])
            .collect::<Vec<SqlStorageValue>>();
        self.sql
            .exec(
                &format!(
                    "INSERT INTO meta (key, value) VALUES {rows} ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                ),
                bindings,
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("write meta"))
    }

    /// Increments an integer meta counter and returns its new value.
    pub fn next_counter(&self, key: &str) -> Result<i64> {
        let rows: Vec<ValueRow> = self
            .sql
            .exec(
                "INSERT INTO meta (key, value) VALUES (?, '1')
                 ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
                 RETURNING value",
                vec![key.into()],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("bump counter"))?;
        rows.into_iter()
            .next()
            .and_then(|r| r.value.parse().ok())
            .ok_or_else(|| {
                Error::Storage(format!("session storage: counter {key} returned no value"))
            })
    }

    /// Appends an event and returns its sequence number.
    pub fn append(&self, stream: &str, event: &str, data: &str, at_ms: i64) -> Result<i64> {
        let rows: Vec<SeqRow> = self
            .sql
            .exec(
                "INSERT INTO events (stream, event, data, at) VALUES (?, ?, ?, ?) RETURNING seq",
                vec![
                    stream.into(),
                    event.into(),
                    data.into(),
                    SqlStorageValue::Integer(at_ms),
                ],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("append event"))?;
        rows.into_iter()
            .next()
            .map(|r| r.seq)
            .ok_or_else(|| Error::Storage("session storage: append returned no sequence".into()))
    }

    /// At most `limit` events of one stream after `after_seq` and up to `upto_seq`, oldest first:
    /// one page of a replay, so a resumed stream never loads the whole log at once.
    pub fn replay_page(
        &self,
        stream: &str,
        after_seq: i64,
        upto_seq: i64,
        limit: i64,
    ) -> Result<Vec<LoggedEvent>> {
        self.sql
            .exec(
                "SELECT seq, event, data FROM events WHERE stream = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                vec![
                    stream.into(),
                    SqlStorageValue::Integer(after_seq),
                    SqlStorageValue::Integer(upto_seq),
                    SqlStorageValue::Integer(limit),
                ],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("replay events"))
    }

    /// The newest sequence number in the log (0 when empty).
    pub fn last_seq(&self) -> Result<i64> {
        let rows: Vec<SeqRow> = self
            .sql
            .exec("SELECT COALESCE(MAX(seq), 0) AS seq FROM events", None)
            .and_then(|c| c.to_array())
            .map_err(storage_err("read last sequence"))?;
        Ok(rows.into_iter().next().map(|r| r.seq).unwrap_or(0))
    }

    /// Deletes events older than `before_ms`, and all but the newest `keep` events.
    pub fn prune(&self, before_ms: i64, keep: i64) -> Result<()> {
        self.sql
            .exec(
                "DELETE FROM events WHERE at < ? OR seq <= (SELECT COALESCE(MAX(seq), 0) FROM events) - ?",
                vec![SqlStorageValue::Integer(before_ms), SqlStorageValue::Integer(keep)],
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("prune events"))
    }

    /// Appends chat messages (role, content) in one statement: all of them or none, so the
    /// conversation never holds half of a step.
    pub fn chat_append(&self, messages: &[(&str, &str)], at_ms: i64) -> Result<()> {
        if messages.is_empty() {
            return Ok(());
        }
        let rows = vec!["(?, ?, ?)"; messages.len()].join(", ");
        let bindings = messages
            .iter()
            .flat_map(|(role, content)| {
                [
                    (*role).into(),
                    (*content).into(),
                    SqlStorageValue::Integer(at_ms),
                ]
            })
            .collect::<Vec<SqlStorageValue>>();
        self.sql
            .exec(
                &format!("INSERT INTO chat_messages (role, content, at) VALUES {rows}"),
                bindings,
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("append chat messages"))
    }

    /// The conversation, oldest first.
    pub fn chat_history(&self) -> Result<Vec<ChatRow>> {
        self.sql
            .exec(
                "SELECT seq, role, content, at FROM chat_messages ORDER BY seq",
                None,
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("read chat messages"))
    }

    /// Starts tracking a job whose lease ends at `lease_until` (ms). A job with this id that is
    /// already tracked is replaced (a resumed execution starts a new run).
    pub fn job_insert(
        &self,
        kind: &str,
        id: &str,
        background: bool,
        lease_until: i64,
    ) -> Result<()> {
        self.sql
            .exec(
                "INSERT INTO jobs (id, kind, background, lease_until) VALUES (?, ?, ?, ?)
                 ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, background = excluded.background,
                   lease_until = excluded.lease_until, stop = NULL",
                vec![
                    id.into(),
                    kind.into(),
                    SqlStorageValue::Integer(i64::from(background)),
                    SqlStorageValue::Integer(lease_until),
                ],
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("start job"))
    }

    /// Renews a job's lease; `None` when the job is not tracked, else why it was asked to stop, if
    /// it was.
    pub fn job_renew(&self, id: &str, lease_until: i64) -> Result<Option<Option<String>>> {
        let rows: Vec<StopRow> = self
            .sql
            .exec(
                "UPDATE jobs SET lease_until = ? WHERE id = ? RETURNING stop",
                vec![SqlStorageValue::Integer(lease_until), id.into()],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("renew job lease"))?;
        Ok(rows.into_iter().next().map(|r| r.stop))
    }

    /// Asks a job to stop, saying why; returns its lease end, or `None` when it is not tracked.
    pub fn job_request_stop(&self, id: &str, reason: &str) -> Result<Option<i64>> {
        let rows: Vec<LeaseRow> = self
            .sql
            .exec(
                "UPDATE jobs SET stop = ? WHERE id = ? RETURNING lease_until",
                vec![reason.into(), id.into()],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("stop job"))?;
        Ok(rows.into_iter().next().and_then(|r| r.lease_until))
    }

    /// Asks every job that runs inside a call (not in the background) to stop, saying why: the
    /// call's client went away. Returns those jobs.
    pub fn stop_attached_jobs(&self, reason: &str) -> Result<Vec<Job>> {
        self.sql
            .exec(
                "UPDATE jobs SET stop = ? WHERE background = 0 AND stop IS NULL RETURNING id, kind, background",
                vec![reason.into()],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("stop attached jobs"))
    }

    /// Stops tracking a job.
    pub fn job_delete(&self, id: &str) -> Result<()> {
        self.sql
            .exec("DELETE FROM jobs WHERE id = ?", vec![id.into()])
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("finish job"))
    }

    /// Jobs whose lease ended before `now_ms`.
    pub fn jobs_lapsed(&self, now_ms: i64) -> Result<Vec<Job>> {
        self.sql
            .exec(
                "SELECT id, kind, background FROM jobs WHERE lease_until <= ? ORDER BY lease_until",
                vec![SqlStorageValue::Integer(now_ms)],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("list lapsed jobs"))
    }

    /// Whether job `id` is tracked.
    pub fn job_exists(&self, id: &str) -> Result<bool> {
        let rows: Vec<serde_json::Value> = self
            .sql
            .exec(
                "SELECT 1 AS tracked FROM jobs WHERE id = ?",
                vec![id.into()],
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("read job"))?;
        Ok(!rows.is_empty())
    }

    /// The earliest lease end of any tracked job.
    pub fn next_lease_end(&self) -> Result<Option<i64>> {
        let rows: Vec<LeaseRow> = self
            .sql
            .exec("SELECT MIN(lease_until) AS lease_until FROM jobs", None)
            .and_then(|c| c.to_array())
            .map_err(storage_err("read job leases"))?;
        Ok(rows.into_iter().next().and_then(|r| r.lease_until))
    }
}
