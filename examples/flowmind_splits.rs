//! FlowMind's figures on the issue-23 splits over the full catalog (the shipped contexts plus one
//! `tool://` context per production tool), through `field_request`'s own search
//! (`mcp_edge::tools::flowmind::measure`): `cargo run --release --example flowmind_splits`.
//! Training split: `tests/data/flowmind_requests.json` and `tests/data/flowmind_train_tools.json`;
//! held-out: `tests/data/flowmind_heldout_v2.json` (v2, the one issue 23's goals are judged on
//! since 2026-11-29) and `tests/data/flowmind_heldout.json` (v1, worn: read seven times before
//! v2 existed), each measured and printed apart. Prints figures; asserts nothing.
//!
//! - `--fit`: the model and thresholds fitted on the training split (what `Model::default()` and
//!   `Thresholds::default()` must be; a unit test checks);
//! - `--misses`: the training requests whose first match is wrong or whose out-of-scope request
//!   got an answer (never the held-out ones: looking at those would fit on them);
//! - `--all`: every training request with its status and first matches;
//! - `--train-only`: leave the held-out split out (for development);
//! - `--svg <file>`: write the reliability diagram of the splits' first matches;
//! - `--embedding-texts <file>`: write, as a JSON array, every text production would send to the
//!   embedding model for the catalog and every split (`scripts/flowmind-embed.py` embeds them);
//! - `--embeddings`: also measure every split through the embedding-blended search with the
//!   real-model vectors stored in `data/flowmind/embeddings/` (production's blend, and the blend
//!   fitted on the training split by grid search), beside the text matcher's figures.
use std::{env, fs, process::ExitCode};

use mcp_edge::engine::matcher::blend::Blend;
use mcp_edge::engine::matcher::bm25::Params;
use mcp_edge::engine::matcher::{Model, Thresholds};
use mcp_edge::registry::Registry;
use mcp_edge::tools::flowmind::catalog::Catalog;
use mcp_edge::tools::flowmind::measure::{self, Figures};

/// The held-out splits, as (label, file): v2 first, the split issue 23's goals are judged on.
const HELD_OUT: [(&str, &str); 2] = [
    ("held-out v2", "tests/data/flowmind_heldout_v2.json"),
    (
        "held-out v1 (worn: read 7 times before)",
        "tests/data/flowmind_heldout.json",
    ),
];

/// The reliability diagram of `splits`' first matches, each as (figures, label).
fn svg(splits: &[(&Figures, &str)]) -> String {
    let (w, h, m) = (360.0, 360.0, 48.0);
    let x = |p: f64| m + p * (w - 1.5 * m);
    let y = |p: f64| h - m - p * (h - 1.5 * m);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">FlowMind reliability (first matches, text matcher)</text>\n\
         <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n\
         <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n",
        w / 2.0,
        x(0.0),
        y(0.0),
        x(1.0),
        y(1.0),
        x(0.0),
        y(0.0),
        x(1.0),
        y(0.0),
        x(0.0),
        y(0.0),
        x(0.0),
        y(1.0)
    );
    for i in 0..=10 {
        let p = f64::from(i) / 10.0;
        if i % 2 == 0 {
            s += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{p:.1}</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{p:.1}</text>\n",
                x(p),
                y(0.0) + 14.0,
                x(0.0) - 4.0,
                y(p) + 4.0
            );
        }
    }
    s += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">confidence of the first match</text>\n\
         <text x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">share right</text>\n",
        x(0.5),
        h - 8.0,
        y(0.5),
        y(0.5)
    );
    let colours = ["#1f77b4", "#d62728", "#ff7f0e"];
    for (i, &(f, label)) in splits.iter().enumerate() {
        let (colour, dx, ly) = (
            colours[i % colours.len()],
            (i as f64 - 1.0) * 0.012,
            0.95 - 0.07 * i as f64,
        );
        let label = label.split(" (").next().unwrap_or(label);
        let mut points = Vec::new();
        for (i, &(n, right)) in f.reliability.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let (cx, cy) = (x((i as f64 + 0.5) / 10.0 + dx), y(right as f64 / n as f64));
            points.push(format!("{cx:.1},{cy:.1}"));
            s += &format!(
                "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{:.1}\" fill=\"{colour}\" fill-opacity=\"0.7\"><title>{label}: {right} of {n} right</title></circle>\n",
                2.0 + (n as f64).sqrt()
            );
        }
        s += &format!(
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\"/>\n<text x=\"{}\" y=\"{}\" fill=\"{colour}\">{label}</text>\n",
            points.join(" "),
            x(0.05),
            y(ly)
        );
    }
    s + "</svg>\n"
}

