//! Progressive authorization (seed 001, "Progressive Authorization"): a caller starts as a
//! beginner with field_request and get_help, becomes intermediate after a number of successful
//! FlowMind calls and advanced after more, each level unlocking more of the toolset.
//!
//! Pure: which level a count of successful calls reaches, which tools a level allows, and what the
//! caller is told when a tool is locked or unlocked. Which level each tool needs is declared on
//! its `ToolDef` (`level`). Counting and persisting is the server's (`server::levels`); a tool
//! reads the level of its caller with [`of_caller`], to hold matching and running to the level's
//! `max_complexity`.

use serde_json::{json, Value};

use super::TOOLSET;
use crate::registry::ToolContext;

pub use crate::registry::Level;

/// Session-storage key (through `Platform::session_get`, so the session's `tool:` namespace) under
/// which the 2025 lane keeps an anonymous caller's count of successful FlowMind calls.
pub const ANONYMOUS_SUCCESSES: &str = "flowmind_successes";

/// The seed's context complexities, simplest first.
pub const COMPLEXITIES: [&str; 4] = ["simple", "moderate", "complex", "expert"];

/// Where `complexity` stands among [`COMPLEXITIES`]; an unknown one counts as the highest, so a
/// malformed context is never let through to a lower level.
fn rank(complexity: &str) -> usize {
    COMPLEXITIES
        .iter()
        .position(|c| *c == complexity)
        .unwrap_or(COMPLEXITIES.len())
}

/// Whether a caller at `level` may be offered and run a context of `complexity` (the seed's
/// `limits.max_complexity`: beginner simple, intermediate up to moderate, advanced up to expert).
pub fn within(level: Level, complexity: &str) -> bool {
    rank(complexity) <= rank(level.max_complexity())
}

/// The lowest level whose `max_complexity` admits `complexity`.
pub fn level_for(complexity: &str) -> Level {
    [Level::Beginner, Level::Intermediate]
        .into_iter()
        .find(|l| within(*l, complexity))
        .unwrap_or(Level::Advanced)
}

/// The FlowMind level of the caller of a tool call, or `None` when progressive authorization is
/// off (`FLOWMIND_LEVELS=off`). The count is read where `server::levels` keeps it: a signed-in
/// user's in D1, an anonymous caller's in the session (a 2026-07-28 request has none, so its
/// anonymous caller is a beginner, as its gate says). A count that cannot be read is 0: a storage
/// fault never widens access.
pub async fn of_caller(ctx: &dyn ToolContext) -> Option<Level> {
    let setting = ctx.platform().setting("FLOWMIND_LEVELS");
    // A setting that does not parse stops the deployment's start (Config::check); the default
    // here only keeps the limit, never lifts it.
    let t = Thresholds::parse_setting(setting.as_deref().unwrap_or_default())
        .unwrap_or(Some(Thresholds::default()))?;
    let counted = match ctx.caller().user {
        Some(user) => ctx
            .query(
                "SELECT successes FROM flowmind_progress WHERE caller = ?1",
                vec![json!(user)],
            )
            .await
            .map(|rows| rows.first().and_then(|r| r["successes"].as_u64())),
        None => ctx
            .platform()
            .session_get(ANONYMOUS_SUCCESSES)
            .map(|v| v.and_then(|v| v.parse().ok())),
    };
    Some(t.level(counted.ok().flatten().unwrap_or(0)))
}

/// The level a FlowMind tool declares (`ToolDef::level`), found by name among the toolset's tools.
fn declared(name: &str) -> Option<Level> {
    super::TOOLS
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| d.level)
}

/// Whether progressive authorization applies to a tool: every tool of the FlowMind toolset, and
/// any tool that declares a level.
pub fn is_gated(toolset: &str, name: &str) -> bool {
    toolset == TOOLSET || declared(name).is_some()
}

/// Whether `level` allows FlowMind tool `name`: its declared level is reached (a FlowMind tool
/// that declares none is allowed only at advanced, the seed's "all").
pub fn allows(level: Level, name: &str) -> bool {
    level >= needed_for(name)
}

/// The lowest level that allows `name`.
pub fn needed_for(name: &str) -> Level {
    declared(name).unwrap_or(Level::Advanced)
}

/// The successful-call counts at which a caller becomes intermediate and advanced
/// (`FLOWMIND_LEVELS`), or `None` when progressive authorization is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Successful FlowMind calls to become intermediate.
    pub intermediate: u64,
    /// Successful FlowMind calls to become advanced.
    pub advanced: u64,
}

