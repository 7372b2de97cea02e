//! Flight search through Duffel (seed 003, "Flights Search"): `search_flights` asks Duffel for
//! offers and returns them normalized, cheapest first.
//!
//! Settings: `DUFFEL_API_TOKEN` (secret), `DUFFEL_BASE_URL` (defaults to Duffel's API; tests point
//! it at a local stand-in).

use chrono::NaiveDate;
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use crate::registry::cache::CachePolicy;
use crate::registry::{
    Annotations, Outbound, ToolContext, ToolDef, ToolError, ToolOutput, ToolResult,
};
use crate::tools::upstream::{Api, FIX_ARGUMENTS};

const TOOLSET: &str = "flights";
/// Most offers returned: Duffel can answer hundreds, far more than a model can weigh.
const MAX_OFFERS: usize = 50;
/// Connections per direction when the caller names none: the seed's default (Duffel's own is 1,
/// which would hide itineraries the seed's callers expect).
const DEFAULT_MAX_CONNECTIONS: u64 = 2;

/// Duffel's API: errors come as `{"errors":[{"message":…,"title":…}]}`.
const DUFFEL: Api = Api {
    name: "Duffel",
    token_setting: "DUFFEL_API_TOKEN",
    auth_hint: "Check the secret DUFFEL_API_TOKEN.",
    refusal_hint: FIX_ARGUMENTS,
    base_url_setting: "DUFFEL_BASE_URL",
    default_base_url: "https://api.duffel.com",
    error_message: duffel_error,
};

fn duffel_error(body: &Value) -> Option<String> {
    let messages: Vec<String> = body["errors"]
        .as_array()?
        .iter()
        .filter_map(|e| {
            e["message"]
                .as_str()
                .or_else(|| e["title"].as_str())
                .map(str::to_string)
        })
        .collect();
    (!messages.is_empty()).then(|| messages.join("; "))
}

/// The date of `field` (the schema checked its format; this parses it for comparison).
fn date(args: &Value, field: &str) -> ToolResult<NaiveDate> {
    let text = args[field].as_str().unwrap_or_default();
    NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
        ToolError::invalid(format!(
            "{field} must be a date like 2025-05-10, got {text:?}"
        ))
    })
}

/// Checks what the schema cannot express and builds Duffel's offer request body.
fn offer_request(args: &Value) -> ToolResult<Value> {
    let origin = args["origin"].as_str().unwrap_or_default();
    let destination = args["destination"].as_str().unwrap_or_default();
    if origin == destination {
        return Err(ToolError::invalid(format!(
            "origin and destination are both {origin}; give two different airports"
        )));
    }
    let departure = date(args, "departure_date")?;
    let mut slices = vec![json!({
        "origin": origin,
        "destination": destination,
        "departure_date": departure.to_string(),
    })];
    if args.get("return_date").is_some() {
        let back = date(args, "return_date")?;
        // A same-day return (a day trip) is a real itinerary, so only an earlier date is refused.
        if back < departure {
            return Err(ToolError::invalid(format!(
                "return_date {back} is before departure_date {departure}; the return must be on or after the departure"
            )));
        }
        slices.push(json!({
            "origin": destination,
            "destination": origin,
            "departure_date": back.to_string(),
        }));
    }
    let adults = args["adults"].as_u64().unwrap_or(1);
    let passengers: Vec<Value> = (0..adults).map(|_| json!({ "type": "adult" })).collect();
    let mut data = json!({
        "slices": slices,
        "passengers": passengers,
        "cabin_class": args["cabin_class"].as_str().unwrap_or("economy"),
    });
    let max_connections = args
        .get("max_connections")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_MAX_CONNECTIONS);
    data["max_connections"] = json!(max_connections);
    Ok(json!({ "data": data }))
}

/// Seconds of an ISO 8601 duration as Duffel writes them (`PT11H5M`, `P1DT2H30M`); `None` for
/// anything else.
fn duration_secs(text: &str) -> Option<u64> {
    let rest = text.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut total = 0u64;
    let mut number = String::new();
    for (part, units) in [
        (days, &[('D', 86_400u64)][..]),
        (time, &[('H', 3600), ('M', 60), ('S', 1)][..]),
    ] {
        for c in part.chars() {
            if c.is_ascii_digit() {
                number.push(c);
            } else {
                let (_, secs) = units.iter().find(|(u, _)| *u == c)?;
                total += number.parse::<u64>().ok()? * secs;
                number.clear();
            }
        }
        if !number.is_empty() {
            return None;
        }
    }
    Some(total)
}

