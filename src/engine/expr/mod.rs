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
//! the variables it is given; `__proto__` and `constructor` are ordinary keys. Every error carries a
//! line, a column and a caret excerpt.
//!
//! **Costs are bounded by the input.** Variables are read by reference, never copied on lookup; a
//! value is copied only where a result must own it (an item `map` returns, the final value), and the
//! copy is paid for by its size. Every step is charged to a [`Budget`]: one unit per tree node
//! evaluated, per list item visited, per value or key copied or compared, per [`BYTES_PER_UNIT`]
//! bytes of text read or produced, and per [`BYTES_PER_UNIT_SLOW`] bytes of letter case or JSON text.
//! The budget is [`Limits::fuel`] plus one unit per byte of the source plus [`UNITS_PER_INPUT_UNIT`]
//! per unit of the variables' size ([`size_units`]), so the work allowed grows linearly with the
//! input and a loop inside a loop over the same list runs out long before it costs the square of its
//! input. Text is capped at [`Limits::max_output`] while it is built, and trees are at most
//! [`parser::MAX_DEPTH`] deep, so no input can hang or exhaust the Worker.

mod dates;
mod eval;
pub mod filters;
mod lexer;
mod parser;

use std::fmt;

use serde_json::Value;

use eval::Ctx;

pub(crate) use lexer::advance;
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

/// Resource limits of one evaluation or one template render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Units of work allowed whatever the input's size; the [`Budget`] adds an allowance that grows
    /// with the input.
    pub fuel: u64,
    /// Largest text or list an evaluation may build, in bytes or items (for a template, also the
    /// whole output).
    pub max_output: usize,
}

/// Bytes of text read, copied or produced that cost one unit of the budget.
pub const BYTES_PER_UNIT: usize = 16;

/// Bytes that cost one unit where each byte takes real work: letter case (Unicode tables) and JSON
/// text (escaping).
pub const BYTES_PER_UNIT_SLOW: usize = 4;

/// Units of budget each unit of the variables' size ([`size_units`]) adds: enough to read and copy
/// every variable a few times over.
pub const UNITS_PER_INPUT_UNIT: u64 = 2;

/// The work one evaluation or one template render may still do (see the module docs). A template
/// shares one budget among all its placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget<'v> {
    left: u64,
    total: u64,
    base: u64,
    max_output: usize,
    /// The variables whose share of the budget is not counted yet: most renders finish within the
    /// fuel, so their variables are walked only when the rest of the budget runs out.
    input: Option<&'v Value>,
}

impl<'v> Budget<'v> {
    /// The budget for `source_bytes` of template or expression source over `vars`:
    /// `limits.fuel` + `source_bytes` + [`UNITS_PER_INPUT_UNIT`] × the size of `vars`. The size of
    /// `vars` is counted the first time the rest does not cover a step, so the budget is the same
    /// and a render that spends less than the fuel never walks its variables.
    pub fn new(limits: Limits, source_bytes: usize, vars: &'v Value) -> Budget<'v> {
        let total = limits.fuel.saturating_add(source_bytes as u64);
        Budget {
            left: total,
            total,
            base: limits.fuel,
            max_output: limits.max_output,
            input: Some(vars),
        }
    }

    /// Adds the variables' share, once.
    fn count_input(&mut self) {
        if let Some(vars) = self.input.take() {
            let share = UNITS_PER_INPUT_UNIT.saturating_mul(size_units(vars));
            self.total = self.total.saturating_add(share);
            self.left = self.left.saturating_add(share);
        }
    }

    /// Units not spent yet.
    pub fn left(&mut self) -> u64 {
        self.count_input();
        self.left
    }

    /// Largest text or list an evaluation may build.
    pub fn max_output(&self) -> usize {
        self.max_output
    }

    /// Spends `units`, or fails at `pos` when the budget cannot pay for them. Every step of an
    /// evaluation calls this, so the common case is inlined and the rest is out of line.
    #[inline(always)]
    pub(crate) fn spend(&mut self, units: u64, pos: Pos) -> Result<(), ExprError> {
        if units <= self.left {
            self.left -= units;
            return Ok(());
        }
        self.spend_more(units, pos)
    }

    /// [`Budget::spend`] when what is left does not cover `units`: counts the variables' share,
    /// then spends or fails.
    #[cold]
    #[inline(never)]
    fn spend_more(&mut self, units: u64, pos: Pos) -> Result<(), ExprError> {
        self.count_input();
        if units > self.left {
            self.left = 0;
            return Err(ExprError::at(
                pos,
                format!(
                    "evaluation budget exhausted: this needs more work than its input allows (a budget of {} units: {}, plus 1 per byte of the template or expression, plus {UNITS_PER_INPUT_UNIT} per value, key or {BYTES_PER_UNIT} bytes of text in its variables). A loop over a list inside a loop over the same list (x.map(i => x)) costs the square of the input: loop once, or pass less data",
                    self.total, self.base,
                ),
            ));
        }
        self.left -= units;
        Ok(())
    }

    /// Spends the units `bytes` of text cost.
    #[inline(always)]
    pub(crate) fn spend_bytes(&mut self, bytes: usize, pos: Pos) -> Result<(), ExprError> {
        self.spend((bytes / BYTES_PER_UNIT) as u64, pos)
    }

    /// Spends the units `bytes` of case mapping or JSON text cost.
    pub(crate) fn spend_slow_bytes(&mut self, bytes: usize, pos: Pos) -> Result<(), ExprError> {
        self.spend((bytes / BYTES_PER_UNIT_SLOW) as u64, pos)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 100_000,
            max_output: 1 << 20,
        }
    }
}

