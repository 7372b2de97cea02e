//! Native micro-benchmarks of the pure engines (`cargo bench`; `npm run bench` runs them and prints a
//! table from criterion's estimates): the template engine against MiniJinja on the seed's
//! trip-confirmation template, expression evaluation, the chain runner's per-step overhead without
//! I/O, and BM25F matching over 10,000 contexts. Figures only; nothing here is asserted.

use std::cell::Cell;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use futures::executor::block_on;
use futures::future::{ready, LocalBoxFuture};
use mcp_edge::engine::chain::{plan, ChainDef, StepDef};
use mcp_edge::engine::expr::{compile, Limits};
use mcp_edge::engine::matcher::bm25::Params;
use mcp_edge::engine::matcher::eval::{catalog_entries, labelled_requests};
use mcp_edge::engine::matcher::{Entry, Matcher, Model, Request};
use mcp_edge::engine::run::{run, RunOptions, RunReport, StepHost, StepOutcome, StepReport};
use mcp_edge::engine::template::{RenderOptions, Template};
use serde_json::{json, Map, Value};

const TRIP: &str = include_str!("../src/engine/testdata/trip-confirmation-comprehensive.txt");
const TRIP_JINJA: &str = include_str!("trip-confirmation.jinja");
const CONTEXTS: &str = include_str!("../data/flowmind/contexts.json");
const REQUESTS: &str = include_str!("../tests/data/flowmind_requests.json");

/// The variables of `tests/support/samples.js` (`tripVars`), plus what process_template adds.
fn trip_vars() -> Value {
    json!({
        "client": { "name": "Sarah Johnson", "tier": "vip" },
        "trip": {
            "trip_type": "anniversary", "duration_days": 7,
            "destination": { "city": "Paris", "country": "France", "visa_required": false },
            "travelers": { "adults": 2, "children": 0 }, "departure_date": "2025-06-15", "return_date": "2025-06-22"
        },
        "flight": {
            "departure_time": "09:30", "return_time": "17:45",
            "outbound": { "airline": "Air France", "flight_number": "AF 7", "departure_time": "9:30 AM", "departure_airport": "JFK", "arrival_time": "10:45 PM", "arrival_airport": "CDG" },
            "return": { "airline": "Air France", "flight_number": "AF 8", "departure_time": "5:45 PM", "departure_airport": "CDG", "arrival_time": "8:10 PM", "arrival_airport": "JFK" }
        },
        "booking": { "package_tier": "Premium", "reference_number": "SOMO-2025-0615" },
        "pricing": { "final_total": 14750, "package_price": 12500, "extras": 1250, "taxes": 1000, "total_paid": 14750, "remaining_balance": 0 },
        "hotel": { "name": "Le Meurice", "rating": 5, "address": "228 Rue de Rivoli", "room_type": "Deluxe", "amenities": ["Spa"] },
        "activities": [{ "name": "Louvre", "description": "Private tour", "date": "June 16" }],
        "agent": { "name": "Kim Henderson", "title": "Travel Consultant", "agency": "Somo Travel", "phone": "+1 555 0123", "email": "kim@somotravel.example" },
        "support": { "vip_phone": "+1 555 0100" },
        "session": { "id": "bench" },
        "current_date": "2025-06-01"
    })
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// MiniJinja has no date, time or currency filters of its own (minijinja-contrib's need a
/// time zone database); these are the few formats the template uses, written as a template
/// author would.
fn jinja_env() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
            .expect("a valid syntax"),
    );
    env.add_filter("date", |value: String, format: String| -> String {
        let mut parts = value.splitn(3, '-');
        let (Some(y), Some(m), Some(d)) = (parts.next(), parts.next(), parts.next()) else {
            return value;
        };
        let month = m
            .parse::<usize>()
            .ok()
            .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
            .copied()
            .unwrap_or_default();
        match format.as_str() {
            "MMMM DD, YYYY" => format!("{month} {d}, {y}"),
            "MMMM DD" => format!("{month} {d}"),
            "MMM DD" => format!("{} {d}", &month[..month.len().min(3)]),
            "MMMM" => month.to_string(),
            _ => value,
        }
    });
    env.add_filter("time12", |value: String| -> String {
        let Some((h, m)) = value.split_once(':') else {
            return value;
        };
        let Ok(h) = h.parse::<u32>() else {
            return value;
        };
        let half = if h >= 12 { "PM" } else { "AM" };
        format!("{}:{m} {half}", if h % 12 == 0 { 12 } else { h % 12 })
    });
    env.add_filter("currency", |value: f64| -> String {
        let cents = (value * 100.0).round() as i64;
        let whole = (cents / 100).to_string();
        let mut grouped = String::new();
        for (i, c) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("${grouped}.{:02}", cents % 100)
    });
    env
}

