//! FlowMind's figures on the issue-23 splits over the full catalog (the shipped contexts plus one
//! `tool://` context per production tool), through `field_request`'s own search:
//! `cargo run --release --example flowmind_splits`. Training split: `tests/data/flowmind_requests.json`
//! and `tests/data/flowmind_train_tools.json`; held-out: `tests/data/flowmind_heldout.json`. With
//! `--misses`, lists the training requests whose first match is wrong (never the held-out ones:
//! looking at those would fit on them). Prints figures; asserts nothing.
use std::{env, fs, process::ExitCode};

use mcp_edge::registry::Registry;
use mcp_edge::tools::flowmind::catalog::{build, Catalog};
use mcp_edge::tools::flowmind::field_request::{search, Args};
use serde_json::{json, Value};

#[derive(Default)]
struct Kind {
    n: usize,
    top1: usize,
    at3: usize,
    none: usize,
}

fn evaluate(catalog: &Catalog, set: &[Value], show_misses: bool) {
    let mut kinds: [(&str, Kind); 2] = [("catalog", Kind::default()), ("tool", Kind::default())];
    let (mut ood, mut ood_none, mut ood_hedge, mut all_none) = (0, 0, 0, 0);
    let (mut high, mut high_wrong) = (0, 0);
    for r in set {
        let expected: Vec<&str> = r["expected"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut args = json!({
            "query": r["query"],
            "extracted_variables": r["extracted_variables"],
            "confidence_level": r["confidence_level"],
        });
        if let Some(f) = r.get("type_filter") {
            args["context_preferences"] = json!({ "type_filter": f });
        }
        let a = Args::read(&args);
        let o = search(catalog, &a, &|_| true);
        let uris: Vec<&str> = o
            .candidates
            .iter()
            .take(5)
            .map(|c| catalog.contexts[c.entry].uri.as_str())
            .collect();
        let none = o.status == "no_matches";
        all_none += usize::from(none);
        if let Some(first) = o.candidates.first() {
            if !none && first.confidence >= 0.9 {
                high += 1;
                high_wrong += usize::from(!expected.contains(&uris[0]));
            }
        }
        if expected.is_empty() {
            ood += 1;
            ood_none += usize::from(none);
            ood_hedge += usize::from(none || o.status == "refinement_suggested");
            if show_misses && !none {
                println!(
                    "  OOS {} {:?} -> {:?}",
                    o.status,
                    r["query"],
                    &uris[..uris.len().min(2)]
                );
            }
            continue;
        }
        let k = &mut kinds[usize::from(expected[0].starts_with("tool://"))].1;
        k.n += 1;
        let right1 = !none && expected.contains(&uris[0]);
        k.top1 += usize::from(right1);
        k.at3 += usize::from(!none && uris.iter().take(3).any(|u| expected.contains(u)));
        k.none += usize::from(none);
        if show_misses && !right1 {
            let shown: Vec<String> = o
                .candidates
                .iter()
                .take(3)
                .map(|c| format!("{} {:.2}", catalog.contexts[c.entry].uri, c.confidence))
                .collect();
            println!(
                "  MISS {} {:?} want {:?}\n      {}",
                o.status,
                r["query"],
                expected,
                shown.join(", ")
            );
        }
    }
    let f = |n: usize, d: usize| {
        if d == 0 {
            "n/a".to_string()
        } else {
            format!("{:.3}", n as f64 / d as f64)
        }
    };
    for (name, k) in &kinds {
        println!(
            "  {name:8} n {:3}  top-1 {}  recall@3 {}  false no-match {}",
            k.n,
            f(k.top1, k.n),
            f(k.at3, k.n),
            f(k.none, k.n)
        );
    }
    println!(
        "  out-of-scope n {ood}  no_matches {}  no_matches or refinement {}  no-match precision {}  wrong at confidence>=0.9 {} ({high_wrong}/{high})",
        f(ood_none, ood),
        f(ood_hedge, ood),
        f(ood_none, all_none),
        f(high_wrong, high)
    );
}

fn main() -> ExitCode {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |path: &str| -> Option<Vec<Value>> {
        serde_json::from_str(&fs::read_to_string(format!("{root}/{path}")).ok()?).ok()
    };
    let (Some(rows), Some(mut train), Some(tools), Some(held)) = (
        read("data/flowmind/contexts.json"),
        read("tests/data/flowmind_requests.json"),
        read("tests/data/flowmind_train_tools.json"),
        read("tests/data/flowmind_heldout.json"),
    ) else {
        eprintln!("cannot read the catalog or a split");
        return ExitCode::FAILURE;
    };
    train.extend(tools);
    let registry = match Registry::new(mcp_edge::tools::catalog(
        mcp_edge::tools::Catalog::Production,
    )) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("registry: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|mut r| {
            for k in [
                "tags",
                "example_requests",
                "required_variables",
                "optional_variables",
                "execution_preview",
                "steps",
            ] {
                if !r[k].is_string() {
                    r[k] = json!(r[k].to_string());
                }
            }
            r
        })
        .collect();
    let catalog = build(0, &rows, &registry);
    let misses = env::args().any(|a| a == "--misses");
    println!("training split ({} requests)", train.len());
    evaluate(&catalog, &train, misses);
    println!("held-out split ({} requests)", held.len());
    evaluate(&catalog, &held, false);
    ExitCode::SUCCESS
}
