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

use crate::error::Result;
use crate::registry::cache::{CachePolicy, MIN_TTL_SECS};
use crate::registry::{
    Annotations, Outbound, ToolContext, ToolDef, ToolError, ToolOutput, ToolResult,
};
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
fn check_allowed(calendar: &str, allowed: &[String]) -> ToolResult<()> {
    if allowed.iter().any(|a| a == calendar) {
        return Ok(());
    }
    Err(ToolError::failed(format!(
        "calendarId {calendar:?} is not a calendar this server shares; allowed: {}. Call again \
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

/// The arguments of `list_events`, in the seed's names (`calendarId`, `timeMin`, `timeMax`,
/// `maxResults`, `singleEvents`); the earlier snake_case names (`calendar_id`, `time_min`,
/// `time_max`, `max_results`) are still accepted, one name per field.
#[derive(Debug, Clone, PartialEq)]
struct EventQuery {
    calendar: String,
    time_min: String,
    time_max: String,
    max_results: u64,
    single_events: bool,
}

/// The seed's default `maxResults`.
const DEFAULT_MAX_RESULTS: u64 = 25;

/// The value of a field given under its seed name or its earlier name; both at once is refused,
/// since they could disagree.
fn either<'a>(args: &'a Value, name: &str, earlier: &str) -> ToolResult<Option<&'a Value>> {
    match (args.get(name), args.get(earlier)) {
        (Some(_), Some(_)) => Err(ToolError::invalid(format!(
            "{name} and {earlier} are the same field under two names; give only {name}"
        ))),
        (a, b) => Ok(a.or(b)),
    }
}

impl EventQuery {
    /// Reads validated arguments; refuses a window that ends before it starts, which the schema
    /// cannot express.
    fn from_args(args: &Value) -> ToolResult<EventQuery> {
        let text = |name: &str, earlier: &str| -> ToolResult<String> {
            either(args, name, earlier)?
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| {
                    ToolError::invalid(format!(
                        "{name} is required: an RFC 3339 time like 2025-05-10T00:00:00Z"
                    ))
                })
        };
        let time_min = text("timeMin", "time_min")?;
        let time_max = text("timeMax", "time_max")?;
        let parse = |field: &str, text: &str| {
            DateTime::parse_from_rfc3339(text).map_err(|_| {
                ToolError::invalid(format!(
                    "{field} must be an RFC 3339 time like 2025-05-10T00:00:00Z, got {text:?}"
                ))
            })
        };
        if parse("timeMax", &time_max)? <= parse("timeMin", &time_min)? {
            return Err(ToolError::invalid(format!(
                "timeMax {time_max} is not after timeMin {time_min}; give a window that ends after it starts"
            )));
        }
        Ok(EventQuery {
            calendar: either(args, "calendarId", "calendar_id")?
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_ALLOWED)
                .to_string(),
            time_min,
            time_max,
            max_results: either(args, "maxResults", "max_results")?
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_MAX_RESULTS),
            single_events: args["singleEvents"].as_bool().unwrap_or(false),
        })
    }

    /// The events URL (path and query). Google orders by start time only for expanded
    /// recurring events, so `orderBy=startTime` goes with `singleEvents=true` alone.
    fn path(&self) -> String {
        format!(
            "/calendar/v3/calendars/{}/events?timeMin={}&timeMax={}&maxResults={}&singleEvents={}{}",
            encode(&self.calendar),
            encode(&self.time_min),
            encode(&self.time_max),
            self.max_results,
            self.single_events,
            if self.single_events {
                "&orderBy=startTime"
            } else {
                ""
            }
        )
    }
}

