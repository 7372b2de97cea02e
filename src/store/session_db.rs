//! The session Durable Object's SQLite: protocol state (`meta`), the event log (`event_log`),
//! tracked jobs (`jobs`) and the chat conversation (`chat_messages`).
//!
//! State lives here rather than in struct fields because any panic or uncaught JS exception resets
//! the wasm instance and wipes Durable Object memory; storage survives. Memory only saves work:
//! meta values once read or written (this instance is the only writer), and events that need not
//! be durable before delivery, written in batches (see `docs/decisions.md`, "Cost per call"). Cursors are always drained
//! with `to_array` (`SqlCursor::one` throws across wasm on zero rows and hangs the request).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use worker::{Delay, SqlStorage, SqlStorageValue};

use super::rows::rows;
use crate::engine::read::{self, Read};
use crate::error::{Error, Result};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    // One row per batch of one stream's events, keyed by the batch's last sequence number. WITHOUT
    // ROWID on the key the replay reads by, so writing an event costs one billed row: no rowid
    // table beside an index and no AUTOINCREMENT counter row (the version before wrote 3).
    "CREATE TABLE IF NOT EXISTS event_log (
        stream TEXT NOT NULL,
        seq INTEGER NOT NULL,
        events TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (stream, seq)) WITHOUT ROWID",
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

/// Meta key of the highest event sequence number reserved: every id handed out is at most this,
/// so an instance that starts after a reset (or a prune that emptied the log) never reuses one.
const SEQ_RESERVED: &str = "event_seq_reserved";
/// Sequence numbers reserved per meta write: one row written per this many events (and one per
/// instance start, which skips what is left of the block before it).
const SEQ_BLOCK: i64 = 1000;
/// How long events that need not be durable before delivery wait to be written, batched.
const FLUSH_AFTER_MS: u64 = 250;

/// One stored chat message (see `engine::chat::Message`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
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

impl ChatRow {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct ChatRow")?;
        Ok(Self {
            seq: read::i64(read::required(&mut m, "seq")?)?,
            role: read::string(read::required(&mut m, "role")?)?,
            content: read::string(read::required(&mut m, "content")?)?,
            at: read::i64(read::required(&mut m, "at")?)?,
        })
    }
}

/// A tracked job (see `registry::Platform::job_start`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
pub struct Job {
    /// The job's id (an execution id).
    pub id: String,
    /// Which toolset hook runs it.
    pub kind: String,
    /// 1 for background jobs, 0 for jobs attached to a call.
    pub background: i64,
}

impl Job {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct Job")?;
        Ok(Self {
            id: read::string(read::required(&mut m, "id")?)?,
            kind: read::string(read::required(&mut m, "kind")?)?,
            background: read::i64(read::required(&mut m, "background")?)?,
        })
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct StopRow {
    stop: Option<String>,
}

impl StopRow {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct StopRow")?;
        Ok(Self {
            stop: read::optional(&mut m, "stop", read::string)?,
        })
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct LeaseRow {
    lease_until: Option<i64>,
}

impl LeaseRow {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct LeaseRow")?;
        Ok(Self {
            lease_until: read::optional(&mut m, "lease_until", read::i64)?,
        })
    }
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
#[cfg_attr(test, derive(Debug, PartialEq))]
struct ValueRow {
    value: String,
}

impl ValueRow {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct ValueRow")?;
        Ok(Self {
            value: read::string(read::required(&mut m, "value")?)?,
        })
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct SeqRow {
    seq: i64,
}

impl SeqRow {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct SeqRow")?;
        Ok(Self {
            seq: read::i64(read::required(&mut m, "seq")?)?,
        })
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct CountRow {
    stream: String,
    seq: i64,
    n: i64,
}

impl CountRow {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct CountRow")?;
        Ok(Self {
            stream: read::string(read::required(&mut m, "stream")?)?,
            seq: read::i64(read::required(&mut m, "seq")?)?,
            n: read::i64(read::required(&mut m, "n")?)?,
        })
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct BatchRow {
    events: String,
}

impl BatchRow {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct BatchRow")?;
        Ok(Self {
            events: read::string(read::required(&mut m, "events")?)?,
        })
    }
}

/// An event handed out but not written yet.
struct Pending {
    stream: String,
    seq: i64,
    event: String,
    data: String,
    at: i64,
}

/// What one instance keeps beside the storage: storage stays the truth, this only saves reads
/// and batches writes, and starts empty after a reset.
#[derive(Default)]
struct Memory {
    /// Meta values read or written by this instance (`None`: known to be unset).
    meta: RefCell<HashMap<String, Option<String>>>,
    /// The last sequence number handed out, once this instance has reserved a block.
    seq: Cell<Option<i64>>,
    /// The end of the block reserved by this instance.
    reserved: Cell<i64>,
    /// Events waiting for the batch write, oldest first.
    pending: RefCell<Vec<Pending>>,
    /// Whether a batch write is scheduled.
    flush_due: Cell<bool>,
}

/// Typed access to one session's SQLite database.
#[derive(Clone)]
pub struct SessionDb {
    sql: SqlStorage,
    mem: Rc<Memory>,
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
        let db = SessionDb {
            sql,
            mem: Rc::default(),
        };
        db.migrate_events()?;
        Ok(db)
    }

