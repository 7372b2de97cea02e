//! bge-small embeddings for `field_request` through the Workers AI binding `AI`: the cosine of the
//! request's embedding to each pooled context's, with both kinds of embedding cached so a repeated
//! search calls the model for nothing it has seen.
//!
//! **Context embeddings live in D1** (`flowmind_embeddings`, migration 0022), one row per context
//! and model holding the hash of the text it was computed from. A search reads the vectors of its
//! whole pool in one query and keeps those whose hash still matches, so an edited context is
//! re-embedded on its next search and nothing needs invalidating. D1 rather than KV: one round
//! trip for up to 50 vectors instead of 50 reads, rows that do not expire (a context's embedding
//! stays right for as long as its text does), and a write that every instance sees at once.
//!
//! **Query embeddings live in KV** for [`QUERY_TTL_SECS`] (the KV minimum is 60 s): a caller
//! refining or repeating a request within minutes does not pay for the query again, and a
//! request's embedding is worth nothing later, so it is left to expire.
//!
//! Everything the model has not embedded yet goes in one call (the query first, then the missing
//! contexts), bounded by [`timeout_ms`]. Any failure — no binding, the call throws or times out, an
//! answer of the wrong shape — is returned as a reason for `degraded_reason`, and the search
//! falls back to text alone.

use futures::future::{select, Either};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::catalog::Context;
use crate::engine::matcher::blend::{cosine, decode, encode, parse_embeddings};
use crate::registry::{Platform, Statement, ToolContext};

/// The Workers AI model: 384 dimensions, English, cheap enough to embed 50 texts per search.
pub const MODEL: &str = "@cf/baai/bge-small-en-v1.5";

/// How `_metadata.indices_used` names the embedding blend.
pub const INDEX: &str = "bge_small_embeddings";

/// How long a request's embedding is kept in KV.
pub const QUERY_TTL_SECS: u64 = 300;

/// How long the model may take when `FLOWMIND_EMBEDDING_TIMEOUT_MS` does not say.
pub const DEFAULT_TIMEOUT_MS: u32 = 5000;

/// The cosines of one search, and how they were obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    /// The cosine of the request's embedding to each context's, in the order they were given.
    pub cosines: Vec<f64>,
    /// How many texts the model embedded for this search (0 when everything was cached).
    pub computed: usize,
    /// How many contexts' embeddings came from the D1 cache.
    pub cached: usize,
    /// Whether the request's embedding came from the KV cache.
    pub query_cached: bool,
}

/// The model's time limit: `FLOWMIND_EMBEDDING_TIMEOUT_MS`, else [`DEFAULT_TIMEOUT_MS`].
pub fn timeout_ms(platform: &dyn Platform) -> u32 {
    platform
        .setting("FLOWMIND_EMBEDDING_TIMEOUT_MS")
        .and_then(|v| v.trim().parse().ok())
        .filter(|&ms| ms > 0)
        .unwrap_or(DEFAULT_TIMEOUT_MS)
}

/// A short, stable digest of `text`: the cache key part that changes when the text does.
fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn query_key(text: &str) -> String {
    format!("flowmind:embedding:{MODEL}:{}", digest(text))
}

/// The cached vectors of `contexts` (by URI) whose hash matches their current text.
async fn cached_contexts(
    platform: &dyn Platform,
    contexts: &[(&Context, String)],
) -> Vec<Option<Vec<f32>>> {
    let mut out = vec![None; contexts.len()];
    if contexts.is_empty() {
        return out;
    }
    let placeholders: Vec<String> = (0..contexts.len()).map(|i| format!("?{}", i + 2)).collect();
    let sql = format!(
        "SELECT uri, content_hash, vector FROM flowmind_embeddings WHERE model = ?1 AND uri IN ({})",
        placeholders.join(", ")
    );
    let mut params = vec![json!(MODEL)];
    params.extend(contexts.iter().map(|(c, _)| json!(c.uri)));
    // A failed read is a cache miss: the model is asked instead, and the answer says so by what
    // it computed.
    let rows = platform.query(&sql, params).await.unwrap_or_default();
    for row in rows {
        let (Some(uri), Some(hash), Some(vector)) = (
            row.get("uri").and_then(Value::as_str),
            row.get("content_hash").and_then(Value::as_str),
            row.get("vector").and_then(Value::as_str),
        ) else {
            continue;
        };
        for (slot, (c, text)) in out.iter_mut().zip(contexts) {
            if c.uri == uri && digest(text) == hash {
                *slot = decode(vector);
            }
        }
    }
    out
}