/// An event's start or end: `dateTime` for timed events, `date` for all-day ones.
fn when(v: &Value) -> Value {
    v.get("dateTime")
        .or_else(|| v.get("date"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The tool's answer from Google's events list.
fn normalize(reply: &Value) -> ToolResult<Value> {
    let items = reply["items"].as_array().ok_or_else(|| {
        ToolError::failed("Google Calendar's answer has no items list; try again later.")
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
        "status": "success",
    }))
}

/// The access token for Google: the configured one, else one minted for the service account.
async fn bearer(ctx: &dyn ToolContext) -> ToolResult<String> {
    if let Some(token) = ctx.platform().setting(GOOGLE_CALENDAR.token_setting) {
        return Ok(token);
    }
    match ctx.platform().setting(service_account::KEY_SETTING) {
        Some(key) => service_account::access_token(ctx, &key).await,
        None => Err(ToolError::failed(format!(
            "Google Calendar is not configured on this server: set the secret {} (an OAuth access \
             token) or {} (a service account's JSON key; share the calendar with its client_email), \
             e.g. npx wrangler secret put {}.",
            GOOGLE_CALENDAR.token_setting,
            service_account::KEY_SETTING,
            service_account::KEY_SETTING
        ))),
    }
}

fn list_events(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let query = EventQuery::from_args(&args)?;
        check_allowed(
            &query.calendar,
            &allowed_calendars(ctx.platform().setting(ALLOWED_SETTING).as_deref()),
        )?;
        let token = bearer(ctx).await?;
        let reply = GOOGLE_CALENDAR
            .send_idempotent(
                ctx,
                Outbound {
                    method: "GET",
                    url: format!("{}{}", GOOGLE_CALENDAR.base_url(ctx), query.path()),
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
            value["count"], query.time_min, query.time_max
        );
        Ok(ToolOutput::Described { value, summary })
    })
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[ToolDef {
    toolset: TOOLSET,
    name: "list_events",
    title: "List calendar events",
    description: "List the events of a Google Calendar this server shares (calendarId: primary by default; another id only if the deployment allows it) between timeMin and timeMax (RFC 3339), at most maxResults (default 25): id, summary, start, end, location, attendee emails and status. singleEvents: true expands recurring events and orders by start time. The snake_case names calendar_id, time_min, time_max and max_results are accepted too.",
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
    seed_server: Some("google-calendar-mcp"),
    ..ToolDef::DEFAULTS
}];

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(args: Value) -> String {
        EventQuery::from_args(&args).unwrap().path()
    }

    #[test]
    fn builds_the_events_url_with_the_seeds_defaults_and_encoding() {
        let path = path_of(
            json!({"timeMin":"2025-05-10T00:00:00Z","timeMax":"2025-05-15T23:59:59+02:00"}),
        );
        assert_eq!(path, "/calendar/v3/calendars/primary/events?timeMin=2025-05-10T00%3A00%3A00Z&timeMax=2025-05-15T23%3A59%3A59%2B02%3A00&maxResults=25&singleEvents=false");
        let path = path_of(
            json!({"calendarId":"team@group.calendar.google.com","timeMin":"2025-05-10T00:00:00Z","timeMax":"2025-05-11T00:00:00Z","maxResults":5,"singleEvents":true}),
        );
        assert!(
            path.starts_with("/calendar/v3/calendars/team%40group.calendar.google.com/events?"),
            "{path}"
        );
        assert!(
            path.ends_with("maxResults=5&singleEvents=true&orderBy=startTime"),
            "{path}"
        );
    }

    #[test]
    fn accepts_the_earlier_names_but_not_both_names_of_a_field() {
        let earlier = json!({"calendar_id":"primary","time_min":"2025-05-10T00:00:00Z","time_max":"2025-05-11T00:00:00Z","max_results":7});
        let seed = json!({"calendarId":"primary","timeMin":"2025-05-10T00:00:00Z","timeMax":"2025-05-11T00:00:00Z","maxResults":7});
        assert_eq!(
            EventQuery::from_args(&earlier).unwrap(),
            EventQuery::from_args(&seed).unwrap()
        );
        let both = json!({"timeMin":"2025-05-10T00:00:00Z","time_min":"2025-05-09T00:00:00Z","timeMax":"2025-05-11T00:00:00Z"});
        assert!(matches!(
            EventQuery::from_args(&both),
            Err(ToolError::Invalid { message: m, .. }) if m == "timeMin and time_min are the same field under two names; give only timeMin"
        ));
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
            matches!(&refused, Err(ToolError::Failed { message: m }) if m.contains("\"ceo@example.com\" is not a calendar this server shares; allowed: primary, team@group.calendar.google.com")),
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
        let e = EventQuery::from_args(
            &json!({"timeMin":"2025-05-10T02:00:00+02:00","timeMax":"2025-05-10T00:00:00Z"}),
        );
        assert!(
            matches!(e, Err(ToolError::Invalid { message: m, .. }) if m.contains("not after timeMin"))
        );
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
