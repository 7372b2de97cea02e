//! Support tools (seed 002): full-text search over tickets and the knowledge base, and reading one
//! article.
//!
//! | tool | who may call it | rows they see |
//! | --- | --- | --- |
//! | `search_tickets` (words, or none: the queue by urgency) | `support-read`, `executive` | every ticket |
//! | `get_knowledge_article` | `support-read`, `executive` | every article (drafts and archived ones too, with their `status`) |
//! | `search_knowledge_base` | `support-read`, `executive` | as above |
//!
//! Row level: the support team works a shared queue, so both roles see every ticket; there is no
//! per-agent restriction to enforce in the SQL.
//!
//! Masking: a ticket's `customer_email` is the reporting contact's own address (a person's contact
//! data). It shows for `support-write` (the agents who answer tickets), `executive`, and the agent
//! the ticket is assigned to; a caller with only `support-read` (reporting access) gets
//! `*** (Hidden)`. Articles carry no contact data (`author` is the employee's name). No search
//! matches or filters on a masked field (the index covers subject, description and resolution).
//!
//! Search: the user's words are never FTS5 syntax. [`fts_query`] quotes every word as an FTS5
//! string (all words must match, in any order), so quotes, `*`, `NEAR`, `AND`, `%`, `_` and
//! `'; DROP …` are plain text; the result is bound as a parameter, never spliced into SQL. Hits are
//! ranked by `bm25` (best first; `_score` is `-bm25`, higher is better) and paged by
//! (rank, rowid). The rank key is `bm25` in whole millionths: D1 hands REAL values back with
//! fewer digits than SQLite compares, so a float key would skip or repeat hits across pages,
//! while an integer round-trips exactly. A change to the index between two pages (a new or edited
//! ticket) changes every rank, so a page may then repeat or skip a hit; starting again without a
//! cursor is exact.

pub mod writes;

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::domain::{self, Code, Reply, HIDDEN};
use crate::registry::{Caller, ToolContext, ToolDef, ToolResult};

const TOOLSET: &str = "support";

/// Roles that may call every support read tool.
const READERS: &[&str] = &["support-read", "executive"];

/// Roles that see a ticket's `customer_email` (besides its assignee).
const CONTACT_ROLES: &[&str] = &["support-write", "executive"];

/// The user's search words as an FTS5 query that matches them literally: each whitespace-separated
/// word becomes an FTS5 string (`"` doubled inside), and the strings are joined by spaces (all of
/// them must match). Words without a letter or digit are dropped: the `unicode61` tokenizer drops
/// them too, so they could never match. `None` when no word is left.
pub fn fts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" "))
}

/// The FTS5 query for `args.query`, or the `INVALID_INPUT` answer.
fn search_terms(args: &Value, retry: &str) -> std::result::Result<String, Reply> {
    let given = args["query"].as_str().unwrap_or_default();
    fts_query(given).ok_or_else(|| {
        Reply::failure(
            Code::InvalidInput,
            format!("The query {given:?} has no words to search for (only punctuation or spaces)."),
            retry,
        )
    })
}