fn templates(c: &mut Criterion) {
    let vars = trip_vars();
    let ours = Template::parse(TRIP).expect("the seed template parses");
    let mut env = jinja_env();
    env.add_template("trip", TRIP_JINJA)
        .expect("the MiniJinja template parses");
    let jinja = env.get_template("trip").expect("just added");
    let ctx = minijinja::Value::from(minijinja::value::Serde(&vars));
    let a = ours
        .render(&vars, RenderOptions::default())
        .expect("renders")
        .text();
    let b = jinja.render(&ctx).expect("renders");
    // The comparison means something only while both render the same text.
    assert!(
        a == b,
        "benches/trip-confirmation.jinja no longer renders what the seed template does"
    );
    let mut g = c.benchmark_group("template");
    g.throughput(Throughput::Elements(1));
    g.bench_function("ours/render", |bench| {
        bench.iter(|| {
            ours.render(black_box(&vars), RenderOptions::default())
                .map(|r| r.into_text())
        })
    });
    g.bench_function("minijinja/render", |bench| {
        bench.iter(|| jinja.render(black_box(&ctx)))
    });
    g.bench_function("ours/parse+render", |bench| {
        bench.iter(|| {
            Template::parse(black_box(TRIP))
                .and_then(|t| t.render(&vars, RenderOptions::default()))
                .map(|r| r.into_text())
        })
    });
    g.bench_function("minijinja/parse+render", |bench| {
        bench.iter(|| env.render_str(black_box(TRIP_JINJA), &ctx))
    });
    g.finish();
}

fn expressions(c: &mut Criterion) {
    let vars = trip_vars();
    let conditional = "trip.travelers.children > 0 ? ' and ' + trip.travelers.children + ' child' + (trip.travelers.children > 1 ? 'ren' : '') : ''";
    let mapped = "activities.map(activity => '• **' + activity.name + '** - ' + activity.description + ' (' + activity.date + ')').join('\\n')";
    let mut g = c.benchmark_group("expression");
    for (name, src) in [("conditional", conditional), ("map-join", mapped)] {
        let program = compile(src).expect("compiles");
        g.bench_function(format!("{name}/eval"), |bench| {
            bench.iter(|| program.eval(black_box(&vars), Limits::default()))
        });
        g.bench_function(format!("{name}/compile"), |bench| {
            bench.iter(|| compile(black_box(src)))
        });
    }
    g.finish();
}

/// A host whose steps finish at once: what is left is the runner's own work per step (ordering,
/// rendering the step's input, merging outputs, reporting, checkpoints).
struct Instant {
    now: Cell<f64>,
}

impl StepHost for Instant {
    fn run_step<'a>(
        &'a self,
        step: &'a StepDef,
        input: Option<String>,
        _vars: &'a Value,
    ) -> LocalBoxFuture<'a, StepOutcome> {
        let mut out = Map::new();
        if let Some(name) = step.output_variables.first() {
            out.insert(name.clone(), Value::String(input.unwrap_or_default()));
        }
        Box::pin(ready(Ok(out)))
    }

    fn rollback_step<'a>(
        &'a self,
        _step: &'a StepDef,
        _outputs: &'a Map<String, Value>,
        _vars: &'a Value,
    ) -> LocalBoxFuture<'a, Result<(), mcp_edge::engine::run::StepError>> {
        Box::pin(ready(Ok(())))
    }

    fn sleep(&self, ms: u64) -> LocalBoxFuture<'_, ()> {
        self.now.set(self.now.get() + ms as f64);
        Box::pin(ready(()))
    }

    fn now_ms(&self) -> f64 {
        self.now.get()
    }

    fn on_step(&self, _report: &StepReport) {}

    fn should_continue(&self) -> bool {
        true
    }

    fn checkpoint<'a>(&'a self, _report: &'a RunReport) -> LocalBoxFuture<'a, ()> {
        Box::pin(ready(()))
    }
}