impl Default for Thresholds {
    /// The seed's thresholds: intermediate after 10 successful calls, advanced after 50.
    fn default() -> Self {
        Thresholds {
            intermediate: 10,
            advanced: 50,
        }
    }
}

impl Thresholds {
    /// Reads `FLOWMIND_LEVELS`: empty for the default `10,50`; `off` for no gating (everyone is
    /// advanced); else `<intermediate>,<advanced>`, two whole numbers, the first at least 1 and not
    /// above the second. The error names the setting, what was wrong and an example.
    pub fn parse_setting(text: &str) -> Result<Option<Thresholds>, String> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(Some(Thresholds::default()));
        }
        if t.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let bad = || {
            format!(
                "FLOWMIND_LEVELS is {t:?}; expected two whole numbers <intermediate>,<advanced> (successful FlowMind calls, 1 <= intermediate <= advanced), e.g. \"10,50\", or \"off\" to give every caller every FlowMind tool"
            )
        };
        let parts: Vec<&str> = t.split(',').map(str::trim).collect();
        let [a, b] = parts.as_slice() else {
            return Err(bad());
        };
        let (Ok(intermediate), Ok(advanced)) = (a.parse::<u64>(), b.parse::<u64>()) else {
            return Err(bad());
        };
        if intermediate == 0 || intermediate > advanced {
            return Err(bad());
        }
        Ok(Some(Thresholds {
            intermediate,
            advanced,
        }))
    }

    /// The level `successes` successful calls reach.
    pub fn level(&self, successes: u64) -> Level {
        if successes >= self.advanced {
            Level::Advanced
        } else if successes >= self.intermediate {
            Level::Intermediate
        } else {
            Level::Beginner
        }
    }

    /// Successful calls needed to reach `level`.
    pub fn needed(&self, level: Level) -> u64 {
        match level {
            Level::Beginner => 0,
            Level::Intermediate => self.intermediate,
            Level::Advanced => self.advanced,
        }
    }
}

/// `_unlocks` of the response whose success moved the caller from `from` to `to`: the new level,
/// the tools it adds (of `known`, the FlowMind tools this deployment has) and what comes next.
pub fn unlocks(
    from: Level,
    to: Level,
    known: &[&str],
    thresholds: &Thresholds,
    successes: u64,
) -> Value {
    let new_tools: Vec<&str> = known
        .iter()
        .copied()
        .filter(|t| allows(to, t) && !allows(from, t))
        .collect();
    let available: Vec<&str> = known.iter().copied().filter(|t| allows(to, t)).collect();
    let mut u = json!({
        "level": to.as_str(),
        "previous_level": from.as_str(),
        "new_tools": new_tools,
        "available_tools": available,
        "max_complexity": to.max_complexity(),
        "successful_calls": successes,
        "message": format!(
            "Level up: you are now {} after {successes} successful FlowMind calls. Newly available: {}. Call tools/list to see them.",
            to.as_str(),
            if new_tools.is_empty() { "no further tools on this server".to_string() } else { new_tools.join(", ") }
        ),
    });
    if let Some(next) = to.next() {
        u["next_level"] = json!({
            "level": next.as_str(),
            "at_successful_calls": thresholds.needed(next),
        });
    }
    u
}

/// A teaching line for a response at `level`, in the spirit of the seed's Progressive Teaching
/// Pattern: what to practise at this level to reach the next.
pub fn teaching_note(level: Level, thresholds: &Thresholds, successes: u64) -> String {
    match level.next() {
        Some(next) => {
            let left = thresholds.needed(next).saturating_sub(successes);
            format!(
                "You are a FlowMind {}: {left} more successful call{} unlock{} {}.",
                level.as_str(),
                if left == 1 { "" } else { "s" },
                if left == 1 { "s" } else { "" },
                next.as_str()
            )
        }
        None => "You are a FlowMind advanced user: every FlowMind tool is yours, compose_workflow included for multi-domain cases.".to_string(),
    }
}

