use serde_json::{json, Value};

use super::*;

fn eval_with(src: &str, vars: Value) -> Result<Value, ExprError> {
    compile(src)?
        .eval(&vars, Limits::default())
        .map(|e| e.value)
}

fn ok(src: &str, vars: Value) -> Value {
    eval_with(src, vars).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn text(src: &str, vars: Value) -> String {
    to_text(&ok(src, vars))
}

fn trip() -> Value {
    json!({
        "client": { "name": "Sarah Johnson", "tier": "vip" },
        "trip": {
            "destination": { "city": "Paris", "country": "France", "visa_required": false,
                             "special_items": ["Adapter", "Umbrella"] },
            "travelers": { "adults": 2, "children": 1 },
            "departure_date": "2025-06-15",
            "special_occasions": ["anniversary"]
        },
        "flight": { "departure_time": "14:30" },
        "hotel": { "amenities": ["Spa", "Pool", "Gym"] },
        "pricing": { "final_total": 14750, "remaining_balance": 0, "extras": -12.5 },
        "activities": [
            { "name": "Louvre", "description": "Guided tour", "date": "June 16" },
            { "name": "Seine cruise", "description": "Dinner", "date": "June 17" }
        ],
        "support": { "vip_phone": "+1 555 0100" }
    })
}

#[test]
fn paths_literals_and_operators() {
    let v = trip();
    assert_eq!(text("client.name", v.clone()), "Sarah Johnson");
    for (src, want) in [
        (
            "trip.travelers.adults + trip.travelers.children * 2",
            json!(4),
        ),
        ("activities[1]['name']", json!("Seine cruise")),
        ("-trip.travelers.adults", json!(-2)),
        ("trip.missing || 'fallback'", json!("fallback")),
    ] {
        assert_eq!(ok(src, v.clone()), want, "{src}");
    }
    for (src, want) in [
        ("(1 + 2) * 3 % 4", json!(1)),
        ("10 / 4", json!(2.5)),
        ("'a' + 1 + 2", json!("a12")),
        ("1 + 2 + 'a'", json!("3a")),
        ("!true || false && true", json!(false)),
        ("'x\\'y'", json!("x'y")),
        ("\"tab\\there\"", json!("tab\there")),
    ] {
        assert_eq!(ok(src, json!({})), want, "{src}");
    }
    assert_eq!(ok("client.name && client.tier", v), json!("vip"));
}

#[test]
fn equality_is_strict_and_comparisons_order() {
    for (src, want) in [
        ("1 == 1.0", json!(true)),
        ("1 == '1'", json!(false)),
        ("1 === 1 && 'a' !== 'b'", json!(true)),
        ("'apple' < 'banana'", json!(true)),
        ("missing > 0", json!(false)),
    ] {
        assert_eq!(ok(src, json!({})), want, "{src}");
    }
    assert_eq!(
        ok("{status} == 'approved'", json!({"status": "approved"})),
        json!(true)
    );
    assert_eq!(
        ok(
            "{approval_required} == true",
            json!({"approval_required": true})
        ),
        json!(true)
    );
    assert!(eval_with("[1] < 2", json!({})).is_err());
}

#[test]
fn seed_template_expressions() {
    let v = trip();
    for (src, want) in [
        ("trip.travelers.adults > 1 ? 's' : ''", "s"),
        ("trip.travelers.children > 0 ? ' and ' + trip.travelers.children + ' child' + (trip.travelers.children > 1 ? 'ren' : '') : ''", " and 1 child"),
        ("activities.map(activity => '• **' + activity.name + '** - ' + activity.description + ' (' + activity.date + ')').join('\\n')", "• **Louvre** - Guided tour (June 16)\n• **Seine cruise** - Dinner (June 17)"),
        ("trip.destination.special_items ? '- ' + trip.destination.special_items.join('\\n- ') : ''", "- Adapter\n- Umbrella"),
        ("trip.destination.visa_required ? '- Visa' : ''", ""),
        ("client.tier == 'vip' ? 'VIP ' + support.vip_phone : ''", "VIP +1 555 0100"),
        ("trip.special_occasions ? 'Your ' + trip.special_occasions[0] + '!' : ''", "Your anniversary!"),
    ] {
        assert_eq!(text(src, v.clone()), want, "{src}");
    }
    assert_eq!(
        ok(
            "activities.filter(a => a.name.length > 6).length",
            v.clone()
        ),
        json!(1)
    );
    assert_eq!(ok("hotel.amenities.includes('Spa')", v), json!(true));
}

#[test]
fn filters_format_money_dates_and_text() {
    let v = trip();
    for (src, want) in [
        ("pricing.final_total|currency", "$14,750.00"),
        ("pricing.extras|currency", "-$12.50"),
        ("pricing.final_total|currency('EUR')", "€14,750.00"),
        ("pricing.final_total|currency('JPY')", "¥14,750"),
        ("pricing.final_total|currency('CHF')", "CHF 14,750.00"),
        ("trip.departure_date|'MMMM DD, YYYY'", "June 15, 2025"),
        ("trip.departure_date|'MMM DD'", "Jun 15"),
        ("trip.departure_date|'MMMM'", "June"),
        ("trip.departure_date|'dddd, Do MMMM'", "Sunday, 15th June"),
        ("flight.departure_time|'h:mm A'", "2:30 PM"),
        ("hotel.checkin_time|'3:00 PM'", "3:00 PM"),
        ("flight.departure_time|'3:00 PM'", "14:30"),
        ("hotel.amenities|join(', ')", "Spa, Pool, Gym"),
        ("client.name|upper", "SARAH JOHNSON"),
        ("client.name|truncate(5)", "Sarah…"),
    ] {
        assert_eq!(text(src, v.clone()), want, "{src}");
    }
    assert_eq!(
        text("x|currency", json!({"x": 14750, "currency": "GBP"})),
        "£14,750.00"
    );
    for (src, want) in [
        ("'hello big-world'|title", "Hello Big-World"),
        ("nothing|default('n/a')", "n/a"),
        ("1234567.891|number(2)", "1,234,567.89"),
    ] {
        assert_eq!(text(src, json!({})), want, "{src}");
    }
    assert_eq!(
        text("client|json", json!({"client": {"a": 1}})),
        "{\"a\":1}"
    );
    assert!(
        compile("x|raw")
            .unwrap()
            .eval(&json!({"x": "<b>"}), Limits::default())
            .unwrap()
            .raw
    );
}

#[test]
fn currency_edge_cases_are_deterministic() {
    let c = |n: Value| eval_with("x|currency", json!({ "x": n }));
    assert_eq!(to_text(&c(json!(0.1 + 0.2)).unwrap()), "$0.30");
    assert_eq!(to_text(&c(json!(-0.0)).unwrap()), "$0.00");
    assert_eq!(to_text(&c(json!(-0.001)).unwrap()), "$0.00");
    assert_eq!(
        to_text(&c(json!(1e21)).unwrap()),
        "$1,000,000,000,000,000,000,000.00"
    );
    assert_eq!(
        to_text(&c(json!(1.005)).unwrap()),
        "$1.00",
        "1.005 is stored just below 1.005"
    );
    assert_eq!(
        to_text(&c(json!(999.995)).unwrap()),
        "$1,000.00",
        "rounding carries into a new group"
    );
    assert_eq!(to_text(&c(json!("1200.5")).unwrap()), "$1,200.50");
    assert!(c(json!("lots"))
        .unwrap_err()
        .message
        .contains("not a finite number"));
    assert!(eval_with("x|currency('dollars')", json!({"x": 1})).is_err());
    assert!(eval_with("missing|currency", json!({})).unwrap().is_null());
}

#[test]
fn date_edge_cases() {
    let d = |s: Value, f: &str| eval_with(&format!("x|'{f}'"), json!({ "x": s }));
    assert_eq!(
        to_text(&d(json!("2024-02-29"), "MMMM DD, YYYY").unwrap()),
        "February 29, 2024"
    );
    assert!(d(json!("2025-02-29"), "MMMM DD, YYYY")
        .unwrap_err()
        .message
        .contains("not a valid date"));
    assert!(d(json!("next tuesday"), "MMMM").is_err());
    assert_eq!(
        to_text(&d(json!("2025-06-15T23:30:00-05:00"), "MMM DD h:mm A").unwrap()),
        "Jun 15 11:30 PM"
    );
    assert_eq!(
        to_text(&d(json!("2025-06-15T09:05:00Z"), "HH:mm").unwrap()),
        "09:05"
    );
    assert_eq!(
        to_text(&d(json!(1_750_000_000), "YYYY-MM-DD HH:mm").unwrap()),
        "2025-06-15 15:06"
    );
    assert_eq!(
        to_text(&d(json!(1_750_000_000_000_i64), "YYYY-MM-DD HH:mm").unwrap()),
        "2025-06-15 15:06"
    );
    assert!(d(json!("14:30"), "MMMM")
        .unwrap_err()
        .message
        .contains("needs a date"));
    assert!(eval_with("x|'MMMM'", json!({})).unwrap().is_null());
    assert!(
        dates::date_format("h:mm A").is_some()
            && dates::date_format("3:00 PM").is_none()
            && dates::date_format("TBD").is_none()
    );
}

#[test]
fn missing_paths_are_null_and_reported() {
    let p = compile("client.name + ' ' + client.middle + trip.destination.city").unwrap();
    let r = p
        .eval(&json!({"client": {"name": "A"}}), Limits::default())
        .unwrap();
    assert_eq!(r.value, json!("A "));
    assert_eq!(r.missing, vec!["client.middle", "trip"]);
    assert_eq!(
        compile("a.b + c[0] + items.map(i => i.name + d).join()")
            .unwrap()
            .variables(),
        vec!["a.b", "c", "items", "d"]
    );
}

#[test]
fn prototype_keys_are_plain_keys() {
    assert_eq!(ok("o.__proto__", json!({"o": {"__proto__": 1}})), json!(1));
    assert!(ok("o.constructor", json!({"o": {}})).is_null());
    assert!(ok("constructor", json!({})).is_null());
}

#[test]
fn errors_point_at_line_and_column_with_a_caret() {
    let e = compile("a +\n  * b").unwrap_err();
    assert_eq!((e.pos.line, e.pos.col), (2, 3));
    assert!(e.to_string().contains("line 2, column 3"), "{e}");
    assert!(e.to_string().ends_with("    * b\n    ^"), "{e}");
    let e = compile("x|nope").unwrap_err();
    assert!(e.message.contains("unknown filter \"nope\""), "{e}");
    assert!(compile("x|truncate")
        .unwrap_err()
        .message
        .contains("takes 1 to 1"));
    let e = eval_with("items.map(1)", json!({"items": [1]})).unwrap_err();
    assert!(e.message.contains("takes one function"), "{e}");
    assert!(eval_with("1 / 0", json!({}))
        .unwrap_err()
        .message
        .contains("division by zero"));
    assert!(eval_with("x.shout()", json!({"x": "a"}))
        .unwrap_err()
        .message
        .contains("unknown method"));
    assert!(compile("a b").is_err());
    assert!(compile("(a").is_err());
    assert!(compile("").is_err());
}

#[test]
fn limits_stop_runaway_input() {
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(compile(&deep)
        .unwrap_err()
        .message
        .contains("nested deeper"));
    let long_chain = vec!["1"; 5_000].join(" + ");
    assert!(compile(&long_chain)
        .unwrap_err()
        .message
        .contains("nested deeper"));
    let ok_chain = vec!["1"; 150].join(" + ");
    assert_eq!(ok(&ok_chain, json!({})), json!(150));
    let items: Vec<u32> = (0..100_000).collect();
    let r = compile("items.map(i => i * 2).length").unwrap().eval(
        &json!({ "items": items }),
        Limits {
            fuel: 10_000,
            max_output: 1 << 20,
        },
    );
    assert!(r.unwrap_err().message.contains("budget exhausted"));
    let r = compile("s + s").unwrap().eval(
        &json!({"s": "x".repeat(600)}),
        Limits {
            fuel: 100,
            max_output: 1000,
        },
    );
    assert!(r.unwrap_err().message.contains("larger than the limit"));
}

/// Costs are bounded by the input (issue 15, item 4): each shape that costs the square (or worse)
/// of its input is refused with the budget's error. What proves "refused quickly" is the budget, not
/// a clock: the refusal names the budget it ran out of, and that budget is the one the input allows
/// ([`Budget::new`]: the fuel, plus one unit per byte of the template, plus two per unit of the
/// variables' size), so the work done before the refusal is linear in the input whatever the load
/// on the machine.
mod costs {
    use serde_json::{json, Value};

    use super::super::*;
    use crate::engine::template::{RenderOptions, Template};

    /// Renders `src` over `vars` with the default limits; returns the error.
    fn refused(src: &str, vars: &Value) -> ExprError {
        let t = Template::parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        match t.render(vars, RenderOptions::default()) {
            Ok(r) => panic!("{src} rendered {} bytes", r.text().len()),
            Err(e) => e,
        }
    }

    /// The render of `src` over `vars` is refused by the budget its input allows, and says what to
    /// do.
    fn assert_budget(src: &str, vars: &Value) -> ExprError {
        let e = refused(src, vars);
        assert!(e.message.contains("budget exhausted"), "{src}: {e}");
        let allowed = Budget::new(Limits::default(), src.len(), vars).left();
        assert!(
            e.message
                .contains(&format!("a budget of {allowed} units: 100000, ")),
            "{src}: refused at the budget its input allows ({allowed} units): {e}"
        );
        assert!(e.message.contains("x.map(i => x)"), "says what to do: {e}");
        e
    }

    fn zeros(n: usize) -> Value {
        json!({ "x": vec![0; n] })
    }

    fn strings(n: usize) -> Value {
        json!({ "x": vec!["a"; n] })
    }

    #[test]
    fn the_quoted_map_over_8000_zeros_is_refused_by_the_budget_its_input_allows() {
        let e = assert_budget("{x.map(i => x)} boom", &zeros(8_000));
        assert_eq!((e.pos.line, e.pos.col), (1, 3), "points at the map: {e}");
        assert!(e.to_string().contains("{x.map(i => x)} boom"), "{e}");
    }

    #[test]
    fn the_quoted_filter_over_200000_strings_is_refused_by_the_budget_its_input_allows() {
        assert_budget("{x.filter(i => x.length > 0).length}", &strings(200_000));
    }

    #[test]
    fn nested_and_quadratic_shapes_are_refused_by_the_budget_its_input_allows() {
        let x = zeros(8_000);
        for src in [
            "{x.map(i => x.map(j => j))}",
            "{x.map(i => x.map(j => x.map(k => k)).length).length}",
            "{x.filter(i => x.includes(1)).length}",
            "{x.filter(i => x == x).length}",
            "{x.map(i => x.join(',')).join(',').length}",
            "{x.map(i => (x|join)).length}",
            "{x.map(i => (x|json)).length}",
            "{x.map(i => (x|upper)).length}",
            "{x.map(i => '' + x).length}",
        ] {
            assert_budget(src, &x);
        }
        let s = json!({ "x": vec![0; 2_000], "s": "y".repeat(100_000) });
        for src in [
            "{x.map(i => s + s).length}",
            "{x.map(i => s.length).length}",
            "{x.filter(i => s.includes('z')).length}",
            "{x.map(i => s.toUpperCase()).length}",
            "{x.map(i => s[99999]).length}",
            "{x.map(i => (s|title)).length}",
        ] {
            assert_budget(src, &s);
        }
        // The costliest shapes per input byte a random search over expressions (3 placeholders of
        // depth 4 over lists, records, a long text) found, once the costs above were charged.
        let records = json!({ "l": vec![json!({ "name": "n", "ok": true, "k": [1, 2] }); 2_000] });
        for src in [
            "{l.map(v => l).length}",
            "{l.map(v => l.join(',')).length}",
            "{(l|upper).map(v => v + l).length}",
        ] {
            assert_budget(src, &records);
        }
    }

    #[test]
    fn map_over_a_million_items_is_refused() {
        let e = compile("x.map(i => i * 2).length")
            .unwrap()
            .eval(&zeros(1_000_000), Limits::default())
            .unwrap_err();
        assert!(e.message.contains("budget exhausted"), "{e}");
        assert_eq!(e.pos.line, 1, "{e}");
        assert!((2..=17).contains(&e.pos.col), "points into the loop: {e}");
        assert!(
            e.to_string().contains("  x.map(i => i * 2).length\n"),
            "{e}"
        );
    }

    #[test]
    fn currency_refuses_text_that_is_not_a_finite_number() {
        for bad in ["NaN", "Infinity", "-Infinity", "1e999"] {
            let e = compile("v|currency")
                .unwrap()
                .eval(&json!({ "v": bad }), Limits::default())
                .unwrap_err();
            assert!(
                e.message
                    .contains(&format!("currency: {bad} is not a finite number")),
                "{e}"
            );
        }
        let huge = "9".repeat(100_000);
        let e = compile("v|currency")
            .unwrap()
            .eval(&json!({ "v": [huge] }), Limits::default())
            .unwrap_err();
        assert!(
            e.message.len() < 200,
            "a large value is shortened in the message: {e}"
        );
    }

    #[test]
    fn a_placeholder_repeated_many_times_shares_one_budget() {
        let src = "{x.map(i => i).length}".repeat(2_000);
        assert_budget(&src, &zeros(8_000));
    }

    #[test]
    fn text_doubling_stops_at_the_output_limit() {
        let vars = json!({ "s": "y".repeat(300_000) });
        // The output cap stops the doubling: no text grows past 1 MiB, whatever the budget.
        let e = refused("{((s + s) + (s + s)) + ((s + s) + (s + s))}", &vars);
        assert!(
            e.message.contains("larger than the limit of 1048576 bytes"),
            "{e}"
        );
        let e = refused("a\n{s} {s} {s} {s}", &vars);
        assert!(e.message.contains("larger than"), "{e}");
        assert_eq!(
            e.pos.line, 2,
            "points at the placeholder that passed the limit: {e}"
        );
    }

    #[test]
    fn large_inputs_rendered_once_still_work() {
        let items: Vec<Value> = (0..50_000)
            .map(|i| json!({ "name": format!("n{i}"), "ok": i % 2 == 0 }))
            .collect();
        let vars = json!({ "items": items });
        let t = Template::parse(
            "{items.filter(i => i.ok).map(i => i.name).join(', ').length} of {items.length}",
        )
        .unwrap();
        let r = t.render(&vars, RenderOptions::default()).unwrap();
        let joined: Vec<String> = (0..50_000).step_by(2).map(|i| format!("n{i}")).collect();
        assert_eq!(r.text(), format!("{} of 50000", joined.join(", ").len()));
        let p = compile("items.map(i => i.name)").unwrap();
        let v = p.eval(&vars, Limits::default()).unwrap().value;
        assert_eq!(v.as_array().map(Vec::len), Some(50_000));
    }

    #[test]
    fn the_budget_grows_linearly_with_the_input() {
        let limits = Limits::default();
        let (empty, list) = (json!({}), zeros(10_000));
        let mut small = Budget::new(limits, 10, &empty);
        let mut big = Budget::new(limits, 10, &list);
        assert_eq!(small.left(), limits.fuel + 10 + UNITS_PER_INPUT_UNIT);
        assert_eq!(
            big.left() - small.left(),
            UNITS_PER_INPUT_UNIT * 10_002,
            "the list, its key and each of its values add the same"
        );
        let long = json!({ "s": "y".repeat(1_600) });
        let mut text = Budget::new(limits, 0, &long);
        assert_eq!(text.left(), limits.fuel + UNITS_PER_INPUT_UNIT * (3 + 100));
    }

    #[test]
    fn the_variables_share_is_counted_only_when_the_fuel_runs_out() {
        let limits = Limits {
            fuel: 10,
            max_output: 1 << 20,
        };
        let list = zeros(100);
        let mut budget = Budget::new(limits, 0, &list);
        // Within the fuel, the variables are not walked.
        assert!(budget.spend(10, Pos::default()).is_ok());
        assert_eq!(budget.input.map(size_units), Some(103));
        // Past it, their share is added once: the same total as counted up front.
        assert!(budget
            .spend(UNITS_PER_INPUT_UNIT * 103, Pos::default())
            .is_ok());
        assert!(budget.input.is_none());
        let e = budget.spend(1, Pos::default()).unwrap_err();
        assert!(
            e.message.contains(&format!(
                "a budget of {} units: 10, ",
                10 + UNITS_PER_INPUT_UNIT * 103
            )),
            "{e}"
        );
    }
}

fn err(src: &str, vars: Value) -> String {
    match eval_with(src, vars) {
        Ok(v) => panic!("{src} gave {v}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn javascript_habits_work() {
    let v = trip();
    for (src, want) in [
        (
            "activities.map((a) => a.name).join(', ')",
            "Louvre, Seine cruise",
        ),
        (
            "activities.map((a, i) => (i + 1) + '. ' + a.name).join(' ')",
            "1. Louvre 2. Seine cruise",
        ),
        (
            "activities.filter((a, i) => i > 0).map(a => a.name)",
            "Seine cruise",
        ),
        (
            "activities.map(a => a.name|upper).join('/')",
            "LOUVRE/SEINE CRUISE",
        ),
        (
            "client.tier == 'vip' ? client.name|upper : 'x'",
            "SARAH JOHNSON",
        ),
        ("activities.0.name", "Louvre"),
        ("activities.1['date']", "June 17"),
        ("trip.destination.special_items.1", "Umbrella"),
        ("nothing ?? 'n/a'", "n/a"),
        ("currency(pricing.final_total)", "$14,750.00"),
        ("currency(pricing.final_total, 'EUR')", "€14,750.00"),
        (
            "upper(client.tier) + join(hotel.amenities, '/')",
            "VIPSpa/Pool/Gym",
        ),
    ] {
        assert_eq!(text(src, v.clone()), want, "{src}");
    }
    assert_eq!(
        text(
            "prices.map(p => p|currency).join(' + ')",
            json!({"prices": [1200, 30]})
        ),
        "$1,200.00 + $30.00"
    );
    assert_eq!(
        text("false ? 'a' : client.tier | upper", v.clone()),
        "VIP",
        "a filter after the last branch still applies to the whole conditional"
    );
    assert_eq!(ok("activities.5.name", v.clone()), Value::Null);
    assert_eq!(ok("1.5 + .5", json!({})), json!(2));
    assert_eq!(
        ok("pricing.remaining_balance ?? 5", v.clone()),
        json!(0),
        "?? keeps 0, unlike ||"
    );
}

#[test]
fn a_missing_value_in_a_function_or_filter_argument_does_not_fail() {
    let v = trip();
    let r = compile("currency(missingVar)")
        .unwrap()
        .eval(&v, Limits::default())
        .unwrap();
    assert_eq!(r.value, Value::Null);
    assert_eq!(r.missing, vec!["missingVar"]);
    let r = compile("pricing.final_total|currency(code)")
        .unwrap()
        .eval(&v, Limits::default())
        .unwrap();
    assert_eq!(
        r.value,
        json!("$14,750.00"),
        "a missing code falls back to USD"
    );
    assert_eq!(r.missing, vec!["code"]);
}

#[test]
fn twelve_hour_times_format() {
    for (t, want) in [
        ("9:30 AM", "9:30 AM"),
        ("09:30 pm", "9:30 PM"),
        ("12:05 AM", "12:05 AM"),
        ("5:45PM", "5:45 PM"),
        ("17:45", "5:45 PM"),
    ] {
        assert_eq!(text("t|'h:mm A'", json!({"t": t})), want, "{t}");
    }
    assert_eq!(text("t|'HH:mm'", json!({"t": "9:30 PM"})), "21:30");
    assert!(err("t|'h:mm A'", json!({"t": "13:30 PM"})).contains("not a valid date"));
}

#[test]
fn unsupported_habits_name_the_fix() {
    for (src, expected) in [
        ("`Hi ${name}`", "template strings"),
        ("a = 1", "compare with =="),
        ("a & b", "write &&"),
        ("items.map(x => { return x })", "function body in braces"),
        ("items.map(function (x) { return x })", "write x => x.name"),
        ("x => x", "argument of .map() or .filter()"),
        (
            "formatDate(d)",
            "unknown function formatDate(); the functions are the filters",
        ),
        ("n.toFixed(2)", "x|number(2)"),
        ("Math.round(n)", "x|number(0)"),
        ("s.slice(0, 3)", "truncate(n)"),
        ("currency()", "currency(x), or x|currency"),
    ] {
        let e = match compile(src) {
            Err(e) => e.to_string(),
            Ok(p) => p
                .eval(
                    &json!({"n": 1.5, "s": "abc", "Math": {}}),
                    Limits::default(),
                )
                .map(|v| format!("no error: {:?}", v.value))
                .unwrap_or_else(|e| e.to_string()),
        };
        assert!(e.contains(expected), "{src}: {e}");
    }
}