    /// Moves the log of an object created by the previous version (`events`: a rowid table with an
    /// index on (stream, seq), AUTOINCREMENT) into `event_log`, one event a row, and reserves its
    /// ids, so a client resuming across the upgrade gets what it missed and no id is reused. All
    /// in one synchronous turn, which the object commits at once.
    fn migrate_events(&self) -> Result<()> {
        let old: Vec<serde_json::Value> = self
            .sql
            .exec(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'events'",
                None,
            )
            .and_then(|c| c.to_array())
            .map_err(storage_err("look for the old event table"))?;
        if old.is_empty() {
            return Ok(());
        }
        self.sql
            .exec(
                "INSERT OR IGNORE INTO event_log (stream, seq, events, at)
                 SELECT stream, seq, json_array(json_array(seq, event, data)), at FROM events",
                None,
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map_err(storage_err("copy the old event table"))?;
        let newest: Vec<SeqRow> = self
            .sql
            .exec("SELECT COALESCE(MAX(seq), 0) AS seq FROM events", None)
            .and_then(|c| rows(c, SeqRow::read))
            .map_err(storage_err("read the old event table"))?;
        // AUTOINCREMENT's counter also covers ids whose rows were pruned; unreadable, the newest
        // row is the best bound there is.
        let counted: Vec<SeqRow> = self
            .sql
            .exec(
                "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
                None,
            )
            .and_then(|c| rows(c, SeqRow::read))
            .unwrap_or_default();
        let high = newest
            .iter()
            .chain(&counted)
            .map(|r| r.seq)
            .max()
            .unwrap_or(0)
            .max(self.stored_reservation()?);
        self.set(SEQ_RESERVED, &high.to_string())?;
        self.sql
            .exec("DROP TABLE events", None)
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("drop the old event table"))
    }

    /// Reads a meta value (from this instance's memory once read or written).
    pub fn get(&self, key: &str) -> Result<Option<String>> {
        if let Some(known) = self.mem.meta.borrow().get(key) {
            return Ok(known.clone());
        }
        let rows: Vec<ValueRow> = self
            .sql
            .exec("SELECT value FROM meta WHERE key = ?", vec![key.into()])
            .and_then(|c| rows(c, ValueRow::read))
            .map_err(storage_err("read meta"))?;
        let value = rows.into_iter().next().map(|r| r.value);
        self.remember(key, value.clone());
        Ok(value)
    }

    fn remember(&self, key: &str, value: Option<String>) {
        self.mem.meta.borrow_mut().insert(key.to_string(), value);
    }