/// A ticket row as the caller may see it.
fn ticket(row: &Value, caller: &Caller) -> Value {
    let assignee = row["assigned_to"].as_str().is_some()
        && caller.user.as_deref() == row["assigned_to"].as_str();
    let email =
        if assignee || domain::holds(caller, CONTACT_ROLES) || row["customer_email"].is_null() {
            row["customer_email"].clone()
        } else {
            json!(HIDDEN)
        };
    json!({
        "ticket_id": row["id"],
        "subject": row["subject"],
        "description": row["description"],
        "status": row["status"],
        "priority": row["priority"],
        "customer_id": row["customer_id"],
        "customer_name": row["customer_name"],
        "customer_email": email,
        "assigned_to": row["assigned_to"],
        "category": row["category"],
        "tags": json_list(&row["tags"]),
        "resolution": row["resolution"],
        "resolution_type": row["resolution_type"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "resolved_at": row["resolved_at"],
        "_score": score(&row["score"]),
    })
}

/// A stored JSON array (text) as a JSON array; `[]` if it is not one.
fn json_list(text: &Value) -> Value {
    text.as_str()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .filter(Value::is_array)
        .unwrap_or_else(|| json!([]))
}

/// The rank key (`bm25` in millionths, lower is better) as a relevance score where higher is
/// better.
fn score(rank: &Value) -> Value {
    rank.as_f64()
        .map(|s| crate::engine::expr::num(-s / 1_000_000.0))
        .unwrap_or(Value::Null)
}

fn search_tickets(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let caller = ctx.caller();
        let limit = domain::limit(&args);
        let filters = json!({
            "query": args.get("query"),
            "status": args.get("status"),
            "priority": args.get("priority"),
            "customer_id": args.get("customer_id"),
        });
        let after = domain::resume_after(ctx, "search_tickets", &filters, args["cursor"].as_str())?
            .unwrap_or(Value::Null);
        let terms = match args.get("query") {
            Some(_) => Some(search_terms(
                &args,
                "Search with one or more words, e.g. \"export fails\", or leave query out to list tickets by status and priority.",
            )?),
            None => None,
        };
        let (key, from, order) = match terms {
            Some(_) => (
                "h.score",
                "(SELECT rowid AS no, CAST(round(bm25(support_tickets_fts) * 1000000) AS INTEGER) AS score
                  FROM support_tickets_fts WHERE support_tickets_fts MATCH ?1) h
                 JOIN support_tickets t ON t.ticket_no = h.no",
                "best first",
            ),
            // No words: the queue, most urgent first, then oldest first.
            None => (
                URGENCY,
                "support_tickets t",
                "most urgent first, then oldest",
            ),
        };
        let rows = ctx
            .query(
                &format!(
                    "SELECT t.ticket_no, t.id, t.subject, t.description, t.status, t.priority, t.customer_id,
                        c.name AS customer_name, k.email AS customer_email, t.assigned_to, t.category, t.tags,
                        t.resolution, t.resolution_type, t.created_at, t.updated_at, t.resolved_at, {key} AS score
                 FROM {from}
                 JOIN sales_customers c ON c.id = t.customer_id
                 LEFT JOIN sales_contacts k ON k.id = t.contact_id
                 WHERE (?2 IS NULL OR t.status = ?2) AND (?3 IS NULL OR t.priority = ?3)
                   AND (?4 IS NULL OR t.customer_id = ?4)
                   AND (?5 IS NULL OR ({key}, t.ticket_no) > (?5, ?6))
                 ORDER BY {key}, t.ticket_no LIMIT ?7"
                ),
                vec![
                    json!(terms),
                    args["status"].clone(),
                    args["priority"].clone(),
                    args["customer_id"].clone(),
                    after[0].clone(),
                    after[1].clone(),
                    json!(limit + 1),
                ],
            )
            .await?;
        let (rows, page) = domain::page_of(
            ctx,
            "search_tickets",
            &filters,
            rows,
            limit,
            |r| json!([r["score"], r["ticket_no"]]),
            ("To see more tickets, call search_tickets again with metadata.nextCursor as cursor.", "more words, status, priority or customer_id"),
        )?;
        let searched = terms.is_some();
        let data: Vec<Value> = rows
            .iter()
            .map(|r| {
                let mut t = ticket(r, &caller);
                if !searched {
                    t["_score"] = Value::Null;
                }
                t
            })
            .collect();
        Ok(Reply::page(
            format!("{} tickets, {order}.", data.len()),
            data,
            page,
        ))
    }))
}

/// A ticket's urgency, the order of a listing without search words: 0 for critical to 3 for low.
const URGENCY: &str =
    "(CASE t.priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END)";

/// The article columns (`a` is `support_knowledge_articles`, `e` the author in `hr_employees`).
const ARTICLE_COLUMNS: &str = "a.article_no, a.id, a.title, a.summary, a.category, a.tags, a.status,
     e.first_name || ' ' || e.last_name AS author, a.view_count, a.helpful_votes, a.created_at, a.updated_at";