fn chains(c: &mut Criterion) {
    const STEPS: u32 = 20;
    // Each step reads the previous one's output, so they run one batch each, in order.
    let steps: Vec<Value> = (1..=STEPS)
        .map(|i| {
            json!({
                "id": i, "name": format!("step{i}"), "type": "data_transformation",
                "input_template": if i == 1 { "{name|upper}".to_string() } else { format!("{{v{}}}!", i - 1) },
                "input_variables": if i == 1 { vec!["name".to_string()] } else { vec![format!("v{}", i - 1)] },
                "output_variables": [format!("v{i}")],
            })
        })
        .collect();
    let def: ChainDef =
        serde_json::from_value(json!({ "name": "bench", "title": "Bench", "steps": steps }))
            .expect("a chain definition");
    let planned = plan(&def).expect("plans");
    let host = Instant {
        now: Cell::new(0.0),
    };
    let opts = RunOptions {
        parallel: true,
        rollback: true,
        max_execution_ms: 60_000,
        jitter_seed: 1,
        auto_retry: false,
        strict_inputs: false,
    };
    let mut g = c.benchmark_group("chain");
    g.throughput(Throughput::Elements(u64::from(STEPS)));
    g.bench_function("run/20 steps", |bench| {
        bench.iter_batched(
            || json!({ "name": "ada" }),
            |inputs| block_on(run(&planned, inputs, &host, opts)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("plan/20 steps", |bench| {
        bench.iter(|| plan(black_box(&def)))
    });
    g.finish();
}

/// A small deterministic generator (xorshift), so every run indexes the same catalog.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn words(&mut self, vocab: &[&str], n: usize) -> String {
        (0..n)
            .map(|_| vocab[(self.next() % vocab.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The 74 shipped contexts plus generated ones up to `n`, written in the catalog's own vocabulary
/// so term statistics look like a real, larger catalog's.
fn catalog(n: usize) -> Vec<Entry> {
    let mut entries = catalog_entries(CONTEXTS).expect("the shipped catalog parses");
    let text: String = entries
        .iter()
        .map(|e| format!("{} {} {}", e.name, e.description, e.examples.join(" ")))
        .collect::<Vec<_>>()
        .join(" ");
    let vocab: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .collect();
    let domains = [
        "technical",
        "creative",
        "business",
        "regulatory",
        "personal",
        "emergency",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in entries.len()..n {
        entries.push(Entry {
            uri: format!("workflow://generated-{i}"),
            domain: domains[i % domains.len()].to_string(),
            name: rng.words(&vocab, 3),
            tags: (0..5).map(|_| rng.words(&vocab, 1)).collect(),
            examples: (0..3).map(|_| rng.words(&vocab, 10)).collect(),
            description: rng.words(&vocab, 35),
            required: vec!["system_component".into()],
            optional: vec!["technology".into()],
        });
    }
    entries
}

fn matching(c: &mut Criterion) {
    let requests = labelled_requests(REQUESTS).expect("the labelled requests parse");
    let queries: Vec<String> = requests.iter().take(20).map(|r| r.query.clone()).collect();
    let provided = vec!["technology".to_string()];
    let mut g = c.benchmark_group("bm25");
    g.sample_size(20);
    let matcher = Matcher::new(catalog(10_000), Params::default());
    // Per query.
    g.throughput(Throughput::Elements(queries.len() as u64));
    g.bench_function("rank/10000 contexts", |bench| {
        bench.iter(|| {
            for q in &queries {
                let request = Request {
                    query: q,
                    provided: &provided,
                    domain: None,
                };
                black_box(matcher.rank(&request, &Model::default(), |_| true, 5));
            }
        })
    });
    // Per context.
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("index/10000 contexts", |bench| {
        bench.iter_batched(
            || catalog(10_000),
            |entries| Matcher::new(entries, Params::default()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, templates, expressions, chains, matching);
criterion_main!(benches);
