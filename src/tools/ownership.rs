//! Who owns a stored record and who may read or change it: templates, chains, collection records,
//! EPIC-TIDE works, paths and patterns (tides belong to their path). The rule, in one place:
//!
//! - **Owner.** `user:<sub>` for a caller with a verified token, `session:<id>` for an anonymous
//!   caller in a 2025 MCP session, `NULL` for what the server ships. An anonymous 2026-07-28 call
//!   has no session and so no owner: it reads what is public and writes nothing (the address it
//!   comes from names no one: many callers share one, and one caller changes it).
//! - **Visibility.** `private` (the owner only), `shared` (also callers holding one of
//!   `shared_roles`), `public` (everyone). Only the owner writes a record, whatever its visibility;
//!   shipped records (owner `NULL`) are written only by callers with the [`ADMIN_ROLE`].
//!
//! The rule is enforced in SQL: every statement that reads, lists or writes such a record carries
//! [`Principal::can_read`] or [`Principal::can_write`] in its `WHERE` clause, so a row the caller
//! may not see never leaves D1 and a row they may not change is never changed, even when two calls
//! race.

use serde_json::{json, Value};

use crate::error::Result;
use crate::registry::{Caller, ToolContext, ToolError, ToolResult};

/// The role that may change shipped records (owner `NULL`).
pub const ADMIN_ROLE: &str = "admin";

/// Most roles a record may be shared with.
pub const MAX_SHARED_ROLES: usize = 20;

/// Who may read a record besides its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Nobody else.
    Private,
    /// Callers holding one of the record's `shared_roles`.
    Shared,
    /// Everybody.
    Public,
}

impl Visibility {
    /// The value stored in the `visibility` column and taken in tool arguments.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Private => "private",
            Visibility::Shared => "shared",
            Visibility::Public => "public",
        }
    }

    fn parse(s: &str) -> Option<Visibility> {
        match s {
            "private" => Some(Visibility::Private),
            "shared" => Some(Visibility::Shared),
            "public" => Some(Visibility::Public),
            _ => None,
        }
    }
}

/// The visibility a caller asked for in a create or save call, with its roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharing {
    /// Who reads it.
    pub visibility: Visibility,
    /// The roles of a shared record (empty otherwise).
    pub roles: Vec<String>,
}

impl Sharing {
    /// What `holder` (an arguments or options object) asks for in `visibility` and
    /// `shared_roles`: `None` when it names neither (a new record is then private, a replaced one
    /// keeps its visibility). `at` names the object in errors (`creation_options.`, or empty).
    pub fn from_args(holder: &Value, at: &str) -> ToolResult<Option<Sharing>> {
        let visibility = holder.get("visibility").and_then(Value::as_str);
        let roles = holder.get("shared_roles");
        if visibility.is_none() && roles.is_none() {
            return Ok(None);
        }
        let visibility = match visibility {
            None => Visibility::Shared,
            Some(v) => Visibility::parse(v).ok_or_else(|| {
                ToolError::invalid(format!(
                    "{at}visibility must be private, shared or public; got {v:?}"
                ))
            })?,
        };
        let roles: Vec<String> = match roles {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for item in items {
                    match item.as_str().map(str::trim) {
                        Some(r) if !r.is_empty() && r.len() <= 100 => {
                            if !out.iter().any(|o| o == r) {
                                out.push(r.to_string());
                            }
                        }
                        _ => {
                            return Err(ToolError::invalid(format!(
                                "{at}shared_roles must list role names (1 to 100 characters each), such as \"hr-read\"; got {item}"
                            )))
                        }
                    }
                }
                out
            }
            Some(other) => {
                return Err(ToolError::invalid(format!(
                    "{at}shared_roles must be an array of role names; got {other}"
                )))
            }
        };
        if roles.len() > MAX_SHARED_ROLES {
            return Err(ToolError::invalid(format!(
                "{at}shared_roles lists {} roles; at most {MAX_SHARED_ROLES} are allowed",
                roles.len()
            )));
        }
        match (visibility, roles.is_empty()) {
            (Visibility::Shared, true) => Err(ToolError::invalid(format!(
                "{at}visibility \"shared\" needs {at}shared_roles: the roles whose holders may read the record, such as [\"hr-read\"]"
            ))),
            (Visibility::Private | Visibility::Public, false) => Err(ToolError::invalid(format!(
                "{at}shared_roles is only used with {at}visibility \"shared\"; set visibility to \"shared\" or leave shared_roles out"
            ))),
            _ => Ok(Some(Sharing { visibility, roles })),
        }
    }

    /// A new record's sharing when the caller asked for none: private.
    pub fn private() -> Sharing {
        Sharing {
            visibility: Visibility::Private,
            roles: Vec::new(),
        }
    }

    /// The `shared_roles` column's value.
    pub fn roles_json(&self) -> String {
        json!(self.roles).to_string()
    }
}