    /// Removes a meta value, from memory too (an ended session is told apart by its missing
    /// `created_at`, so a remembered value would keep answering for it).
    pub fn remove(&self, key: &str) -> Result<()> {
        let removed = self
            .sql
            .exec("DELETE FROM meta WHERE key = ?", vec![key.into()])
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("remove meta"));
        // Whether or not the delete landed, storage answers the next read.
        self.mem.meta.borrow_mut().remove(key);
        removed
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
        let written = self
            .sql
            .exec(
                &format!(
                    "INSERT INTO meta (key, value) VALUES {rows} ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                ),
                bindings,
            )
            .and_then(|c| c.to_array::<serde_json::Value>());
        // Unsure whether a failed write landed, memory forgets the keys and storage answers next.
        for (k, v) in pairs {
            match written {
                Ok(_) => self.remember(k, Some((*v).to_string())),
                Err(_) => drop(self.mem.meta.borrow_mut().remove(*k)),
            }
        }
        written.map(drop).map_err(storage_err("write meta"))
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
            .and_then(|c| rows(c, ValueRow::read))
            .map_err(|e| {
                self.mem.meta.borrow_mut().remove(key);
                storage_err("bump counter")(e)
            })?;
        let value = rows.into_iter().next().map(|r| r.value);
        self.remember(key, value.clone());
        value.and_then(|v| v.parse().ok()).ok_or_else(|| {
            Error::Storage(format!("session storage: counter {key} returned no value"))
        })
    }

    /// Forgets what this instance holds in memory: its meta values and the events not written yet
    /// (the session's storage is being deleted).
    pub fn close(&self) {
        self.mem.meta.borrow_mut().clear();
        self.mem.pending.borrow_mut().clear();
        self.mem.seq.set(None);
        self.mem.reserved.set(0);
    }