/// `PT{h}H{m}M` for a number of seconds.
fn iso_duration(secs: u64) -> String {
    format!("PT{}H{}M", secs / 3600, secs % 3600 / 60)
}

/// One Duffel offer as the tool returns it.
fn normalize_offer(offer: &Value) -> Value {
    let slices = offer["slices"].as_array().cloned().unwrap_or_default();
    let mut segments = Vec::new();
    let mut carriers: Vec<String> = Vec::new();
    let mut stops = 0usize;
    let mut secs = Some(0u64);
    for slice in &slices {
        let segs = slice["segments"].as_array().cloned().unwrap_or_default();
        stops += segs.len().saturating_sub(1);
        // The journey's length is the sum of its slices; unknown if any slice's is missing.
        secs = match (secs, slice["duration"].as_str().and_then(duration_secs)) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        for seg in &segs {
            let carrier = &seg["marketing_carrier"];
            let code = carrier["iata_code"].as_str().unwrap_or_default();
            let name = carrier["name"].as_str().unwrap_or(code).to_string();
            if !name.is_empty() && !carriers.contains(&name) {
                carriers.push(name);
            }
            let number = seg["marketing_carrier_flight_number"]
                .as_str()
                .unwrap_or_default();
            segments.push(json!({
                "from": seg["origin"]["iata_code"],
                "to": seg["destination"]["iata_code"],
                "departs_at": seg["departing_at"],
                "arrives_at": seg["arriving_at"],
                "carrier": code,
                "flight_number": format!("{code}{number}"),
            }));
        }
    }
    json!({
        "id": offer["id"],
        "price": offer["total_amount"],
        "currency": offer["total_currency"],
        "carriers": carriers,
        "segments": segments,
        "duration": secs.filter(|_| !slices.is_empty()).map(iso_duration),
        "stops": stops,
    })
}

/// The tool's answer from Duffel's offer request: the cheapest [`MAX_OFFERS`] offers.
fn normalize(reply: &Value) -> ToolResult<Value> {
    let offers = reply
        .pointer("/data/offers")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            ToolError::failed("Duffel's answer has no data.offers list; try again later.")
        })?;
    let mut flights: Vec<Value> = offers.iter().map(normalize_offer).collect();
    let price = |f: &Value| {
        f["price"]
            .as_str()
            .and_then(|p| p.parse::<f64>().ok())
            .unwrap_or(f64::INFINITY)
    };
    crate::engine::sort::sort_by(&mut flights, |a, b| price(a).total_cmp(&price(b)));
    let total = flights.len();
    flights.truncate(MAX_OFFERS);
    Ok(json!({
        "flights": flights,
        "count": flights.len(),
        "total_offers": total,
        "status": "success",
    }))
}

