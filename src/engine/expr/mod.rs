//! The expression language shared by templates (`{expr}` placeholders) and chain conditions.
//!
//! Lexer → parser → tree → evaluator over JSON values. The language is a small, side-effect-free
//! subset of JavaScript expressions plus filters:
//!
//! - paths `a.b.c`, `a[0]`, `a['k']`, `a?.b`; literals `'text'`, `"text"`, `12.5`, `true`, `false`,
//!   `null`; `{path}` is the same as `path` (chain conditions write `{status} == 'approved'`);
//! - `! -`, `* / %`, `+ -` (`+` joins text when either side is text), `< <= > >=`, `== !=` (strict:
//!   no type coercion; `===`/`!==` are accepted as the same), `&&`, `||` (return an operand, as in
//!   JavaScript), `c ? a : b`, parentheses;
//! - `.length`, `.map(x => …)`, `.filter(x => …)`, `.join(sep)`, `.includes(v)`, `.toUpperCase()`,
//!   `.toLowerCase()`, `.trim()`;
//! - filters after `|`, see [`filters`].
//!
//! A missing path evaluates to `null` and is reported in [`Evaluated::missing`]. Evaluation only sees
//! the variables it is given; `__proto__` and `constructor` are ordinary keys. Each evaluation has a
//! fuel budget and an output cap, and trees are at most [`parser::MAX_DEPTH`] deep, so no input can
//! hang or exhaust the Worker. Every error carries a line, a column and a caret excerpt.

mod eval;
pub mod filters;
mod lexer;
mod parser;

use std::fmt;

use serde_json::Value;

pub use parser::MAX_DEPTH;

/// A position in the expression source (1-based, in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
}

/// A compile or evaluation error, with where it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    /// Where in the source.
    pub pos: Pos,
    /// What went wrong and what to do.
    pub message: String,
    /// The source line and a caret under the column, when the source is known.
    pub excerpt: Option<String>,
}

impl ExprError {
    pub(crate) fn at(pos: Pos, message: String) -> Self {
        ExprError {
            pos,
            message,
            excerpt: None,
        }
    }

    /// Adds the line of `src` the error points at, with a caret under the column.
    pub fn with_source(mut self, src: &str) -> Self {
        if let Some(line) = src.lines().nth(self.pos.line.saturating_sub(1) as usize) {
            let pad: String = line
                .chars()
                .take(self.pos.col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            self.excerpt = Some(format!("  {line}\n  {pad}^"));
        }
        self
    }

    /// Moves the position by the place where this expression starts inside a larger text (a
    /// template), so errors point into that text.
    pub fn offset(mut self, start: Pos) -> Self {
        if self.pos.line == 1 {
            self.pos.col += start.col.saturating_sub(1);
        }
        self.pos.line += start.line.saturating_sub(1);
        self
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.pos.line, self.pos.col, self.message
        )?;
        if let Some(x) = &self.excerpt {
            write!(f, "\n{x}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ExprError {}

/// Resource limits of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Evaluation steps allowed (each node and each loop iteration costs one).
    pub fuel: u64,
    /// Largest text or list an evaluation may build, in bytes or items.
    pub max_output: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 100_000,
            max_output: 1 << 20,
        }
    }
}

/// The result of an evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    /// The value.
    pub value: Value,
    /// Paths that were read but had no value, in the order met (for template warnings).
    pub missing: Vec<String>,
    /// The last filter applied was `raw`: the template engine must not escape this value.
    pub raw: bool,
}

/// A compiled expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    expr: parser::Expr,
    source: String,
}

/// Compiles `src`. Unknown filters and wrong filter arguments are compile errors.
pub fn compile(src: &str) -> Result<Program, ExprError> {
    let expr = lexer::lex(src)
        .and_then(parser::parse)
        .and_then(|e| filters::check(&e).map(|()| e))
        .map_err(|e| e.with_source(src))?;
    Ok(Program {
        expr,
        source: src.to_string(),
    })
}

impl Program {
    /// Evaluates against `vars` (an object whose keys are the top-level names).
    pub fn eval(&self, vars: &Value, limits: Limits) -> Result<Evaluated, ExprError> {
        eval::run(&self.expr, vars, limits).map_err(|e| e.with_source(&self.source))
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The top-level variable names the expression reads (lambda parameters excluded).
    pub fn variables(&self) -> Vec<String> {
        let mut out = Vec::new();
        eval::collect_paths(&self.expr, &mut Vec::new(), &mut out);
        out
    }
}

/// A number as JSON: whole values become integers, so `2` prints as `2`, not `2.0`.
pub fn num(n: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if n.fract() == 0.0 && n.abs() < EXACT {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// JavaScript-like truthiness: `null`, `false`, `0`, `""` are false; everything else is true.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The text of a value in a template: `null` is empty, numbers print as in JavaScript, lists join
/// with `, `, objects print as JSON.
pub fn to_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => f.to_string(),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(to_text).collect::<Vec<_>>().join(", "),
        Value::Object(_) => v.to_string(),
    }
}

#[cfg(test)]
mod tests;
