//! Settings that give each tool a value by its MCP name, with `*` for every tool not named:
//! `RATE_LIMITS` (`search_flights=10/1m`) and `TOOL_TIMEOUTS` (`search_flights=30s`). One parser,
//! so both read, fail and name their bad entries the same way.

use std::collections::BTreeMap;

/// A value for every tool, and per-tool exceptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerTool<T> {
    default: T,
    tools: BTreeMap<String, T>,
    /// The setting had a `*` entry.
    star: bool,
}

impl<T> PerTool<T> {
    /// `default` for every tool, no exceptions.
    pub fn all(default: T) -> Self {
        PerTool {
            default,
            tools: BTreeMap::new(),
            star: false,
        }
    }

    /// Parses the comma-separated `<tool>=<value>` entries of the setting `setting` over
    /// `default`; `*=<value>` replaces the default. `value` reads one value or says what is wrong
    /// with it; `expected` (an example of a good entry) ends every error, which names the entry.
    pub fn parse(
        setting: &str,
        text: &str,
        default: T,
        expected: &str,
        value: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Self, String> {
        let mut out = PerTool::all(default);
        let mut seen = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let bad = |why: &str| format!("{setting} entry {entry:?}: {why}; expected {expected}");
            let (name, raw) = entry.split_once('=').ok_or_else(|| bad("there is no ="))?;
            let (name, raw) = (name.trim(), raw.trim());
            if name.is_empty() {
                return Err(bad("the tool name is empty"));
            }
            if seen.contains(&name) {
                return Err(bad("this tool is named twice"));
            }
            seen.push(name);
            let v = value(raw).map_err(|why| bad(&why))?;
            if name == "*" {
                out.default = v;
                out.star = true;
            } else {
                out.tools.insert(name.to_string(), v);
            }
        }
        Ok(out)
    }

    /// The value of the tool with this MCP name.
    pub fn get(&self, name: &str) -> &T {
        self.tools.get(name).unwrap_or(&self.default)
    }

    /// The value of the tool `name`, which declares `own` as its value: `own` unless the setting
    /// said otherwise, by naming the tool or by giving every tool not named a value with `*` (so
    /// `*=off` switches off declared values too).
    pub fn get_declared(&self, name: &str, own: Option<T>) -> T
    where
        T: Clone,
    {
        match (self.tools.get(name), own) {
            (Some(v), _) => v.clone(),
            (None, Some(own)) if !self.star => own,
            _ => self.default.clone(),
        }
    }

    /// The tool names the setting mentions that `known` does not accept (a typo would otherwise
    /// leave a tool silently at the default).
    pub fn unknown_tools(&self, known: impl Fn(&str) -> bool) -> Vec<String> {
        self.tools.keys().filter(|n| !known(n)).cloned().collect()
    }
}

/// Per-tool timeouts (`TOOL_TIMEOUTS`), overriding the `timeout_ms` tools declare: `None` keeps
/// the declaration.
pub type ToolTimeouts = PerTool<Option<u32>>;

/// Shortest timeout `TOOL_TIMEOUTS` may set: below it even a D1 read can time out.
const MIN_TIMEOUT_MS: u64 = 100;
/// Longest: a call's stream is bounded anyway, and a longer call should run as a background job.
const MAX_TIMEOUT_MS: u64 = 900_000;

impl ToolTimeouts {
    /// Parses `TOOL_TIMEOUTS`: `<tool>=<duration>` entries, the duration a whole number of `ms`,
    /// `s` or `m` (`search_flights=30s, *=15s`). Unset or empty: every tool keeps its declared
    /// timeout.
    pub fn parse_setting(text: &str) -> Result<ToolTimeouts, String> {
        PerTool::parse(
            "TOOL_TIMEOUTS",
            text,
            None,
            "<tool>=<duration> such as search_flights=30s, or *=<duration> for every other tool",
            |raw| {
                let (digits, unit_ms) = if let Some(d) = raw.strip_suffix("ms") {
                    (d, 1)
                } else if let Some(d) = raw.strip_suffix('s') {
                    (d, 1000)
                } else if let Some(d) = raw.strip_suffix('m') {
                    (d, 60_000)
                } else {
                    return Err("the duration must end in ms, s or m".into());
                };
                let ms = digits
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| "the duration must be a whole number of ms, s or m".to_string())?
                    .saturating_mul(unit_ms);
                if !(MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(&ms) {
                    return Err(format!(
                        "the duration must be from {MIN_TIMEOUT_MS} ms to {} m",
                        MAX_TIMEOUT_MS / 60_000
                    ));
                }
                Ok(u32::try_from(ms).ok())
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_override_declarations_by_name_and_star() {
        let t =
            ToolTimeouts::parse_setting(" search_flights=30s, *=1500ms ,list_events=2m").unwrap();
        assert_eq!(*t.get("search_flights"), Some(30_000));
        assert_eq!(*t.get("list_events"), Some(120_000));
        assert_eq!(*t.get("anything_else"), Some(1500));
        let none = ToolTimeouts::parse_setting("").unwrap();
        assert_eq!(*none.get("search_flights"), None, "the declaration stands");
        assert_eq!(
            t.unknown_tools(|n| n == "search_flights"),
            vec!["list_events".to_string()]
        );
    }

    #[test]
    fn bad_timeouts_name_the_entry_and_the_fix() {
        for (text, why) in [
            ("search_flights", "there is no ="),
            ("=5s", "the tool name is empty"),
            ("a=5s,a=6s", "named twice"),
            ("a=5", "must end in ms, s or m"),
            ("a=five s", "whole number"),
            ("a=50ms", "from 100 ms to 15 m"),
            ("a=16m", "from 100 ms to 15 m"),
        ] {
            let e = ToolTimeouts::parse_setting(text).unwrap_err();
            assert!(e.starts_with("TOOL_TIMEOUTS entry"), "{e}");
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.contains("expected <tool>=<duration>"), "{e}");
        }
    }
}