/// An article row as the tools answer it (`content` only when the row has it).
fn article(row: &Value) -> Value {
    let mut a = json!({
        "article_id": row["id"],
        "title": row["title"],
        "summary": row["summary"],
        "category": row["category"],
        "tags": json_list(&row["tags"]),
        "author": row["author"],
        "status": row["status"],
        "view_count": row["view_count"],
        "helpful_votes": row["helpful_votes"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    });
    if let Some(content) = row.get("content") {
        a["content"] = content.clone();
    }
    if let Some(s) = row.get("score") {
        a["_score"] = score(s);
    }
    a
}

fn get_knowledge_article(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let id = args["article_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                &format!(
                    "SELECT {ARTICLE_COLUMNS}, a.content FROM support_knowledge_articles a
                     LEFT JOIN hr_employees e ON e.id = a.author_id WHERE a.id = ?1"
                ),
                vec![json!(id)],
            )
            .await?;
        let row = rows.first().ok_or_else(|| {
            Reply::failure(
                Code::ArticleNotFound,
                format!("Knowledge article {id} not found."),
                "Use search_knowledge_base to find articles and their IDs (like KB-0001).",
            )
        })?;
        Ok(Reply::success(
            format!(
                "Article {}: {} ({}).",
                row["id"].as_str().unwrap_or(""),
                row["title"].as_str().unwrap_or(""),
                row["status"].as_str().unwrap_or("")
            ),
            article(row),
        ))
    }))
}

fn search_knowledge_base(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let limit = domain::limit(&args);
        let filters = json!({ "query": args.get("query"), "category": args.get("category") });
        let after = domain::resume_after(
            ctx,
            "search_knowledge_base",
            &filters,
            args["cursor"].as_str(),
        )?
        .unwrap_or(Value::Null);
        let terms = search_terms(
            &args,
            "Search with one or more words, e.g. \"reset password\".",
        )?;
        let category = args["category"].as_str();
        let rows = ctx
            .query(
                &format!(
                    "WITH hits AS (
                       SELECT rowid AS no, CAST(round(bm25(support_knowledge_articles_fts) * 1000000) AS INTEGER) AS score
                       FROM support_knowledge_articles_fts WHERE support_knowledge_articles_fts MATCH ?1
                     )
                     SELECT {ARTICLE_COLUMNS}, h.score
                     FROM hits h JOIN support_knowledge_articles a ON a.article_no = h.no
                     LEFT JOIN hr_employees e ON e.id = a.author_id
                     WHERE (?2 IS NULL OR a.category = lower(?2))
                       AND (?3 IS NULL OR (h.score, a.article_no) > (?3, ?4))
                     ORDER BY h.score, a.article_no LIMIT ?5"
                ),
                vec![
                    json!(terms),
                    json!(category),
                    after[0].clone(),
                    after[1].clone(),
                    json!(limit + 1),
                ],
            )
            .await?;
        if let (true, Some(c)) = (rows.is_empty(), category) {
            unknown_category(ctx, c).await?;
        }
        let (rows, page) = domain::page_of(
            ctx,
            "search_knowledge_base",
            &filters,
            rows,
            limit,
            |r| json!([r["score"], r["article_no"]]),
            ("To see more articles, call search_knowledge_base again with metadata.nextCursor as cursor.", "more words or a category"),
        )?;
        let data: Vec<Value> = rows.iter().map(article).collect();
        Ok(Reply::page(
            format!(
                "{} articles match, best first; get_knowledge_article gives one's content.",
                data.len()
            ),
            data,
            page,
        ))
    }))
}

