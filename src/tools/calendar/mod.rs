//! Calendar events through the Google Calendar API (seed 003, "Calendar Events"): `list_events`
//! lists a calendar's events in a time window, recurring events expanded, in start order.
//!
//! Access (issue 15): the tool needs the `calendar-read` role, since every caller acts with the
//! server's one credential; it reads only the calendars the deployment lists in
//! `CALENDAR_ALLOWED_IDS` (default `primary`), and its cached answers are kept per caller.
//!
//! Credentials, first found wins: `GOOGLE_CALENDAR_ACCESS_TOKEN` (secret, an OAuth access token,
//! used as given), or `GOOGLE_SERVICE_ACCOUNT_KEY` (secret, a service account's JSON key: the
//! server mints its own tokens, see [`service_account`]). `GOOGLE_CALENDAR_BASE_URL` defaults to
//! Google's API; tests point it at a local stand-in.

mod service_account;

use chrono::DateTime;
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::registry::cache::{CachePolicy, MIN_TTL_SECS};
use crate::registry::{Annotations, Outbound, ToolContext, ToolDef, ToolOutput};
use crate::tools::upstream::{encode, Api, FIX_ARGUMENTS};

const TOOLSET: &str = "calendar";

/// The role that may call `list_events`.
pub const READ_ROLE: &str = "calendar-read";

/// The deployment setting listing the calendar ids callers may read, comma-separated.
pub const ALLOWED_SETTING: &str = "CALENDAR_ALLOWED_IDS";

/// The calendars readable when [`ALLOWED_SETTING`] is unset or empty: the credential's own.
const DEFAULT_ALLOWED: &str = "primary";

/// The calendar ids the deployment allows, in the order given: [`ALLOWED_SETTING`] split on
/// commas, blanks dropped; `primary` alone when it lists none.
fn allowed_calendars(setting: Option<&str>) -> Vec<String> {
    let listed: Vec<String> = setting
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect();
    if listed.is_empty() {
        vec![DEFAULT_ALLOWED.to_string()]
    } else {
        listed
    }
}

/// Refuses a calendar the deployment does not list, naming the ones it does. Ids compare exactly:
/// the server's credential may see far more calendars than the deployment means to share.
fn check_allowed(calendar: &str, allowed: &[String]) -> Result<()> {
    if allowed.iter().any(|a| a == calendar) {
        return Ok(());
    }
    Err(Error::ToolFailed(format!(
        "calendar_id {calendar:?} is not a calendar this server shares; allowed: {}. Call again \
         with one of them (an operator adds calendars to the {ALLOWED_SETTING} setting).",
        allowed.join(", ")
    )))
}

/// The cache generation of `list_events`: a hash of the allowed calendars, so a deployment that
/// stops sharing a calendar is never answered from a result cached while it was shared.
fn allowed_generation(ctx: &dyn ToolContext) -> LocalBoxFuture<'_, Result<i64>> {
    Box::pin(async move {
        let allowed = allowed_calendars(ctx.platform().setting(ALLOWED_SETTING).as_deref());
        let digest = Sha256::digest(allowed.join("\n").as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        Ok(i64::from_be_bytes(first))
    })
}

/// Google's API: errors come as `{"error":{"code":…,"message":…}}`.
const GOOGLE_CALENDAR: Api = Api {
    name: "Google Calendar",
    token_setting: "GOOGLE_CALENDAR_ACCESS_TOKEN",
    auth_hint: "Check the secret GOOGLE_CALENDAR_ACCESS_TOKEN, or with GOOGLE_SERVICE_ACCOUNT_KEY that the calendar is shared with the service account's client_email.",
    refusal_hint: FIX_ARGUMENTS,
    base_url_setting: "GOOGLE_CALENDAR_BASE_URL",
    default_base_url: "https://www.googleapis.com",
    error_message: google_error,
};

fn google_error(body: &Value) -> Option<String> {
    body.pointer("/error/message")
        .and_then(Value::as_str)
        // OAuth endpoints answer `{"error":"invalid_grant","error_description":…}` instead.
        .or_else(|| body["error_description"].as_str())
        .or_else(|| body["error"].as_str())
        .map(str::to_string)
}

