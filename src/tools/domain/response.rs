//! The answer of every domain tool (seed 002, §9.1): `success` with data (and page metadata for
//! lists), `error` with one of the seed's codes, a message and a suggested action, or
//! `pending_confirmation` for a write that waits for a human. It is the tool's `structuredContent`
//! (its `outputSchema` is `schema/domain/response.output.json`); a short readable line comes first
//! in the text content. Technical details of failures go to the logs, never to the caller.

use serde_json::{json, Value};

use crate::registry::{ToolError, ToolOutput};

/// The error codes of the seed's response schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// No such employee (or not one the caller may see).
    EmployeeNotFound,
    /// No such customer.
    CustomerNotFound,
    /// No such invoice.
    InvoiceNotFound,
    /// No such ticket.
    TicketNotFound,
    /// No such knowledge article.
    ArticleNotFound,
    /// No such budget.
    BudgetNotFound,
    /// The caller's roles do not allow this.
    InsufficientPermissions,
    /// A bad argument (including a rejected cursor).
    InvalidInput,
    /// Storage failed.
    DatabaseError,
    /// A business rule refused the change.
    ValidationError,
    /// The operation could not be carried out.
    OperationFailed,
    /// A confirmation was decided by someone other than who asked for it.
    UserMismatch,
}

impl Code {
    /// The code as the schema spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::EmployeeNotFound => "EMPLOYEE_NOT_FOUND",
            Code::CustomerNotFound => "CUSTOMER_NOT_FOUND",
            Code::InvoiceNotFound => "INVOICE_NOT_FOUND",
            Code::TicketNotFound => "TICKET_NOT_FOUND",
            Code::ArticleNotFound => "ARTICLE_NOT_FOUND",
            Code::BudgetNotFound => "BUDGET_NOT_FOUND",
            Code::InsufficientPermissions => "INSUFFICIENT_PERMISSIONS",
            Code::InvalidInput => "INVALID_INPUT",
            Code::DatabaseError => "DATABASE_ERROR",
            Code::ValidationError => "VALIDATION_ERROR",
            Code::OperationFailed => "OPERATION_FAILED",
            Code::UserMismatch => "USER_MISMATCH",
        }
    }
}

/// Page metadata of a list answer (seed §3 `PaginationMetadata`, with the legacy aliases).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Rows in this answer.
    pub returned: usize,
    /// The cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
    /// How to get the next page, when there is one.
    pub hint: Option<&'static str>,
    /// The filters that narrow this list, named in the truncation warning (seed §5.3).
    pub refine: &'static str,
}

impl Page {
    /// The seed's truncation warning (§5.3, "Truncation Warning Pattern"): the page is not all of
    /// the answer, so the model should say so and ask the user to narrow the question.
    pub fn warning(&self) -> String {
        let n = self.returned;
        format!(
            "TRUNCATION WARNING: Only {n} of {n}+ records returned. Results are incomplete. Ask user to refine query by specifying: {}.",
            self.refine
        )
    }

    fn to_json(&self) -> Value {
        let more = self.next_cursor.is_some();
        let estimate = if more {
            format!("{}+", self.returned)
        } else {
            self.returned.to_string()
        };
        let mut m = json!({
            "hasMore": more,
            "returnedCount": self.returned,
            "totalEstimate": estimate,
            "truncated": more,
            "totalCount": estimate,
        });
        if let Some(c) = &self.next_cursor {
            m["nextCursor"] = json!(c);
        }
        if let Some(h) = &self.hint {
            m["hint"] = json!(h);
        }
        if more {
            m["warning"] = json!(self.warning());
        }
        m
    }
}

/// A domain tool's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The data asked for.
    Success {
        /// The data.
        data: Value,
        /// Page metadata, for lists.
        page: Option<Page>,
        /// One readable line about it.
        summary: String,
    },
    /// Why not, and what to do instead.
    Failure {
        /// The code.
        code: Code,
        /// What happened.
        message: String,
        /// What the model should do next.
        suggested_action: Option<String>,
        /// More fields of the answer (the candidates of an ambiguous name).
        details: Option<Box<Value>>,
    },
    /// An answer already in the union's JSON form (a decision relayed from the confirmation
    /// store).
    Relayed(Value),
    /// A write waiting for a human's decision.
    Pending {
        /// The confirmation's id.
        confirmation_id: String,
        /// The page where the user approves or denies it in a browser, when the call has a session
        /// (see [`super::confirm::approve_url`]).
        approve_url: Option<String>,
        /// Exactly what will change.
        message: String,
        /// Action, target, user id, timestamp.
        confirmation_data: Value,
    },
}

impl Reply {
    /// The data asked for, in one answer.
    pub fn success(summary: impl Into<String>, data: Value) -> Reply {
        Reply::Success {
            data,
            page: None,
            summary: summary.into(),
        }
    }