/// The parameters of an optional [`Sharing`] for an upsert that keeps a replaced record's sharing
/// when none is asked for: `[visibility or NULL, shared_roles JSON or NULL]`.
pub fn sharing_params(sharing: Option<&Sharing>) -> [Value; 2] {
    match sharing {
        Some(s) => [json!(s.visibility.as_str()), json!(s.roles_json())],
        None => [Value::Null, Value::Null],
    }
}

/// A condition of an SQL `WHERE` clause with its parameters, numbered from where the statement
/// placed them.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    /// The condition, parenthesised.
    pub sql: String,
    /// The values its placeholders bind, in order.
    pub params: Vec<Value>,
}

/// The caller as the ownership rule sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    owner: Option<String>,
    roles: Vec<String>,
    admin: bool,
}

/// Whether `id` names an MCP session (64 lowercase hex digits). A 2026-07-28 call's platform
/// answers `stateless-<address>` and a confirmation's an empty id, neither of which is one.
fn is_session_id(id: &str) -> bool {
    id.len() == 64
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Principal {
    /// The principal of `caller` calling in session `session_id`.
    pub fn new(caller: &Caller, session_id: &str) -> Principal {
        let owner = match &caller.user {
            Some(user) => Some(format!("user:{user}")),
            None if is_session_id(session_id) => Some(format!("session:{session_id}")),
            None => None,
        };
        Principal {
            owner,
            admin: caller.roles.iter().any(|r| r == ADMIN_ROLE),
            roles: caller.roles.clone(),
        }
    }

    /// The principal of the call `ctx` serves.
    pub fn of(ctx: &dyn ToolContext) -> Principal {
        Principal::new(&ctx.caller(), &ctx.session_id())
    }

    /// The owner key of records this caller creates, if they can own any.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// Whether the caller holds [`ADMIN_ROLE`].
    pub fn is_admin(&self) -> bool {
        self.admin
    }

    /// The owner key for a record `what` (for example "save a template") is about to create or
    /// change; refused for a caller who can own nothing.
    pub fn require_owner(&self, what: &str) -> ToolResult<&str> {
        self.owner.as_deref().ok_or_else(|| {
            ToolError::failed(format!(
                "Cannot {what}: stored records belong to their owner, and an anonymous 2026-07-28 call has none (no token, no session). Send a bearer token, or call from a 2025 MCP session (initialize first), whose records belong to that session."
            ))
        })
    }

    /// The condition that the row (columns qualified by `q`, such as `"t."` or `""`) may be read
    /// by this caller; its parameters are `?first` and `?first+1`.
    pub fn can_read(&self, q: &str, first: usize) -> Predicate {
        let (o, r) = (first, first + 1);
        Predicate {
            sql: format!(
                "({q}visibility = 'public' OR ({q}owner IS ?{o} AND ?{o} IS NOT NULL) OR ({q}visibility = 'shared' AND EXISTS (SELECT 1 FROM json_each({q}shared_roles) AS granted WHERE granted.value IN (SELECT value FROM json_each(?{r})))))"
            ),
            params: vec![
                self.owner.clone().map_or(Value::Null, Value::String),
                json!(json!(self.roles).to_string()),
            ],
        }
    }

    /// The condition that the row (columns qualified by `q`) may be changed by this caller: it is
    /// theirs, or it is shipped and they are an admin. Its parameters are `?first` and `?first+1`.
    /// Both conditions are 0 or 1, never NULL (`IS` instead of `=`), so they can also be selected
    /// as a flag.
    pub fn can_write(&self, q: &str, first: usize) -> Predicate {
        let (o, a) = (first, first + 1);
        Predicate {
            sql: format!(
                "(({q}owner IS ?{o} AND ?{o} IS NOT NULL) OR ({q}owner IS NULL AND ?{a} = 1))"
            ),
            params: vec![
                self.owner.clone().map_or(Value::Null, Value::String),
                json!(i64::from(self.admin)),
            ],
        }
    }
}

/// The record of `table` named `name`, as its create tool's refusal needs it: `shipped` and `mine`
/// (whether this caller may change it) as 0/1, plus the `extra` columns (", category", say);
/// `None` when no record holds the name (any more).
async fn name_holder(
    ctx: &dyn ToolContext,
    me: &Principal,
    table: &str,
    extra: &str,
    name: &str,
) -> Result<Option<Value>> {
    let mine = me.can_write("", 2);
    let params = [vec![json!(name)], mine.params].concat();
    let sql = format!(
        "SELECT owner IS NULL AS shipped, {} AS mine{extra} FROM {table} WHERE name = ?1",
        mine.sql
    );
    Ok(ctx.query(&sql, params).await?.into_iter().next())
}

/// Why `what` (such as "Template 'x'") cannot be created or replaced: its name is held by a record
/// the caller may not change. `shipped` when that record is the server's (owner `NULL`).
fn name_taken(what: &str, shipped: bool, fix: &str) -> String {
    if shipped {
        format!(
            "{what} is shipped with the server and only a caller with the '{ADMIN_ROLE}' role may change it, so it was not created or overwritten. {fix}"
        )
    } else {
        format!(
            "{what} belongs to another owner, so it was not created or overwritten (names are unique across owners, and only a record's owner may replace it). {fix}"
        )
    }
}

/// Why `create_<kind>` did not save the `kind` ("Chain", "Template") named `name` in `table`:
/// `refuse` first, given the record that holds the name (with the `extra` columns); else it is
/// the caller's (so only `overwrite_existing` replaces it), or another owner's or shipped, which
/// the caller may not replace at all.
pub async fn name_clash(
    ctx: &dyn ToolContext,
    me: &Principal,
    (table, extra, kind): (&str, &str, &str),
    name: &str,
    refuse: impl Fn(&Value) -> Option<ToolError>,
) -> ToolError {
    let noun = kind.to_lowercase();
    match name_holder(ctx, me, table, extra, name).await {
        Ok(Some(row)) => refuse(&row).unwrap_or_else(|| {
            ToolError::failed(if row["mine"].as_i64() == Some(1) {
                format!(
                    "{kind} '{name}' already exists. Use creation_options.overwrite_existing: true to replace it."
                )
            } else {
                name_taken(
                    &format!("{kind} '{name}'"),
                    row["shipped"].as_i64() == Some(1),
                    &format!("Choose another name for your {noun} ({noun}_definition.name)."),
                )
            })
        }),
        Ok(None) => ToolError::failed(format!(
            "{kind} '{name}' was removed while it was being saved; call create_{noun} again."
        )),
        Err(e) => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::caller;

    const SESSION: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn owners_are_the_token_user_else_the_mcp_session_else_nobody() {
        let p = Principal::new(&caller(Some("u-1"), &["admin"]), SESSION);
        assert_eq!(p.owner(), Some("user:u-1"));
        assert!(p.is_admin());
        let p = Principal::new(&caller(None, &[]), SESSION);
        assert_eq!(p.owner(), Some(&*format!("session:{SESSION}")));
        assert!(!p.is_admin());
        for stateless in ["stateless-203.0.113.9", "stateless-local", ""] {
            let p = Principal::new(&caller(None, &[]), stateless);
            assert_eq!(p.owner(), None, "{stateless}");
            let e = p.require_owner("save a template").unwrap_err().to_string();
            assert!(
                e.contains("Cannot save a template") && e.contains("bearer token"),
                "{e}"
            );
        }
    }

    #[test]
    fn predicates_number_their_parameters_from_where_they_are_placed() {
        let p = Principal::new(&caller(Some("u-1"), &["hr-read"]), SESSION);
        let r = p.can_read("t.", 3);
        assert!(
            r.sql.contains("t.owner IS ?3 AND ?3 IS NOT NULL") && r.sql.contains("json_each(?4)")
        );
        assert!(r.sql.contains("json_each(t.shared_roles)"));
        assert_eq!(r.params, vec![json!("user:u-1"), json!("[\"hr-read\"]")]);
        let w = p.can_write("", 5);
        assert_eq!(
            w.sql,
            "((owner IS ?5 AND ?5 IS NOT NULL) OR (owner IS NULL AND ?6 = 1))"
        );
        assert_eq!(w.params, vec![json!("user:u-1"), json!(0)]);
        let nobody = Principal::new(&caller(None, &[]), "stateless-local");
        assert_eq!(nobody.can_write("", 1).params[0], Value::Null);
    }

    #[test]
    fn sharing_is_checked_and_defaults_to_none() {
        assert_eq!(Sharing::from_args(&json!({}), "").unwrap(), None);
        let s = Sharing::from_args(&json!({ "visibility": "public" }), "")
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.visibility, s.roles_json()),
            (Visibility::Public, "[]".into())
        );
        let s = Sharing::from_args(&json!({ "shared_roles": ["hr-read", " hr-read "] }), "")
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.visibility, s.roles),
            (Visibility::Shared, vec!["hr-read".to_string()])
        );
        let e = Sharing::from_args(&json!({ "visibility": "shared" }), "creation_options.")
            .unwrap_err()
            .to_string();
        assert!(e.contains("creation_options.shared_roles"), "{e}");
        let e = Sharing::from_args(
            &json!({ "visibility": "private", "shared_roles": ["x"] }),
            "",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("only used with"), "{e}");
        let e = Sharing::from_args(&json!({ "shared_roles": [""] }), "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("role names"), "{e}");
        let many: Vec<String> = (0..21).map(|i| format!("r{i}")).collect();
        assert!(Sharing::from_args(&json!({ "shared_roles": many }), "").is_err());
        assert_eq!(sharing_params(None), [Value::Null, Value::Null]);
    }

    #[test]
    fn name_clashes_say_whose_record_it_is_and_what_to_do() {
        let m = name_taken("Template 'x'", false, "Choose another name.");
        assert!(m.contains("belongs to another owner") && m.ends_with("Choose another name."));
        let m = name_taken("Chain 'y'", true, "Choose another name.");
        assert!(m.contains("shipped") && m.contains("'admin' role"));
    }
}