/// The events URL (path and query) for validated arguments; refuses a window that ends before it
/// starts, which the schema cannot express.
fn events_path(args: &Value) -> Result<String> {
    let time_min = args["time_min"].as_str().unwrap_or_default();
    let time_max = args["time_max"].as_str().unwrap_or_default();
    let parse = |field: &str, text: &str| {
        DateTime::parse_from_rfc3339(text).map_err(|_| {
            Error::InvalidArguments(format!(
                "{field} must be an RFC 3339 time like 2025-05-10T00:00:00Z, got {text:?}"
            ))
        })
    };
    if parse("time_max", time_max)? <= parse("time_min", time_min)? {
        return Err(Error::InvalidArguments(format!(
            "time_max {time_max} is not after time_min {time_min}; give a window that ends after it starts"
        )));
    }
    let calendar = args["calendar_id"].as_str().unwrap_or("primary");
    let max_results = args["max_results"].as_u64().unwrap_or(250);
    Ok(format!(
        "/calendar/v3/calendars/{}/events?timeMin={}&timeMax={}&maxResults={max_results}&singleEvents=true&orderBy=startTime",
        encode(calendar),
        encode(time_min),
        encode(time_max)
    ))
}

/// An event's start or end: `dateTime` for timed events, `date` for all-day ones.
fn when(v: &Value) -> Value {
    v.get("dateTime")
        .or_else(|| v.get("date"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The tool's answer from Google's events list.
fn normalize(reply: &Value) -> Result<Value> {
    let items = reply["items"].as_array().ok_or_else(|| {
        Error::ToolFailed("Google Calendar's answer has no items list; try again later.".into())
    })?;
    let events: Vec<Value> = items
        .iter()
        .map(|e| {
            let attendees: Vec<Value> = e["attendees"]
                .as_array()
                .map(|a| a.iter().filter_map(|p| p.get("email").cloned()).collect())
                .unwrap_or_default();
            json!({
                "id": e["id"],
                "summary": e["summary"],
                "start": when(&e["start"]),
                "end": when(&e["end"]),
                "location": e["location"],
                "attendees": attendees,
                "status": e["status"],
            })
        })
        .collect();
    Ok(json!({
        "events": events,
        "count": events.len(),
        // Google pages beyond maxResults; a later window or a higher max_results shows the rest.
        "has_more": reply.get("nextPageToken").is_some_and(|t| !t.is_null()),
        "status": "ok",
    }))
}

/// The access token for Google: the configured one, else one minted for the service account.
async fn bearer(ctx: &dyn ToolContext) -> Result<String> {
    if let Some(token) = ctx.platform().setting(GOOGLE_CALENDAR.token_setting) {
        return Ok(token);
    }
    match ctx.platform().setting(service_account::KEY_SETTING) {
        Some(key) => service_account::access_token(ctx, &key).await,
        None => Err(Error::ToolFailed(format!(
            "Google Calendar is not configured on this server: set the secret {} (an OAuth access \
             token) or {} (a service account's JSON key; share the calendar with its client_email), \
             e.g. npx wrangler secret put {}.",
            GOOGLE_CALENDAR.token_setting,
            service_account::KEY_SETTING,
            service_account::KEY_SETTING
        ))),
    }
}

fn list_events(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, Result<ToolOutput>> {
    Box::pin(async move {
        let path = events_path(&args)?;
        check_allowed(
            args["calendar_id"].as_str().unwrap_or(DEFAULT_ALLOWED),
            &allowed_calendars(ctx.platform().setting(ALLOWED_SETTING).as_deref()),
        )?;
        let token = bearer(ctx).await?;
        let reply = GOOGLE_CALENDAR
            .send_idempotent(
                ctx,
                Outbound {
                    method: "GET",
                    url: format!("{}{path}", GOOGLE_CALENDAR.base_url(ctx)),
                    headers: vec![
                        ("Authorization".into(), format!("Bearer {token}")),
                        ("Accept".into(), "application/json".into()),
                    ],
                    body: None,
                },
            )
            .await?;
        let value = normalize(&reply)?;
        let summary = format!(
            "{} events between {} and {}",
            value["count"],
            args["time_min"].as_str().unwrap_or_default(),
            args["time_max"].as_str().unwrap_or_default()
        );
        Ok(ToolOutput::Described { value, summary })
    })
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[ToolDef {
    toolset: TOOLSET,
    name: "list_events",
    title: "List calendar events",
    description: "List the events of a Google Calendar this server shares (primary by default; another calendar_id only if the deployment allows it) between time_min and time_max (RFC 3339), recurring events expanded, in start order: id, summary, start, end, location, attendee emails and status.",
    annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: true },
    input_schema: include_str!("../../../schema/calendar/list_events.input.json"),
    output_schema: Some(include_str!("../../../schema/calendar/list_events.output.json")),
    timeout_ms: 20_000,
    roles: &[READ_ROLE],
    handler: list_events,
    // Kept per caller, so a result is served only to the caller who fetched it, and under the
    // allowed calendars' generation; a calendar changes more often than flight offers, so only
    // KV's shortest TTL.
    cache: Some(CachePolicy {
        ttl_secs: MIN_TTL_SECS,
        per_caller: true,
        generation: Some(allowed_generation),
    }),
    ..ToolDef::DEFAULTS
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_events_url_with_defaults_and_encoding() {
        let path = events_path(
            &json!({"time_min":"2025-05-10T00:00:00Z","time_max":"2025-05-15T23:59:59+02:00"}),
        )
        .unwrap();
        assert_eq!(path, "/calendar/v3/calendars/primary/events?timeMin=2025-05-10T00%3A00%3A00Z&timeMax=2025-05-15T23%3A59%3A59%2B02%3A00&maxResults=250&singleEvents=true&orderBy=startTime");
        let path = events_path(&json!({"calendar_id":"team@group.calendar.google.com","time_min":"2025-05-10T00:00:00Z","time_max":"2025-05-11T00:00:00Z","max_results":5})).unwrap();
        assert!(
            path.starts_with("/calendar/v3/calendars/team%40group.calendar.google.com/events?"),
            "{path}"
        );
        assert!(path.contains("maxResults=5&"), "{path}");
    }

    #[test]
    fn allows_only_the_listed_calendars_primary_by_default() {
        assert_eq!(allowed_calendars(None), vec!["primary"]);
        assert_eq!(allowed_calendars(Some(" , ")), vec!["primary"]);
        let listed = allowed_calendars(Some("primary, team@group.calendar.google.com,"));
        assert_eq!(listed, vec!["primary", "team@group.calendar.google.com"]);
        assert!(check_allowed("team@group.calendar.google.com", &listed).is_ok());
        let refused = check_allowed("ceo@example.com", &listed);
        assert!(
            matches!(&refused, Err(Error::ToolFailed(m)) if m.contains("\"ceo@example.com\" is not a calendar this server shares; allowed: primary, team@group.calendar.google.com")),
            "{refused:?}"
        );
        assert!(
            check_allowed("Primary", &allowed_calendars(None)).is_err(),
            "ids compare exactly"
        );
    }

    #[test]
    fn refuses_a_window_that_does_not_end_after_it_starts() {
        // The same instant written in two offsets is an empty window.
        let e = events_path(
            &json!({"time_min":"2025-05-10T02:00:00+02:00","time_max":"2025-05-10T00:00:00Z"}),
        );
        assert!(matches!(e, Err(Error::InvalidArguments(m)) if m.contains("not after time_min")));
    }

    #[test]
    fn normalizes_timed_and_all_day_events() {
        let reply = json!({"items":[
            {"id":"e1","summary":"Standup","start":{"dateTime":"2025-05-10T09:00:00Z"},"end":{"dateTime":"2025-05-10T09:15:00Z"},"attendees":[{"email":"a@x.com"},{"displayName":"no email"}],"status":"confirmed"},
            {"id":"e2","start":{"date":"2025-05-11"},"end":{"date":"2025-05-12"},"location":"Berlin","status":"tentative"}
        ],"nextPageToken":"abc"});
        let out = normalize(&reply).unwrap();
        assert_eq!(out["count"], 2);
        assert_eq!(out["has_more"], true);
        assert_eq!(out["events"][0]["attendees"], json!(["a@x.com"]));
        assert_eq!(out["events"][1]["start"], "2025-05-11");
        assert_eq!(out["events"][1]["summary"], Value::Null);
        assert!(normalize(&json!({})).is_err());
        assert_eq!(
            google_error(&json!({"error":{"code":404,"message":"Not Found"}})).as_deref(),
            Some("Not Found")
        );
    }
}