/// Stores freshly computed context vectors; a failed write only costs a later re-embedding.
async fn store_contexts(platform: &dyn Platform, fresh: &[(&Context, &str, &[f32])]) {
    if fresh.is_empty() {
        return;
    }
    let statements = fresh
        .iter()
        .map(|(c, text, v)| {
            Statement::new(
                "INSERT INTO flowmind_embeddings (uri, model, content_hash, dims, vector) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (uri, model) DO UPDATE SET content_hash = excluded.content_hash, dims = excluded.dims, \
                 vector = excluded.vector, created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
                vec![json!(c.uri), json!(MODEL), json!(digest(text)), json!(v.len()), json!(encode(v))],
            )
        })
        .collect();
    let _ = platform.batch(statements).await;
}

/// Why no embeddings can be had at all (no binding), checked before any work is done for them.
pub fn unavailable(platform: &dyn Platform) -> Option<String> {
    (!platform.ai_bound()).then(|| format!(
        "No Workers AI binding named AI is configured, so similarity is BM25F over names, tags, descriptions and example requests without the {MODEL} embedding blend."
    ))
}

/// The cosine of `query`'s embedding to each of `contexts`' embeddings, or why there are none.
pub async fn cosines(
    ctx: &dyn ToolContext,
    query: &str,
    contexts: &[&Context],
) -> Result<Embedded, String> {
    let platform = ctx.platform();
    if let Some(reason) = unavailable(platform) {
        return Err(reason);
    }
    let query: String = query
        .chars()
        .take(super::field_request::EMBEDDED_CHARS)
        .collect();
    let texts: Vec<(&Context, String)> = contexts
        .iter()
        .map(|c| (*c, super::field_request::embedding_text(c)))
        .collect();
    let key = query_key(&query);
    let cached_query = platform
        .cache_get(&key)
        .await
        .ok()
        .flatten()
        .and_then(|t| decode(&t));
    let mut vectors = cached_contexts(platform, &texts).await;
    let cached = vectors.iter().filter(|v| v.is_some()).count();

    let missing: Vec<usize> = (0..texts.len()).filter(|&i| vectors[i].is_none()).collect();
    let mut batch: Vec<&str> = Vec::new();
    if cached_query.is_none() {
        batch.push(&query);
    }
    batch.extend(missing.iter().map(|&i| texts[i].1.as_str()));
    let query_cached = cached_query.is_some();
    let mut query_vector = cached_query;
    if !batch.is_empty() {
        let mut fresh = ask(ctx, &batch).await?.into_iter();
        if query_vector.is_none() {
            query_vector = fresh.next();
            if let Some(v) = &query_vector {
                // A failed write only costs embedding the request again next time.
                let _ = platform.cache_put(&key, &encode(v), QUERY_TTL_SECS).await;
            }
        }
        let mut stored: Vec<(&Context, &str, Vec<f32>)> = Vec::new();
        for (&i, v) in missing.iter().zip(fresh) {
            stored.push((texts[i].0, texts[i].1.as_str(), v.clone()));
            vectors[i] = Some(v);
        }
        let rows: Vec<(&Context, &str, &[f32])> = stored
            .iter()
            .map(|(c, t, v)| (*c, *t, v.as_slice()))
            .collect();
        store_contexts(platform, &rows).await;
    }
    let Some(q) = query_vector else {
        return Err("Workers AI returned no embedding for the request.".into());
    };
    let cosines = vectors
        .iter()
        .map(|v| v.as_deref().map_or(0.0, |v| cosine(&q, v)))
        .collect();
    Ok(Embedded {
        cosines,
        computed: batch.len(),
        cached,
        query_cached,
    })
}

/// One call to the model for `texts`, within the time limit.
async fn ask(ctx: &dyn ToolContext, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
    let platform = ctx.platform();
    let limit = timeout_ms(platform);
    let input = json!({ "text": texts });
    let call = platform.ai_run(MODEL, &input);
    let answer = match select(call, ctx.sleep(limit)).await {
        Either::Left((answer, _)) => answer,
        Either::Right(_) => {
            return Err(format!(
                "Workers AI ({MODEL}) did not answer within {limit} ms (FLOWMIND_EMBEDDING_TIMEOUT_MS), so similarity is BM25F alone."
            ))
        }
    };
    match answer {
        Ok(Some(output)) => parse_embeddings(&output, texts.len()).map_err(|e| {
            format!("Workers AI ({MODEL}) answered in an unexpected shape: {e}; similarity is BM25F alone.")
        }),
        Ok(None) => Err("The Workers AI binding AI disappeared during the search.".into()),
        Err(e) => Err(format!(
            "Workers AI ({MODEL}) failed: {}; similarity is BM25F alone.",
            e.public_message()
        )),
    }
}