    fn stored_reservation(&self) -> Result<i64> {
        Ok(self
            .get(SEQ_RESERVED)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// The next sequence number, reserving a block durably (one meta row) when this instance has
    /// none left: a crash leaves gaps, never a reused id.
    fn next_seq(&self) -> Result<i64> {
        let last = match self.mem.seq.get() {
            Some(last) => last,
            None => self.stored_reservation()?,
        };
        let next = last + 1;
        if self.mem.seq.get().is_none() || next > self.mem.reserved.get() {
            let reserved = next - 1 + SEQ_BLOCK;
            self.set(SEQ_RESERVED, &reserved.to_string())?;
            self.mem.reserved.set(reserved);
        }
        self.mem.seq.set(Some(next));
        Ok(next)
    }

    /// Appends an event and returns its sequence number. A `durable` event is written now, with
    /// the events of its stream still waiting, in one row; any other waits up to
    /// [`FLUSH_AFTER_MS`] and is written in one row with the others that came meanwhile.
    pub fn append(
        &self,
        stream: &str,
        event: &str,
        data: &str,
        at_ms: i64,
        durable: bool,
    ) -> Result<i64> {
        let seq = self.next_seq()?;
        let ev = Pending {
            stream: stream.to_string(),
            seq,
            event: event.to_string(),
            data: data.to_string(),
            at: at_ms,
        };
        if durable {
            let mut batch = self.take_pending(Some(stream));
            batch.push(ev);
            if let Err(e) = self.write_batch(&batch) {
                // The waiting events keep waiting; the new one was never delivered.
                batch.pop();
                self.mem.pending.borrow_mut().splice(0..0, batch);
                return Err(e);
            }
        } else {
            self.mem.pending.borrow_mut().push(ev);
            self.schedule_flush();
        }
        Ok(seq)
    }

    fn take_pending(&self, stream: Option<&str>) -> Vec<Pending> {
        let mut pending = self.mem.pending.borrow_mut();
        let (taken, kept) = std::mem::take(&mut *pending)
            .into_iter()
            .partition(|p| stream.is_none_or(|s| p.stream == s));
        *pending = kept;
        taken
    }

    fn schedule_flush(&self) {
        if self.mem.flush_due.replace(true) {
            return;
        }
        let db = self.clone();
        wasm_bindgen_futures::spawn_local(async move {
            Delay::from(Duration::from_millis(FLUSH_AFTER_MS)).await;
            db.mem.flush_due.set(false);
            if let Err(e) = db.flush() {
                crate::log::error!("events not logged: {e}");
            }
        });
    }

    /// Writes every waiting event, one row per stream.
    pub fn flush(&self) -> Result<()> {
        let mut all = self.take_pending(None);
        while !all.is_empty() {
            let stream = all[0].stream.clone();
            let (batch, rest): (Vec<_>, Vec<_>) = all.into_iter().partition(|p| p.stream == stream);
            self.write_batch(&batch)?;
            all = rest;
        }
        Ok(())
    }

    /// One row holding `batch` (events of one stream, oldest first), keyed by its last event.
    fn write_batch(&self, batch: &[Pending]) -> Result<()> {
        let Some(last) = batch.last() else {
            return Ok(());
        };
        // `[[seq, event, data], …]`, printed straight from the batch (no copy of each event).
        let events = serde_json::to_string(
            &batch
                .iter()
                .map(|p| (p.seq, &p.event, &p.data))
                .collect::<Vec<_>>(),
        )?;
        self.sql
            .exec(
                "INSERT INTO event_log (stream, seq, events, at) VALUES (?, ?, ?, ?)",
                vec![
                    last.stream.as_str().into(),
                    SqlStorageValue::Integer(last.seq),
                    events.into(),
                    SqlStorageValue::Integer(last.at),
                ],
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(drop)
            .map_err(storage_err("append events"))
    }

    /// The events of `stream` after `after_seq` that are not written yet, oldest first: all newer
    /// than any row of the stream, so they follow a replay that reads up to [`Self::replay_upto`].
    pub fn pending_after(&self, stream: &str, after_seq: i64) -> Vec<LoggedEvent> {
        self.mem
            .pending
            .borrow()
            .iter()
            .filter(|p| p.stream == stream && p.seq > after_seq)
            .map(|p| LoggedEvent {
                seq: p.seq,
                event: p.event.clone(),
                data: p.data.clone(),
            })
            .collect()
    }

    /// Where a replay of `stream` taken now ends: before its first event not written yet (those
    /// come from [`Self::pending_after`], and a row written later holds only them and newer), else
    /// at the last event handed out.
    pub fn replay_upto(&self, stream: &str) -> Result<i64> {
        let first_pending = self
            .mem
            .pending
            .borrow()
            .iter()
            .find(|p| p.stream == stream)
            .map(|p| p.seq);
        match first_pending {
            Some(seq) => Ok(seq - 1),
            None => self.last_seq(),
        }
    }

    /// At most `limit` of one stream's events after `after_seq` and up to `upto_seq`, oldest
    /// first: one page of a replay, so a resumed stream never loads the whole log at once. Rows are
    /// read only until the page is full ([`page_of`]).
    pub fn replay_page(
        &self,
        stream: &str,
        after_seq: i64,
        upto_seq: i64,
        limit: i64,
    ) -> Result<Vec<LoggedEvent>> {
        // Each row holds at least one event after `after_seq` (its key), so `limit` rows fill a
        // page.
        let cursor = self
            .sql
            .exec(
                "SELECT events FROM event_log WHERE stream = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                vec![
                    stream.into(),
                    SqlStorageValue::Integer(after_seq),
                    SqlStorageValue::Integer(upto_seq),
                    SqlStorageValue::Integer(limit),
                ],
            )
            .map_err(storage_err("replay events"))?;
        let rows = cursor
            .next::<BatchRow>()
            .map(|r| r.map(|r| r.events).map_err(storage_err("replay events")));
        page_of(rows, after_seq, limit)
    }

    /// The newest sequence number handed out (0 before the first): an upper bound once this
    /// instance has handed out none, as ids up to the stored reservation may have been.
    pub fn last_seq(&self) -> Result<i64> {
        match self.mem.seq.get() {
            Some(seq) => Ok(seq),
            None => self.stored_reservation(),
        }
    }

    /// Deletes events older than `before_ms`, and all but the newest `keep` events. Counted by
    /// event, not by id, as ids have gaps (an instance reset skips the rest of its block).
    pub fn prune(&self, before_ms: i64, keep: i64) -> Result<()> {
        self.sql
            .exec(
                "DELETE FROM event_log WHERE at < ?",
                vec![SqlStorageValue::Integer(before_ms)],
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map_err(storage_err("prune old events"))?;
        let rows: Vec<CountRow> = self
            .sql
            .exec(
                "SELECT stream, seq, json_array_length(events) AS n FROM event_log ORDER BY seq DESC",
                None,
            )
            .and_then(|c| rows(c, CountRow::read))
            .map_err(storage_err("count events"))?;
        let mut newer = 0;
        for row in rows {
            if newer >= keep {
                return self
                    .sql
                    .exec(
                        "DELETE FROM event_log WHERE seq <= ?",
                        vec![SqlStorageValue::Integer(row.seq)],
                    )
                    .and_then(|c| c.to_array::<serde_json::Value>())
                    .map(drop)
                    .map_err(storage_err("prune events"));
            }
            if newer + row.n > keep {
                self.trim(&row, keep - newer)?;
            }
            newer += row.n;
        }
        Ok(())
    }

    /// Keeps only the newest `keep` events of one row.
    fn trim(&self, row: &CountRow, keep: i64) -> Result<()> {
        let key = || {
            vec![
                row.stream.as_str().into(),
                SqlStorageValue::Integer(row.seq),
            ]
        };
        let rows: Vec<BatchRow> = self
            .sql
            .exec(
                "SELECT events FROM event_log WHERE stream = ? AND seq = ?",
                key(),
            )
            .and_then(|c| rows(c, BatchRow::read))
            .map_err(storage_err("read events to prune"))?;
        let Some(found) = rows.into_iter().next() else {
            return Ok(());
        };
        let mut events: Vec<serde_json::Value> = serde_json::from_str(&found.events)
            .map_err(|e| Error::Storage(format!("session storage, prune events: {e}")))?;
        let cut = events
            .len()
            .saturating_sub(usize::try_from(keep).unwrap_or(0));
        events.drain(..cut);
        let mut bindings = vec![serde_json::Value::Array(events).to_string().into()];
        bindings.extend(key());
        self.sql
            .exec(
                "UPDATE event_log SET events = ? WHERE stream = ? AND seq = ?",
                bindings,
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
            .and_then(|c| rows(c, ChatRow::read))
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
            .and_then(|c| rows(c, StopRow::read))
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
            .and_then(|c| rows(c, LeaseRow::read))
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
            .and_then(|c| rows(c, Job::read))
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
            .and_then(|c| rows(c, Job::read))
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
            .and_then(|c| rows(c, LeaseRow::read))
            .map_err(storage_err("read job leases"))?;
        Ok(rows.into_iter().next().and_then(|r| r.lease_until))
    }
}

/// One page of a replay: at most `limit` events after `after_seq`, oldest first, from `rows` (the
/// `events` of `event_log` rows of one stream, oldest first: each a batch keyed by its last event).
/// A row holds as many events as were written together, so a page may end inside one; the next
/// page, after that page's last event, reads the row again (its key is later) and goes on there.
fn page_of(
    mut rows: impl Iterator<Item = Result<String>>,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<LoggedEvent>> {
    let limit = usize::try_from(limit).unwrap_or(0);
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(row) = rows.next() else { break };
        let batch: Vec<(i64, String, String)> = serde_json::from_str(&row?)
            .map_err(|e| Error::Storage(format!("session storage, replay events: {e}")))?;
        let room = limit - out.len();
        out.extend(
            batch
                .into_iter()
                .filter(|(seq, _, _)| *seq > after_seq)
                .take(room)
                .map(|(seq, event, data)| LoggedEvent { seq, event, data }),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `event_log` row: a batch of events with these ids, oldest first.
    fn row(seqs: &[i64]) -> Result<String> {
        let events = seqs
            .iter()
            .map(|s| serde_json::json!([s, "tool_call", format!("d{s}")]))
            .collect();
        Ok(serde_json::Value::Array(events).to_string())
    }

    /// The ids of each page of a replay of `rows` after `after`, `limit` a page, read as
    /// `replay_page` reads them for `server::stream::Replay`: each page from the first row whose
    /// key (its last event) is after the last event of the page before.
    fn pages(rows: &[&[i64]], mut after: i64, limit: i64) -> Vec<Vec<i64>> {
        let mut out = Vec::new();
        loop {
            let from = rows
                .iter()
                .filter(|r| r.last().is_some_and(|l| *l > after))
                .map(|r| row(r));
            let page = page_of(from, after, limit).expect("the rows parse");
            let Some(last) = page.last() else { return out };
            after = last.seq;
            out.push(page.iter().map(|e| e.seq).collect());
        }
    }

    #[test]
    fn a_replay_page_holds_at_most_limit_events_and_the_next_goes_on_after_its_last() {
        // Rows as the log writes them: a chain run's events in one batch, single events between.
        let rows: &[&[i64]] = &[&[1, 2, 3, 4, 5, 6, 7], &[8], &[9, 10, 11, 12, 13], &[14]];
        assert_eq!(
            pages(rows, 0, 3),
            vec![
                vec![1, 2, 3],
                vec![4, 5, 6],
                vec![7, 8, 9],
                vec![10, 11, 12],
                vec![13, 14]
            ]
        );
        assert_eq!(
            pages(rows, 5, 4),
            vec![vec![6, 7, 8, 9], vec![10, 11, 12, 13], vec![14]]
        );
        assert!(pages(rows, 14, 4).is_empty());
    }

    /// Each row type read by hand accepts exactly what its derive accepts: the columns present,
    /// a nullable column `null` or absent, a column missing or of the wrong type, extra columns.
    #[test]
    fn rows_read_as_their_derives_read_them() {
        use crate::store::rows::assert_same_as_derive as same;
        use serde_json::json;
        let broken = [json!(null), json!([]), json!("row"), json!({})];
        same(
            ChatRow::read,
            &[
                json!({ "seq": 3, "role": "user", "content": "hi", "at": 1_700_000_000_000_i64 }),
                json!({ "seq": 3, "role": "user", "content": "hi", "at": 1, "extra": true }),
                json!({ "seq": 3.5, "role": "user", "content": "hi", "at": 1 }),
                json!({ "seq": -3, "role": 7, "content": "hi", "at": 1 }),
                json!({ "seq": 3, "role": "user", "at": 1 }),
                json!({ "seq": null, "role": "user", "content": "hi", "at": 1 }),
            ],
        );
        same(
            Job::read,
            &[
                json!({ "id": "e1", "kind": "chain", "background": 1 }),
                json!({ "id": "e1", "kind": "chain", "background": "1" }),
                json!({ "id": "e1", "background": 0 }),
            ],
        );
        same(
            StopRow::read,
            &[
                json!({ "stop": "client gone" }),
                json!({ "stop": null }),
                json!({ "x": 1 }),
                json!({ "stop": 1 }),
            ],
        );
        same(
            LeaseRow::read,
            &[
                json!({ "lease_until": 5 }),
                json!({ "lease_until": null }),
                json!({}),
                json!({ "lease_until": "5" }),
            ],
        );
        same(
            ValueRow::read,
            &[
                json!({ "value": "12" }),
                json!({ "value": 12 }),
                json!({ "value": null }),
            ],
        );
        same(
            SeqRow::read,
            &[
                json!({ "seq": 0 }),
                json!({ "seq": 9_007_199_254_740_991_i64 }),
                json!({ "seq": "1" }),
            ],
        );
        same(
            CountRow::read,
            &[
                json!({ "stream": "s", "seq": 4, "n": 2 }),
                json!({ "stream": "s", "seq": 4 }),
                json!({ "stream": null, "seq": 4, "n": 2 }),
            ],
        );
        same(
            BatchRow::read,
            &[json!({ "events": "[]" }), json!({ "events": [] })],
        );
        for row in &broken {
            same(ChatRow::read, std::slice::from_ref(row));
            same(Job::read, std::slice::from_ref(row));
            same(StopRow::read, std::slice::from_ref(row));
            same(LeaseRow::read, std::slice::from_ref(row));
            same(ValueRow::read, std::slice::from_ref(row));
            same(SeqRow::read, std::slice::from_ref(row));
            same(CountRow::read, std::slice::from_ref(row));
            same(BatchRow::read, std::slice::from_ref(row));
        }
    }
}