/// Every split through the embedding-blended search with the stored real-model vectors: under
/// production's blend, and under the blend fitted on the training split alone (`held`, the
/// held-out splits with their labels, is empty with `--train-only`).
fn blended(
    catalog: &Catalog,
    train: &[serde_json::Value],
    held: &[(&str, Vec<serde_json::Value>)],
    model: &Model,
    t: &Thresholds,
) -> Result<(), String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let index = fs::read_to_string(format!("{root}/data/flowmind/embeddings/minilm.json"))
        .map_err(|e| format!("data/flowmind/embeddings/minilm.json: {e}"))?;
    let rows = fs::read(format!("{root}/data/flowmind/embeddings/minilm.i8"))
        .map_err(|e| format!("data/flowmind/embeddings/minilm.i8: {e}"))?;
    let vectors = measure::Vectors::read(&index, &rows)?;
    let pooled_train = measure::pooled(catalog, train, &vectors)?;
    let pooled_held = held
        .iter()
        .map(|(name, h)| Ok((*name, h, measure::pooled(catalog, h, &vectors)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let shipped = Blend::default();
    println!(
        "\nwith {} embeddings (stored vectors; production's model is bge-small-en-v1.5)",
        vectors.model
    );
    let (fitted, _) = measure::fit_blend(catalog, train, &pooled_train, model, t);
    for (name, blend) in [
        ("production's blend (its floor and ceiling are on bge-small's cosine scale, not MiniLM's)", shipped),
        ("blend fitted on the training split", fitted),
    ] {
        println!(
            "{name}: weight {:.2}, floor {:.2}, ceiling {:.2}",
            blend.weight, blend.floor, blend.ceiling
        );
        println!(
            "training split ({} requests)\n{}",
            train.len(),
            measure::measure_blended(catalog, train, &pooled_train, model, &blend, t)
        );
        for (name, h, pooled) in &pooled_held {
            println!(
                "{name} split ({} requests)\n{}",
                h.len(),
                measure::measure_blended(catalog, h, pooled, model, &blend, t)
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |path: &str| fs::read_to_string(format!("{root}/{path}")).ok();
    let (Some(contexts), Some(train), Some(tools), Some(held_v2), Some(held_v1)) = (
        read("data/flowmind/contexts.json"),
        read("tests/data/flowmind_requests.json"),
        read("tests/data/flowmind_train_tools.json"),
        read(HELD_OUT[0].1),
        read(HELD_OUT[1].1),
    ) else {
        eprintln!("cannot read the catalog or a split");
        return ExitCode::FAILURE;
    };
    let registry = match Registry::new(mcp_edge::tools::catalog(
        mcp_edge::tools::Catalog::Production,
    )) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("registry: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (catalog, mut train, tools, held_v2, held_v1) = match (
        measure::catalog(&contexts, &registry),
        measure::requests(&train),
        measure::requests(&tools),
        measure::requests(&held_v2),
        measure::requests(&held_v1),
    ) {
        (Ok(c), Ok(a), Ok(b), Ok(h2), Ok(h1)) => (c, a, b, h2, h1),
        _ => {
            eprintln!("a file does not parse");
            return ExitCode::FAILURE;
        }
    };
    train.extend(tools);
    let held = [(HELD_OUT[0].0, held_v2), (HELD_OUT[1].0, held_v1)];
    let args: Vec<String> = env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    if let Some(path) = value("--embedding-texts") {
        let texts = measure::embedding_texts(&catalog, &[&train, &held[0].1, &held[1].1]);
        let json = serde_json::to_string(&texts).unwrap_or_default();
        if let Err(e) = fs::write(path, json) {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
        println!("wrote {} texts to {path}", texts.len());
        return ExitCode::SUCCESS;
    }
    let (mut model, mut t) = (Model::default(), Thresholds::default());
    if has("--fit") {
        model = measure::fit(&catalog, &train);
        t = measure::tune(&catalog, &model, &train);
        println!("fitted on the training split: {model:?}\ntuned: {t:?}");
    }
    if has("--grid") {
        // BM25F parameters by grid on the training split, the model re-fitted and the thresholds
        // re-tuned at every point; scored by top-1 plus recall@3 of both kinds.
        let mut best = (f64::NEG_INFINITY, String::new());
        for k1 in [0.9, 1.2, 1.6] {
            for name in [2.0, 3.0] {
                for tags in [2.5, 3.5, 4.5] {
                    for examples in [1.5, 2.5, 3.5] {
                        for description in [0.5, 1.0] {
                            let params = Params {
                                k1,
                                weights: [name, tags, examples, description],
                                ..Params::default()
                            };
                            let c = Catalog::with_params(0, catalog.contexts.clone(), params);
                            let m = measure::fit(&c, &train);
                            let th = measure::tune(&c, &m, &train);
                            let f = measure::measure(&c, &train, &m, &th, |_, _| {});
                            let score = (f.catalog.top1 + f.catalog.at3 + f.tool.top1 + f.tool.at3)
                                as f64
                                + f.out_of_scope_none as f64 * 0.5
                                - 2.0 * f.high_wrong as f64;
                            if score > best.0 {
                                best = (score, format!("{params:?}\n{f}"));
                                println!("{score} {params:?}");
                            }
                        }
                    }
                }
            }
        }
        println!("best {}", best.1);
        return ExitCode::SUCCESS;
    }
    let all = has("--all");
    let misses = has("--misses") || all;
    println!("training split ({} requests)", train.len());
    let train_figures = measure::measure(&catalog, &train, &model, &t, |r, o| {
        if !misses {
            return;
        }
        let want = measure::expected(r);
        let shown: Vec<String> = o
            .candidates
            .iter()
            .take(3)
            .map(|c| format!("{} {:.2}", catalog.contexts[c.entry].uri, c.confidence))
            .collect();
        let first = o
            .candidates
            .first()
            .map(|c| catalog.contexts[c.entry].uri.as_str());
        let wrong = if want.is_empty() {
            o.status != "no_matches"
        } else {
            o.status == "no_matches" || !first.is_some_and(|u| want.contains(&u))
        };
        if wrong || all {
            println!(
                "  {} {} {:?} want {:?}\n      {}",
                if wrong { "MISS" } else { "ok" },
                o.status,
                r["query"].as_str().unwrap_or_default(),
                want,
                shown.join(", ")
            );
        }
    });
    println!("{train_figures}");
    let train_only = has("--train-only");
    let held: &[(&str, Vec<serde_json::Value>)] = if train_only { &[] } else { &held };
    let held_figures: Vec<Figures> = held
        .iter()
        .map(|(name, h)| {
            println!("{name} split ({} requests)", h.len());
            let f = measure::measure(&catalog, h, &model, &t, |_, _| {});
            println!("{f}");
            f
        })
        .collect();
    if has("--embeddings") {
        if let Err(e) = blended(&catalog, &train, held, &model, &t) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    if train_only {
        return ExitCode::SUCCESS;
    }
    let mut splits = vec![(&train_figures, "training")];
    splits.extend(held_figures.iter().zip(held.iter().map(|(name, _)| *name)));
    if has("--bins") {
        let names: Vec<&str> = splits.iter().map(|(_, name)| *name).collect();
        println!(
            "reliability of first matches: confidence, then shown (right) for {}",
            names.join(", ")
        );
        for i in 0..10 {
            let cells: Vec<String> = splits
                .iter()
                .map(|(f, _)| format!("{:3} ({:3})", f.reliability[i].0, f.reliability[i].1))
                .collect();
            println!(
                "  {:.1}-{:.1}  {}",
                i as f64 / 10.0,
                (i + 1) as f64 / 10.0,
                cells.join("  ")
            );
        }
    }
    if let Some(path) = value("--svg") {
        if let Err(e) = fs::write(path, svg(&splits)) {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
        println!("wrote {path}");
    }
    ExitCode::SUCCESS
}