    /// One page of a list.
    pub fn page(summary: String, rows: Vec<Value>, page: Page) -> Reply {
        Reply::Success {
            data: Value::Array(rows),
            page: Some(page),
            summary,
        }
    }

    /// What a confirmed write did: `text` is both the summary and the data's `message`.
    pub fn done(text: String, mut data: Value) -> Reply {
        data["message"] = json!(text);
        Reply::success(text, data)
    }

    /// A failure with a suggested action.
    pub fn failure(code: Code, message: impl Into<String>, action: impl Into<String>) -> Reply {
        Reply::Failure {
            code,
            message: message.into(),
            suggested_action: Some(action.into()),
            details: None,
        }
    }

    /// This failure with more fields in its JSON (`details` is an object; the union's fields win).
    pub fn with_details(self, extra: Value) -> Reply {
        match self {
            Reply::Failure {
                code,
                message,
                suggested_action,
                ..
            } => Reply::Failure {
                code,
                message,
                suggested_action,
                details: Some(Box::new(extra)),
            },
            other => other,
        }
    }

    /// The answer for a fault on our side: the details are logged (by the caller of this), the
    /// caller gets the code and what to do.
    pub fn from_error(e: &ToolError) -> Reply {
        match e {
            ToolError::Internal(fault) if !fault.is_public() => Reply::failure(
                Code::DatabaseError,
                "The data could not be read or written just now.",
                "Retry in a moment; if it keeps failing, contact support.",
            ),
            ToolError::Timeout(m) => Reply::failure(
                Code::OperationFailed,
                m.clone(),
                "Retry, or narrow the request.",
            ),
            other => Reply::failure(
                Code::InvalidInput,
                other.public_message(),
                "Check the arguments and try again.",
            ),
        }
    }

    /// The JSON of the answer (the tool's `structuredContent`).
    pub fn to_json(&self) -> Value {
        match self {
            Reply::Success { data, page, .. } => {
                let mut v = json!({ "status": "success", "data": data });
                if let Some(p) = page {
                    v["metadata"] = p.to_json();
                }
                v
            }
            Reply::Failure {
                code,
                message,
                suggested_action,
                details,
            } => {
                let mut v = json!({ "status": "error", "code": code.as_str(), "message": message });
                if let Some(a) = suggested_action {
                    v["suggestedAction"] = json!(a);
                }
                if let (Some(m), Some(extra)) = (
                    v.as_object_mut(),
                    details.as_deref().and_then(Value::as_object),
                ) {
                    for (k, x) in extra {
                        m.entry(k.clone()).or_insert_with(|| x.clone());
                    }
                }
                v
            }
            Reply::Relayed(v) => v.clone(),
            Reply::Pending {
                confirmation_id,
                approve_url,
                message,
                confirmation_data,
            } => {
                let mut v = json!({
                    "status": "pending_confirmation",
                    "confirmationId": confirmation_id,
                    "message": message,
                    "confirmationData": confirmation_data,
                });
                if let Some(url) = approve_url {
                    v["approveUrl"] = json!(url);
                }
                v
            }
        }
    }

    /// The readable line shown before the JSON.
    pub fn summary(&self) -> String {
        match self {
            Reply::Success { summary, page, .. } => match page {
                Some(p @ Page { hint: Some(h), .. }) => format!("{summary} {} {h}", p.warning()),
                _ => summary.clone(),
            },
            Reply::Failure {
                code,
                message,
                suggested_action,
                ..
            } => match suggested_action {
                Some(a) => format!("{}: {message} {a}", code.as_str()),
                None => format!("{}: {message}", code.as_str()),
            },
            Reply::Pending {
                message,
                approve_url,
                ..
            } => {
                let at = approve_url
                    .as_ref()
                    .map(|url| format!("at {url} (or "))
                    .unwrap_or_else(|| "with ".into());
                let close = if approve_url.is_some() { ")" } else { "" };
                format!(
                    "Waiting for the user's confirmation: they approve or deny it {at}POST /api/confirm/<confirmationId> with {{\"approved\": true}} and their token{close}; get_confirmation tells whether they did. {message}"
                )
            }
            Reply::Relayed(v) => match (
                v["status"].as_str(),
                v["message"].as_str(),
                v.pointer("/data/message").and_then(Value::as_str),
            ) {
                (_, _, Some(m)) => m.to_string(),
                (Some("error"), Some(m), _) => {
                    format!("{}: {m}", v["code"].as_str().unwrap_or("ERROR"))
                }
                _ => v.to_string(),
            },
        }
    }

    /// The tool output: structured content with a readable line first.
    pub fn into_output(self) -> ToolOutput {
        ToolOutput::Described {
            summary: self.summary(),
            value: self.to_json(),
        }
    }
}