fn search_flights(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let body = offer_request(&args)?;
        let token = DUFFEL.token(ctx)?;
        let reply = DUFFEL
            .send(
                ctx,
                Outbound {
                    method: "POST",
                    url: format!(
                        "{}/air/offer_requests?return_offers=true",
                        DUFFEL.base_url(ctx)
                    ),
                    headers: vec![
                        ("Authorization".into(), format!("Bearer {token}")),
                        ("Duffel-Version".into(), "v2".into()),
                        ("Content-Type".into(), "application/json".into()),
                        ("Accept".into(), "application/json".into()),
                    ],
                    body: Some(body.to_string()),
                },
            )
            .await?;
        let value = normalize(&reply)?;
        let summary = format!(
            "{} flight offers from {} to {}{}",
            value["count"],
            args["origin"].as_str().unwrap_or_default(),
            args["destination"].as_str().unwrap_or_default(),
            if value["count"] == value["total_offers"] {
                String::new()
            } else {
                format!(" (cheapest of {})", value["total_offers"])
            }
        );
        Ok(ToolOutput::Described { value, summary })
    })
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[ToolDef {
    toolset: TOOLSET,
    name: "search_flights",
    title: "Search flights",
    description: "Search flight offers (Duffel) between two airports by IATA code for a date, optionally with a return date, a number of adult passengers, a cabin class and the most connections per direction (max_connections, default 2). Returns the cheapest offers with price, carriers, segments, total duration and stops.",
    annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: true },
    input_schema: include_str!("../../../schema/flights/search_flights.input.json"),
    output_schema: Some(include_str!("../../../schema/flights/search_flights.output.json")),
    // Duffel gathers offers from airlines live; an offer request can take well over ten seconds.
    timeout_ms: 45_000,
    roles: &[],
    handler: search_flights,
    // Offers change by the minute but not by the second: the same search within five minutes is
    // answered from KV instead of another offer request (the server's token, so any caller's).
    cache: Some(CachePolicy::SHARED),
    ..ToolDef::DEFAULTS
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_one_way_and_round_trip_requests() {
        let one = offer_request(
            &json!({"origin":"SFO","destination":"CDG","departure_date":"2025-05-10"}),
        )
        .unwrap();
        assert_eq!(
            one,
            json!({"data":{"slices":[{"origin":"SFO","destination":"CDG","departure_date":"2025-05-10"}],"passengers":[{"type":"adult"}],"cabin_class":"economy","max_connections":2}})
        );
        let round = offer_request(&json!({"origin":"SFO","destination":"CDG","departure_date":"2025-05-10","return_date":"2025-05-10","adults":2,"cabin_class":"business","max_connections":0})).unwrap();
        assert_eq!(
            round["data"]["slices"][1],
            json!({"origin":"CDG","destination":"SFO","departure_date":"2025-05-10"})
        );
        assert_eq!(
            round["data"]["passengers"].as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(round["data"]["max_connections"], 0);
    }

    #[test]
    fn refuses_a_return_before_departure_and_a_round_trip_to_nowhere() {
        let e = offer_request(
            &json!({"origin":"SFO","destination":"CDG","departure_date":"2025-05-10","return_date":"2025-05-09"}),
        );
        assert!(
            matches!(e, Err(ToolError::Invalid { message: m, .. }) if m.contains("before departure_date"))
        );
        let e = offer_request(
            &json!({"origin":"SFO","destination":"SFO","departure_date":"2025-05-10"}),
        );
        assert!(matches!(e, Err(ToolError::Invalid { message: _, .. })));
    }

    #[test]
    fn parses_duffel_durations() {
        assert_eq!(duration_secs("PT11H5M"), Some(11 * 3600 + 300));
        assert_eq!(duration_secs("P1DT2H"), Some(26 * 3600));
        assert_eq!(duration_secs("PT45M"), Some(2700));
        assert_eq!(duration_secs("11H"), None);
        assert_eq!(duration_secs("PT5X"), None);
        assert_eq!(iso_duration(26 * 3600 + 300), "PT26H5M");
    }

    #[test]
    fn normalizes_offers_cheapest_first() {
        let seg = |from: &str, to: &str, code: &str, n: &str| json!({"origin":{"iata_code":from},"destination":{"iata_code":to},"departing_at":"2025-05-10T10:00:00","arriving_at":"2025-05-10T12:00:00","marketing_carrier":{"iata_code":code,"name":format!("{code} Air")},"marketing_carrier_flight_number":n});
        let reply = json!({"data":{"offers":[
            {"id":"off_2","total_amount":"900.10","total_currency":"USD","slices":[{"duration":"PT10H","segments":[seg("SFO","JFK","AA","10"),seg("JFK","CDG","AF","9")]}]},
            {"id":"off_1","total_amount":"450.00","total_currency":"USD","slices":[{"duration":"PT11H5M","segments":[seg("SFO","CDG","AF","83")]}]}
        ]}});
        let out = normalize(&reply).unwrap();
        assert_eq!(out["count"], 2);
        assert_eq!(out["status"], "success");
        assert_eq!(out["flights"][0]["id"], "off_1");
        assert_eq!(out["flights"][0]["segments"][0]["flight_number"], "AF83");
        assert_eq!(out["flights"][0]["duration"], "PT11H5M");
        assert_eq!(out["flights"][1]["stops"], 1);
        assert_eq!(out["flights"][1]["carriers"], json!(["AA Air", "AF Air"]));
        assert!(normalize(&json!({"data":{}})).is_err());
    }

    #[test]
    fn quotes_duffel_error_messages() {
        let body =
            json!({"errors":[{"title":"Invalid","message":"departure_date must be after today"}]});
        assert_eq!(
            duffel_error(&body).as_deref(),
            Some("departure_date must be after today")
        );
        assert_eq!(duffel_error(&json!({})), None);
    }
}