/// The message refusing locked tool `name` to a caller at `level` with `successes` successful
/// calls: which level it needs, how far away that is, and what to use meanwhile.
pub fn locked_message(
    name: &str,
    level: Level,
    thresholds: &Thresholds,
    successes: u64,
    known: &[&str],
) -> String {
    let needed = needed_for(name);
    let left = thresholds.needed(needed).saturating_sub(successes);
    let available: Vec<&str> = known.iter().copied().filter(|t| allows(level, t)).collect();
    format!(
        "Tool {name} is locked: it needs FlowMind level {} and you are {} ({successes} successful FlowMind call{} so far). It unlocks after {left} more successful FlowMind call{}; until then use {} (field_request finds the context, get_help explains how).",
        needed.as_str(),
        level.as_str(),
        if successes == 1 { "" } else { "s" },
        if left == 1 { "" } else { "s" },
        available.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &[
        "evaluate_semantic_condition",
        "field_request",
        "get_help",
        "list_available_contexts",
    ];

    #[test]
    fn levels_follow_the_seed() {
        let t = Thresholds::default();
        assert_eq!(t.level(0), Level::Beginner);
        assert_eq!(t.level(9), Level::Beginner);
        assert_eq!(t.level(10), Level::Intermediate);
        assert_eq!(t.level(49), Level::Intermediate);
        assert_eq!(t.level(50), Level::Advanced);
        assert!(allows(Level::Beginner, "field_request"));
        assert!(allows(Level::Beginner, "get_help"));
        assert!(!allows(Level::Beginner, "evaluate_semantic_condition"));
        assert!(!allows(Level::Beginner, "list_available_contexts"));
        assert!(allows(Level::Intermediate, "execute_workflow"));
        assert!(allows(Level::Intermediate, "evaluate_semantic_condition"));
        assert!(!allows(Level::Intermediate, "compose_workflow"));
        assert!(!allows(Level::Intermediate, "list_available_contexts"));
        assert!(allows(Level::Advanced, "compose_workflow"));
        assert_eq!(needed_for("compose_workflow"), Level::Advanced);
        assert_eq!(needed_for("execute_workflow"), Level::Intermediate);
        assert_eq!(needed_for("get_help"), Level::Beginner);
        assert!(is_gated("flowmind", "anything"));
        assert!(is_gated("workflows", "execute_workflow"));
        assert!(!is_gated("instructions", "switch_mode"));
    }

    #[test]
    fn each_level_has_the_seeds_max_complexity() {
        assert!(within(Level::Beginner, "simple"));
        assert!(!within(Level::Beginner, "moderate"));
        assert!(within(Level::Intermediate, "moderate"));
        assert!(!within(Level::Intermediate, "complex"));
        assert!(within(Level::Advanced, "complex"));
        assert!(within(Level::Advanced, "expert"));
        assert!(!within(Level::Advanced, "unheard-of"));
        assert_eq!(level_for("simple"), Level::Beginner);
        assert_eq!(level_for("moderate"), Level::Intermediate);
        assert_eq!(level_for("complex"), Level::Advanced);
        assert_eq!(level_for("expert"), Level::Advanced);
    }

    #[test]
    fn the_setting_is_parsed_strictly() {
        assert_eq!(
            Thresholds::parse_setting(""),
            Ok(Some(Thresholds::default()))
        );
        assert_eq!(Thresholds::parse_setting(" OFF "), Ok(None));
        assert_eq!(
            Thresholds::parse_setting("2, 3"),
            Ok(Some(Thresholds {
                intermediate: 2,
                advanced: 3
            }))
        );
        for bad in ["3", "0,5", "5,2", "a,b", "1,2,3", "-1,4"] {
            let e = Thresholds::parse_setting(bad).unwrap_err();
            assert!(
                e.contains("FLOWMIND_LEVELS") && e.contains("10,50"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn unlocks_name_the_new_tools_and_the_next_level() {
        let t = Thresholds::default();
        let u = unlocks(Level::Beginner, Level::Intermediate, KNOWN, &t, 10);
        assert_eq!(u["level"], "intermediate");
        assert_eq!(u["new_tools"], json!(["evaluate_semantic_condition"]));
        assert_eq!(
            u["available_tools"],
            json!(["evaluate_semantic_condition", "field_request", "get_help"])
        );
        assert_eq!(u["next_level"]["at_successful_calls"], 50);
        let u = unlocks(Level::Intermediate, Level::Advanced, KNOWN, &t, 50);
        assert_eq!(u["new_tools"], json!(["list_available_contexts"]));
        assert!(u.get("next_level").is_none());
    }

    #[test]
    fn messages_say_how_far_the_next_level_is() {
        let t = Thresholds::default();
        let m = locked_message("list_available_contexts", Level::Beginner, &t, 3, KNOWN);
        assert!(m.contains("needs FlowMind level advanced"), "{m}");
        assert!(m.contains("after 47 more"), "{m}");
        assert!(m.contains("use field_request, get_help"), "{m}");
        assert!(teaching_note(Level::Beginner, &t, 9)
            .contains("1 more successful call unlocks intermediate"));
        assert!(teaching_note(Level::Advanced, &t, 60).contains("advanced"));
    }
}
