//! Any text: compiling never panics; evaluating a compiled expression never panics and stays within
//! its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_edge::engine::expr::{compile, Limits};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(program) = compile(src) {
        let vars = serde_json::json!({
            "a": 1, "s": "text", "list": [1, 2, 3], "obj": { "k": "v", "n": null },
            "date": "2025-06-15", "time": "14:30"
        });
        let _ = program.eval(
            &vars,
            Limits {
                fuel: 10_000,
                max_output: 64 * 1024,
            },
        );
    }
});
