//! The error codes FlowMind's tools answer with, in one place: `field_request`'s argument checks
//! ([`super::validate`]), `execute_workflow` ([`super::execute`]) and `compose_workflow`
//! ([`super::compose`]) take their codes from here, and [`ALL`] lists every one, so a test can
//! hold `get_help`'s explanations ([`super::discover`]) to the codes the tools really emit: a new
//! code without an explanation fails it.

/// An argument does not match the tool's input schema.
pub const INVALID_INPUT: &str = "INVALID_INPUT";
/// `field_request` without a query.
pub const MISSING_QUERY: &str = "MISSING_QUERY";
/// A query under 3 words or 10 characters.
pub const QUERY_TOO_BRIEF: &str = "QUERY_TOO_BRIEF";
/// A query over 500 characters.
pub const QUERY_TOO_LONG: &str = "QUERY_TOO_LONG";
/// `confidence_level` missing, not a number or outside 0..1.
pub const INVALID_CONFIDENCE: &str = "INVALID_CONFIDENCE";
/// Extracted variables that break a consistency rule of `field_request`'s schema.
pub const INVALID_VARIABLES: &str = "INVALID_VARIABLES";
/// A confidence above 0.9 resting on fewer than 3 extracted variables.
pub const CONFIDENCE_INCONSISTENT: &str = "CONFIDENCE_INCONSISTENT";
/// `execute_workflow` of a URI the catalog does not hold.
pub const WORKFLOW_NOT_FOUND: &str = "WORKFLOW_NOT_FOUND";
/// `execute_workflow` of a tool context: nothing to run.
pub const NOT_EXECUTABLE: &str = "NOT_EXECUTABLE";
/// `execute_workflow` of a context more complex than the caller's level runs (the seed's
/// `max_complexity`).
pub const COMPLEXITY_ABOVE_LEVEL: &str = "COMPLEXITY_ABOVE_LEVEL";
/// `execute_workflow` without a required variable of the workflow.
pub const MISSING_VARIABLES: &str = "MISSING_VARIABLES";
/// `constraints.require_approval_for` entries that are neither actions nor steps.
pub const INVALID_CONSTRAINTS: &str = "INVALID_CONSTRAINTS";
/// `confidence_override` without a `confidence_level` to compare.
pub const CONFIDENCE_LEVEL_NEEDED: &str = "CONFIDENCE_LEVEL_NEEDED";
/// Autonomous mode with no model to carry out the steps.
pub const AUTONOMOUS_UNAVAILABLE: &str = "AUTONOMOUS_UNAVAILABLE";
/// Autonomous mode with a `confidence_level` below the workflow's threshold.
pub const CONFIDENCE_TOO_LOW: &str = "CONFIDENCE_TOO_LOW";
/// The caller already has `execute::MAX_OPEN` workflow runs open.
pub const TOO_MANY_OPEN_WORKFLOWS: &str = "TOO_MANY_OPEN_WORKFLOWS";
/// A workflow run that ended failed.
pub const WORKFLOW_FAILED: &str = "WORKFLOW_FAILED";
/// A workflow run that ended past its `max_duration_ms`.
pub const WORKFLOW_TIMED_OUT: &str = "WORKFLOW_TIMED_OUT";
/// A workflow run that was cancelled or rejected at an approval.
pub const WORKFLOW_CANCELLED: &str = "WORKFLOW_CANCELLED";
/// `compose_workflow` components the catalog does not hold.
pub const UNKNOWN_COMPONENTS: &str = "UNKNOWN_COMPONENTS";
/// A composition that cannot run (roles, conditions, flow).
pub const INVALID_COMPOSITION: &str = "INVALID_COMPOSITION";
/// `compose_workflow` saving under a name the catalog already holds.
pub const NAME_TAKEN: &str = "NAME_TAKEN";

/// Every code a FlowMind tool can answer with.
pub const ALL: [&str; 22] = [
    INVALID_INPUT,
    MISSING_QUERY,
    QUERY_TOO_BRIEF,
    QUERY_TOO_LONG,
    INVALID_CONFIDENCE,
    INVALID_VARIABLES,
    CONFIDENCE_INCONSISTENT,
    WORKFLOW_NOT_FOUND,
    NOT_EXECUTABLE,
    COMPLEXITY_ABOVE_LEVEL,
    MISSING_VARIABLES,
    INVALID_CONSTRAINTS,
    CONFIDENCE_LEVEL_NEEDED,
    AUTONOMOUS_UNAVAILABLE,
    CONFIDENCE_TOO_LOW,
    TOO_MANY_OPEN_WORKFLOWS,
    WORKFLOW_FAILED,
    WORKFLOW_TIMED_OUT,
    WORKFLOW_CANCELLED,
    UNKNOWN_COMPONENTS,
    INVALID_COMPOSITION,
    NAME_TAKEN,
];

/// The code of a workflow run that ended with chain status `status` short of completing.
pub fn run_ended(status: &str) -> &'static str {
    match status {
        "timed_out" => WORKFLOW_TIMED_OUT,
        "cancelled" => WORKFLOW_CANCELLED,
        _ => WORKFLOW_FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_every_end_of_a_run_has_one() {
        let mut sorted = ALL.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ALL.len());
        for status in ["failed", "timed_out", "cancelled"] {
            assert!(ALL.contains(&run_ended(status)), "{status}");
        }
        assert_eq!(run_ended("timed_out"), "WORKFLOW_TIMED_OUT");
    }
}
