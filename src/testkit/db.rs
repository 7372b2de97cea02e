//! The database of a test: real SQLite in memory with every migration of `migrations/` applied and
//! then the sample company of `sample-data/domain.sql` loaded (as `npm run dev` and the integration
//! tests do), read and written the way D1 answers a Worker (rows as JSON objects, `?1`… parameters,
//! a batch as one transaction).
//!
//! The migrations and the sample data (about 2 MB of SQL with the sample company and the FlowMind
//! catalog) are applied once per test binary; each test gets its own copy of that database, deserialized from the bytes
//! of the first (a copy of a few megabytes, where applying the migrations again takes hundreds of
//! milliseconds).

use std::sync::OnceLock;

use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{Connection, MAIN_DB};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::registry::Statement;

/// One test's database.
pub struct Db {
    conn: Connection,
}

/// The migrated database's bytes, made by the first test that needs them.
static MIGRATED: OnceLock<Vec<u8>> = OnceLock::new();

/// Applies every `migrations/*.sql` file in name order, as `wrangler d1 migrations apply` does,
/// then the sample data, as `npm run sample-data` does.
fn migrate() -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("migrations");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    files.push(root.join("sample-data").join("domain.sql"));
    let conn = Connection::open_in_memory().expect("an in-memory SQLite database");
    // D1 enforces foreign keys, in migrations as in queries.
    conn.pragma_update(None, "foreign_keys", true)
        .expect("foreign keys on");
    for file in &files {
        let sql = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        conn.execute_batch(&sql)
            .unwrap_or_else(|e| panic!("{} failed: {e}", file.display()));
    }
    conn.serialize(MAIN_DB)
        .expect("the migrated database serializes")
        .to_vec()
}

impl Db {
    /// A fresh copy of the migrated database.
    pub fn migrated() -> Db {
        let bytes = MIGRATED.get_or_init(migrate);
        let mut conn = Connection::open_in_memory().expect("an in-memory SQLite database");
        conn.deserialize_read_exact(MAIN_DB, bytes.as_slice(), bytes.len(), false)
            .expect("the migrated database deserializes");
        conn.pragma_update(None, "foreign_keys", true)
            .expect("foreign keys on");
        Db { conn }
    }

    /// `Platform::query`: one statement, its rows as JSON objects.
    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Value>> {
        run(&self.conn, sql, params).map_err(|e| Error::Storage(format!("D1 query failed: {e}")))
    }

    /// `Platform::batch`: the statements in one transaction, all or none.
    pub fn batch(&self, statements: &[Statement]) -> Result<Vec<Vec<Value>>> {
        let failed = |e: rusqlite::Error| Error::Storage(format!("D1 batch failed: {e}"));
        // Rolled back when dropped before `commit`.
        let tx = self.conn.unchecked_transaction().map_err(failed)?;
        let mut out = Vec::with_capacity(statements.len());
        for s in statements {
            out.push(run(&tx, &s.sql, &s.params).map_err(failed)?);
        }
        tx.commit().map_err(failed)?;
        Ok(out)
    }