/// Refuses a category no article has, listing the ones there are; passes a known one (an empty
/// search within it is a plain empty answer).
async fn unknown_category(ctx: &dyn ToolContext, given: &str) -> std::result::Result<(), Reply> {
    let rows = ctx
        .query(
            "SELECT DISTINCT category FROM support_knowledge_articles ORDER BY category",
            vec![],
        )
        .await?;
    let names: Vec<&str> = rows.iter().filter_map(|r| r["category"].as_str()).collect();
    if names.iter().any(|n| n.eq_ignore_ascii_case(given)) {
        return Ok(());
    }
    Err(Reply::failure(
        Code::InvalidInput,
        format!("There is no knowledge-base category {given:?}."),
        format!(
            "Use one of: {}, or search without a category.",
            names.join(", ")
        ),
    ))
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "search_tickets",
        title: "Search support tickets",
        description: "Support tickets: with query, a full-text search (subject, description, resolution; every word must match, best matches first); without it, the queue (\"open tickets\": status open), most urgent first, then oldest. Optionally only one status, priority or customer. Up to 50 per page with a cursor for the next page. The reporter's email is masked unless the caller has support-write or executive or is the ticket's assignee.",
        input_schema: include_str!("../../../schema/support/search_tickets.input.json"),
        roles: READERS,
        handler: search_tickets,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_knowledge_article",
        title: "Get knowledge article",
        description: "One knowledge-base article by id (like KB-0001), with its full markdown content, status and author.",
        input_schema: include_str!("../../../schema/support/get_knowledge_article.input.json"),
        roles: READERS,
        handler: get_knowledge_article,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "search_knowledge_base",
        title: "Search knowledge base",
        description: "Full-text search of knowledge-base articles (title, content, tags): every word must match, best matches first; optionally within one category. Returns summaries (get_knowledge_article gives the content); up to 50 per page with a cursor.",
        input_schema: include_str!("../../../schema/support/search_knowledge_base.input.json"),
        roles: READERS,
        handler: search_knowledge_base,
        ..domain::READ
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::user as caller;

    #[test]
    fn every_word_becomes_an_fts5_string() {
        assert_eq!(
            fts_query("export fails").as_deref(),
            Some(r#""export" "fails""#)
        );
        assert_eq!(
            fts_query("  100%   SAVE_100 ").as_deref(),
            Some(r#""100%" "SAVE_100""#)
        );
        assert_eq!(
            fts_query("'; DROP TABLE support_tickets; --").as_deref(),
            Some(r#""DROP" "TABLE" "support_tickets;""#),
            "the punctuation-only '; and -- are dropped; the rest is quoted"
        );
        assert_eq!(
            fts_query(r#"say "hi" NEAR AND foo*"#).as_deref(),
            Some(r#""say" """hi""" "NEAR" "AND" "foo*""#),
            "operators and quotes are text"
        );
        assert_eq!(
            fts_query("O'Brien & Sons").as_deref(),
            Some(r#""O'Brien" "Sons""#)
        );
        assert_eq!(fts_query("café").as_deref(), Some(r#""café""#));
    }

    #[test]
    fn a_query_without_words_is_none() {
        for q in ["", "   ", "%", "* _ -- \"", "'; --"] {
            assert_eq!(fts_query(q), None, "{q:?}");
        }
    }

    fn row() -> Value {
        json!({ "id": "TKT-000009", "assigned_to": "E0014", "customer_email": "pat@acme.example",
                "tags": "[\"billing\",\"refund\"]", "score": -3_500_000 })
    }

    #[test]
    fn customer_email_shows_for_agents_executives_and_the_assignee() {
        let reader = ticket(&row(), &caller("E0100", &["support-read"]));
        assert_eq!(reader["customer_email"], HIDDEN);
        assert_eq!(reader["ticket_id"], "TKT-000009");
        assert_eq!(reader["tags"], json!(["billing", "refund"]));
        assert_eq!(reader["_score"], 3.5);
        for who in [
            caller("E0100", &["support-read", "support-write"]),
            caller("E0100", &["executive"]),
            caller("E0014", &["support-read"]),
        ] {
            assert_eq!(
                ticket(&row(), &who)["customer_email"],
                "pat@acme.example",
                "{who:?}"
            );
        }
        let mut unassigned = row();
        unassigned["assigned_to"] = Value::Null;
        let anon_like = Caller {
            user: None,
            roles: vec!["support-read".into()],
        };
        assert_eq!(
            ticket(&unassigned, &anon_like)["customer_email"],
            HIDDEN,
            "no id is not the assignee"
        );
        unassigned["customer_email"] = Value::Null;
        assert_eq!(
            ticket(&unassigned, &anon_like)["customer_email"],
            Value::Null,
            "nothing to hide"
        );
    }

    #[test]
    fn bad_tags_are_an_empty_list() {
        assert_eq!(json_list(&json!("not json")), json!([]));
        assert_eq!(json_list(&json!("{\"a\":1}")), json!([]));
        assert_eq!(json_list(&Value::Null), json!([]));
    }
}
