//! Prints the FlowMind matcher's figures on the labelled requests (docs/flowmind.md, "Matching and
//! calibration"): `cargo run --example flowmind_eval`. With `--fit`, also fits the model and the
//! thresholds on the training half and prints them with their figures, to paste into
//! `Model::default()` and `Thresholds::default()` when the catalog or the labelled set changes.
//! With `--bins`, prints the reliability table of the test half. With `--misses`, lists the training requests the defaults give the wrong status, with their
//! matches (right ones starred).
use std::{env, fs, process::ExitCode};

use mcp_edge::engine::matcher::{bm25::Params, eval, Matcher, Model, Thresholds};

fn main() -> ExitCode {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |path: &str| fs::read_to_string(format!("{root}/{path}"));
    let (catalog, requests) = match (
        read("data/flowmind/contexts.json"),
        read("tests/data/flowmind_requests.json"),
    ) {
        (Ok(c), Ok(r)) => (c, r),
        (c, r) => {
            eprintln!("cannot read the data: {:?} {:?}", c.err(), r.err());
            return ExitCode::FAILURE;
        }
    };
    let (entries, set) = match (
        eval::catalog_entries(&catalog),
        eval::labelled_requests(&requests),
    ) {
        (Ok(e), Ok(s)) => (e, s),
        (e, s) => {
            eprintln!("malformed data: {:?} {:?}", e.err(), s.err());
            return ExitCode::FAILURE;
        }
    };
    let matcher = Matcher::new(entries, Params::default());
    let (train, test) = eval::halves(&set);
    let report = |label: &str, model: &Model, t: &Thresholds| {
        println!("{label}: {model:?}\n  {t:?}");
        for (name, part) in [("train", &train), ("test", &test), ("all", &set)] {
            println!("  {name:5}  {}", eval::evaluate(&matcher, model, t, part));
        }
    };
    report("defaults", &Model::default(), &Thresholds::default());
    if env::args().any(|a| a == "--bins") {
        // Reliability table of the test half: per confidence decile, how many shown matches and
        // first matches fell in it and how often they were right.
        let mut bins = [[(0usize, 0usize); 2]; 10];
        for r in &test {
            let o = eval::run(&matcher, &Model::default(), &Thresholds::default(), r);
            for (i, (c, right)) in o.candidates.iter().zip(&o.correct).enumerate() {
                let b = ((c.confidence * 10.0) as usize).min(9);
                for (k, counts) in bins[b].iter_mut().enumerate() {
                    if k == 0 || i == 0 {
                        counts.0 += 1;
                        counts.1 += usize::from(*right);
                    }
                }
            }
        }
        println!("confidence  shown (right)  first (right)");
        for (b, [all, first]) in bins.iter().enumerate() {
            println!(
                "{:.1}-{:.1}     {:4} ({:3})     {:4} ({:3})",
                b as f64 / 10.0,
                (b + 1) as f64 / 10.0,
                all.0,
                all.1,
                first.0,
                first.1
            );
        }
    }
    if env::args().any(|a| a == "--misses") {
        // Only the training half: improving the catalog against these leaves the test half unseen.
        for r in &train {
            let o = eval::run(&matcher, &Model::default(), &Thresholds::default(), r);
            if !eval::deserved(r, &o) || env::args().any(|a| a == "--all") {
                let shown: Vec<String> = o
                    .candidates
                    .iter()
                    .zip(&o.correct)
                    .map(|(c, right)| {
                        format!(
                            "{}{} {:.2}",
                            if *right { "*" } else { "" },
                            matcher.entries()[c.entry].uri,
                            c.confidence
                        )
                    })
                    .collect();
                println!(
                    "{:?} {:?} want {:?}\n    {}",
                    o.verdict,
                    r.query,
                    r.expected,
                    shown.join(", ")
                );
            }
        }
    }
    if env::args().any(|a| a == "--fit") {
        let model = eval::fit(&eval::samples(&matcher, &train));
        let t = eval::tune(&matcher, &model, &train);
        report("fitted on the training half", &model, &t);
    }
    ExitCode::SUCCESS
}