    /// The rows of a query a test makes to look at the database; panics on bad SQL.
    pub fn rows(&self, sql: &str, params: &[Value]) -> Vec<Value> {
        self.query(sql, params)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The single value of a query's first row (`Null` when there is none).
    pub fn value(&self, sql: &str, params: &[Value]) -> Value {
        let rows = self.rows(sql, params);
        rows.first()
            .and_then(Value::as_object)
            .and_then(|r| r.values().next().cloned())
            .unwrap_or(Value::Null)
    }

    /// Runs SQL that sets up a test (several statements allowed); panics on failure.
    pub fn exec(&self, sql: &str) {
        self.conn
            .execute_batch(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

fn run(conn: &Connection, sql: &str, params: &[Value]) -> rusqlite::Result<Vec<Value>> {
    let mut stmt = conn.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    let mut rows = stmt.query(rusqlite::params_from_iter(params.iter().map(bind)))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut obj = Map::new();
        for (i, name) in names.iter().enumerate() {
            obj.insert(name.clone(), read(row.get_ref(i)?));
        }
        out.push(Value::Object(obj));
    }
    Ok(out)
}

/// A JSON parameter as D1 binds it from a Worker (`store::d1::bind_value`): every number and
/// boolean reaches D1 as a JavaScript number, which D1 binds as REAL (so `5` written to a TEXT
/// column is stored as `'5.0'`, as Miniflare's D1 does); arrays and objects as their JSON text.
fn bind(v: &Value) -> Sql {
    match v {
        Value::Null => Sql::Null,
        Value::Bool(b) => Sql::Real(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => Sql::Real(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Sql::Text(s.clone()),
        other => Sql::Text(other.to_string()),
    }
}

/// A column value as a Worker reads it from D1: a JavaScript number becomes an integer in JSON
/// when it is one (so a REAL `2.0` reads as `2`).
fn read(v: ValueRef<'_>) -> Value {
    const SAFE: f64 = 9_007_199_254_740_991.0;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => json!(i),
        ValueRef::Real(f) if f.fract() == 0.0 && f.abs() <= SAFE => json!(f as i64),
        ValueRef::Real(f) => json!(f),
        ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => json!(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_applies_and_each_test_gets_its_own_copy() {
        let a = Db::migrated();
        let b = Db::migrated();
        let count = |db: &Db| db.value("SELECT COUNT(*) AS n FROM hr_performance_reviews", &[]);
        let before = count(&a);
        assert!(before.as_i64().is_some_and(|n| n > 10), "{before}");
        a.exec("DELETE FROM hr_performance_reviews");
        assert_eq!(count(&a), json!(0));
        assert_eq!(count(&b), before, "b is untouched by a's writes");
    }

    #[test]
    fn json_functions_and_fts5_work_as_the_migrations_need() {
        let db = Db::migrated();
        assert_eq!(
            db.value(
                "SELECT json_extract(?1, '$.a[1]') AS v",
                &[json!({"a": [1, 2]})]
            ),
            json!(2)
        );
        let hits = db.value(
            "SELECT COUNT(*) AS n FROM support_knowledge_articles_fts WHERE support_knowledge_articles_fts MATCH ?1",
            &[json!("password")],
        );
        assert!(hits.as_i64().is_some_and(|n| n > 0), "{hits}");
    }

    #[test]
    fn rows_are_json_objects_and_parameters_bind_like_d1() {
        let db = Db::migrated();
        let rows = db
            .query(
                "SELECT ?1 AS t, ?2 AS b, ?3 AS i, ?4 AS r, ?5 AS j, 2.0 AS whole, ?6 AS n",
                &[
                    json!("x"),
                    json!(true),
                    json!(7),
                    json!(1.5),
                    json!({"k": 1}),
                    Value::Null,
                ],
            )
            .unwrap();
        assert_eq!(
            rows,
            vec![
                json!({"t": "x", "b": 1, "i": 7, "r": 1.5, "j": "{\"k\":1}", "whole": 2, "n": null})
            ]
        );
        db.exec("CREATE TABLE kinds (t TEXT, i INTEGER)");
        db.query("INSERT INTO kinds VALUES (?1, ?1)", &[json!(5)])
            .unwrap();
        assert_eq!(
            db.rows("SELECT t, i, typeof(i) AS ti FROM kinds", &[]),
            vec![json!({"t": "5.0", "i": 5, "ti": "integer"})],
            "D1 binds numbers as REAL; column affinity decides what is stored"
        );
        let e = db.query("SELECT nope FROM nowhere", &[]).unwrap_err();
        assert!(matches!(e, Error::Storage(_)), "{e}");
    }

    #[test]
    fn a_batch_is_all_or_nothing() {
        let db = Db::migrated();
        db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
        let good = Statement::new("INSERT INTO t (k) VALUES (?1)", vec![json!("a")]);
        let clash = Statement::new("INSERT INTO t (k) VALUES (?1)", vec![json!("a")]);
        assert!(db.batch(&[good.clone(), clash]).is_err());
        assert_eq!(db.value("SELECT COUNT(*) FROM t", &[]), json!(0));
        let out = db
            .batch(&[good, Statement::new("SELECT k FROM t", vec![])])
            .unwrap();
        assert_eq!(out, vec![vec![], vec![json!({"k": "a"})]]);
    }
}
