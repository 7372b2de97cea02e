//! Any text: parsing a template never panics; rendering in every output format never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_edge::engine::expr::Limits;
use mcp_edge::engine::output::{finish, Format};
use mcp_edge::engine::template::{RenderOptions, Template};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = Template::parse(src) {
        let vars = serde_json::json!({ "name": "<b>x</b>", "items": ["a", "b"], "n": 3 });
        let opts = RenderOptions {
            strict: false,
            limits: Limits {
                fuel: 10_000,
                max_output: 64 * 1024,
            },
        };
        if let Ok(r) = t.render(&vars, opts) {
            for f in [Format::Text, Format::Markdown, Format::Html] {
                let _ = finish(&r, f, true);
            }
        }
    }
});