/// The size of a value in budget units: one per value (null, boolean, number, text, list, object),
/// one per key, plus one per [`BYTES_PER_UNIT`] bytes of text and keys. Walks without recursion, so
/// any depth is safe.
pub fn size_units(v: &Value) -> u64 {
    let mut units = 0u64;
    let mut bytes = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        units += 1;
        match v {
            Value::String(s) => bytes += s.len(),
            Value::Array(items) => stack.extend(items),
            Value::Object(m) => {
                for (k, v) in m {
                    units += 1;
                    bytes += k.len();
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    units.saturating_add((bytes / BYTES_PER_UNIT) as u64)
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

/// What printing a value as template text found (see [`Program::print`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Printed {
    /// The byte ranges of the output the template wrote (its string literals), in order: markup,
    /// not to be escaped. The rest of what was written came from the variables.
    pub markup: Vec<std::ops::Range<usize>>,
    /// The value was `null`.
    pub null: bool,
    /// As [`Evaluated::missing`].
    pub missing: Vec<String>,
    /// As [`Evaluated::raw`].
    pub raw: bool,
}

impl Program {
    /// Evaluates against `vars` (an object whose keys are the top-level names), with a budget of
    /// its own (see [`Budget::new`]).
    pub fn eval(&self, vars: &Value, limits: Limits) -> Result<Evaluated, ExprError> {
        let mut budget = Budget::new(limits, self.source.len(), vars);
        self.eval_in(vars, &mut budget)
    }

    /// Evaluates against `vars`, spending from `budget`.
    pub fn eval_in<'v>(
        &'v self,
        vars: &'v Value,
        budget: &mut Budget<'v>,
    ) -> Result<Evaluated, ExprError> {
        let mut ctx = Ctx::new(vars, budget, &mut []);
        let value = ctx
            .eval(&self.expr)
            .and_then(|v| ctx.own(v, Pos { line: 1, col: 1 }))
            .map_err(|e| e.with_source(&self.source))?;
        Ok(Evaluated {
            value,
            missing: ctx.into_missing(),
            raw: self.raw(),
        })
    }

    /// Evaluates against `vars` and appends the value as template text to `out`, which may grow to
    /// `limit` bytes, spending from `budget`; says which of it is the template's markup. The value
    /// itself is never copied.
    /// `roots` caches the top-level values the render has looked up, by the slots
    /// [`Program::number_roots`] gave their names.
    pub(crate) fn print<'v>(
        &'v self,
        vars: &'v Value,
        budget: &mut Budget<'v>,
        roots: &mut [Option<Option<&'v Value>>],
        out: &mut String,
        limit: usize,
    ) -> Result<Printed, ExprError> {
        let mut ctx = Ctx::new(vars, budget, roots);
        let (markup, null) = ctx
            .eval(&self.expr)
            .and_then(|v| {
                let mut markup = Vec::new();
                ctx.write_marked(&v, out, &mut markup, limit, Pos { line: 1, col: 1 })?;
                Ok((markup, v.is_null()))
            })
            .map_err(|e| e.with_source(&self.source))?;
        Ok(Printed {
            markup,
            null,
            missing: ctx.into_missing(),
            raw: self.raw(),
        })
    }

    /// Gives each top-level variable the slot of its name in `slots`, adding names not there yet
    /// (a template numbers all its placeholders with one map, so [`Program::print`] looks each
    /// top-level variable up once per render).
    pub(crate) fn number_roots(&mut self, slots: &mut std::collections::HashMap<String, u32>) {
        self.expr.number_roots(slots);
    }

    /// The last filter applied is `raw`.
    fn raw(&self) -> bool {
        matches!(&self.expr, parser::Expr::Filter(_, parser::Filter::Named(name, _), _) if name == "raw")
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The top-level variable names the expression reads (lambda parameters excluded).
    pub fn variables(&self) -> Vec<String> {
        let mut out = eval::Paths::default();
        eval::collect_paths(&self.expr, &mut Vec::new(), &mut out);
        out.list
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

/// A value for an error message: its text, shortened so a large value cannot make a large message.
pub(super) fn shown(v: &Value) -> String {
    super::clip(&to_text(v), 60)
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
