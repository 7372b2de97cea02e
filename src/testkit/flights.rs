//! `search_flights` against a stand-in for Duffel (the test platform's `fetch`): the request it
//! sends, the answer it makes of an offer, and a POST that is not repeated when Duffel fails.

use serde_json::{json, Value};

use super::TestPlatform;
use crate::error::Result;
use crate::registry::{Caller, Inbound, Outbound};

fn search() -> Value {
    json!({ "origin": "SFO", "destination": "CDG", "departure_date": "2026-06-01" })
}

fn duffel(status: u16) -> impl Fn(&Outbound) -> Result<Inbound> {
    move |_| {
        let offer = json!({
            "id": "off_1", "total_amount": "612.40", "total_currency": "USD",
            "slices": [{ "duration": "PT10H50M", "segments": [{
                "origin": { "iata_code": "SFO" }, "destination": { "iata_code": "CDG" },
                "departing_at": "2026-06-01T15:00:00", "arriving_at": "2026-06-02T10:50:00",
                "marketing_carrier": { "iata_code": "AF", "name": "Air France" },
                "marketing_carrier_flight_number": "83",
            }] }],
        });
        Ok(Inbound {
            status,
            body: json!({ "data": { "offers": [offer] } }).to_string(),
        })
    }
}

fn configured(status: u16) -> TestPlatform {
    TestPlatform::new()
        .with_setting("DUFFEL_API_TOKEN", Some("duffel_test_token"))
        .with_setting("DUFFEL_BASE_URL", Some("https://duffel.stand-in/"))
        .with_fetch(duffel(status))
}

#[test]
fn search_flights_sends_one_offer_request_and_answers_with_the_offer() {
    let p = configured(201);
    let c = p.call_ok(&Caller::anonymous(), "search_flights", search());
    assert!(!c.is_error(), "{}", c.result);
    let f = &c.structured()["flights"][0];
    assert_eq!(f["price"], "612.40");
    assert_eq!(f["segments"][0]["flight_number"], "AF83");
    assert_eq!(f["duration"], "PT10H50M");
    let sent = p.fetched.borrow();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].method, "POST");
    assert_eq!(
        sent[0].url,
        "https://duffel.stand-in/air/offer_requests?return_offers=true"
    );
    assert!(sent[0]
        .headers
        .contains(&("Authorization".into(), "Bearer duffel_test_token".into())));
    let body: Value = serde_json::from_str(sent[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(body["data"]["slices"][0]["origin"], "SFO");
}

#[test]
fn search_flights_does_not_repeat_a_failed_post_and_needs_its_token() {
    let p = configured(503);
    let c = p.call_ok(&Caller::anonymous(), "search_flights", search());
    assert!(c.is_error());
    assert!(c.text().contains("temporarily unavailable"), "{}", c.text());
    assert_eq!(p.fetched.borrow().len(), 1, "a POST is sent once");
    assert_eq!(p.slept_ms.get(), 0);

    let bare = TestPlatform::new().with_fetch(duffel(201));
    let c = bare.call_ok(&Caller::anonymous(), "search_flights", search());
    assert!(c.text().contains("DUFFEL_API_TOKEN"), "{}", c.text());
    assert!(bare.fetched.borrow().is_empty());
}
