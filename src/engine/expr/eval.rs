//! The evaluator: walks the tree over borrowed JSON values, charging every step to a [`Budget`].
//!
//! Values flow as [`Val`]: a reference into the variables or the tree (reading a variable never copies
//! it), a value the evaluation built, or a lambda parameter shared with the list it came from. A copy
//! is made only where a result must own a value, and it is paid for by its size (see the module docs
//! of [`super`] for the costs).
//!
//! **Provenance.** Text the template wrote (string literals, and the parts of `+`, `join` and `map`
//! results that came from literals) is the author's markup; everything read from the variables is
//! data. Values built from both carry a [`Mark`] saying which bytes are markup, so the output step
//! escapes exactly the data. Anything that does not track marks (other filters, methods, copies)
//! yields data: losing a mark escapes too much, never too little.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io;
use std::ops::{Deref, Range};
use std::rc::Rc;

use serde_json::{Map, Value};

use super::parser::{Arg, Expr, Filter, Lambda};
use super::{num, truthy, Budget, ExprError, Pos, BYTES_PER_UNIT, BYTES_PER_UNIT_SLOW};

/// A value during evaluation.
pub(super) enum Val<'a> {
    /// Borrowed from the variables or from a literal in the tree.
    Ref(&'a Value),
    /// Built by the evaluation.
    Own(Value),
    /// An item of a list the evaluation built, while a lambda has it as its parameter.
    Shared(Rc<Value>),
    /// A literal of the template: markup when printed.
    Lit(&'a Value),
    /// Text or a list the evaluation built from literals and data, with which parts are markup.
    Marked(Value, Mark),
}

/// Which parts of a built value the template wrote (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Mark {
    /// Text: the byte ranges that are markup, in order and disjoint.
    Text(Vec<Range<usize>>),
    /// A list: the mark of each item.
    Items(Vec<Mark>),
}

impl Mark {
    /// Text whose `len` bytes are all markup.
    pub(super) fn all(len: usize) -> Mark {
        Mark::Text(std::iter::once(0..len).collect())
    }
}

/// Adds `r` to the markup ranges `spans`, joining it to the last one when they touch.
#[inline(always)]
fn add_span(spans: &mut Vec<Range<usize>>, r: Range<usize>) {
    if r.is_empty() {
        return;
    }
    match spans.last_mut() {
        Some(last) if last.end == r.start => last.end = r.end,
        _ => spans.push(r),
    }
}

/// Text built by the evaluation, marked when some of it is markup.
fn built_text<'a>(s: String, spans: Vec<Range<usize>>) -> Val<'a> {
    if spans.is_empty() {
        Val::Own(Value::String(s))
    } else {
        Val::Marked(Value::String(s), Mark::Text(spans))
    }
}

impl Deref for Val<'_> {
    type Target = Value;

    #[inline(always)]
    fn deref(&self) -> &Value {
        match self {
            Val::Ref(v) | Val::Lit(v) => v,
            Val::Own(v) | Val::Marked(v, _) => v,
            Val::Shared(v) => v,
        }
    }
}

/// Missing paths one evaluation keeps in a list before it keeps a set beside it.
const FEW_MISSING: usize = 16;

pub(super) struct Ctx<'a, 'b> {
    pub(super) root: &'a Value,
    scope: Vec<(&'a str, Val<'a>)>,
    pub(super) budget: &'b mut Budget<'a>,
    missing: Vec<String>,
    /// The top-level values already looked up in this render, by the slot of their name
    /// ([`Expr::number_roots`]); empty outside a template.
    roots: &'b mut [Option<Option<&'a Value>>],
    /// The paths of `missing`, once there are more than [`FEW_MISSING`] of them.
    seen: Option<HashSet<String>>,
    /// The position of the last node evaluated that has one (literals have none), so every error
    /// points into the source.
    at: Pos,
}

/// Renders a path expression as text (`trip.destination.city`, `items[0]`), for messages.
fn path_text(e: &Expr) -> Option<String> {
    let mut out = String::new();
    write_path(e, &mut out).then_some(out)
}

/// Appends the text of the path `e` to `out` (one buffer for the whole path); false when `e` is not
/// a path.
fn write_path(e: &Expr, out: &mut String) -> bool {
    match e {
        Expr::Var(name, _, _) => out.push_str(name),
        Expr::Member(t, name, _) => {
            if !write_path(t, out) {
                return false;
            }
            out.push('.');
            out.push_str(name);
        }
        Expr::Index(t, i, _) => {
            if !write_path(t, out) {
                return false;
            }
            // Writing to a String cannot fail.
            let _ = match &**i {
                Expr::Lit(Value::Number(n)) => write!(out, "[{n}]"),
                Expr::Lit(Value::String(s)) => write!(out, "['{s}']"),
                _ => out.write_str("[…]"),
            };
        }
        _ => return false,
    }
    true
}

/// Paths in the order first met, without repeats (a set beside the list keeps this linear).
#[derive(Default)]
pub(super) struct Paths {
    pub(super) list: Vec<String>,
    seen: HashSet<String>,
}

impl Paths {
    fn add(&mut self, p: String) {
        if self.seen.insert(p.clone()) {
            self.list.push(p);
        }
    }
}

/// Collects the root variable paths an expression reads, skipping lambda parameters in `bound`.
pub(super) fn collect_paths(e: &Expr, bound: &mut Vec<String>, out: &mut Paths) {
    match e {
        Expr::Var(name, _, _) => {
            if !bound.contains(name) {
                out.add(name.clone());
            }
        }
        Expr::Member(t, _, _) => match path_text(e) {
            Some(p) if !matches!(root_var(e), Some(r) if bound.contains(&r)) => out.add(p),
            _ => collect_paths(t, bound, out),
        },
        Expr::Index(t, i, _) => {
            collect_paths(t, bound, out);
            collect_paths(i, bound, out);
        }
        Expr::Lit(_) => {}
        Expr::Unary(_, a, _) => collect_paths(a, bound, out),
        Expr::Binary(_, a, b, _) | Expr::Logic(_, a, b) => {
            collect_paths(a, bound, out);
            collect_paths(b, bound, out);
        }
        Expr::Cond(c, a, b) => {
            collect_paths(c, bound, out);
            collect_paths(a, bound, out);
            collect_paths(b, bound, out);
        }
        Expr::Call(t, _, args, _) => {
            collect_paths(t, bound, out);
            for a in args {
                match a {
                    Arg::Value(v) => collect_paths(v, bound, out),
                    Arg::Lambda(Lambda { item, index, body }) => {
                        bound.push(item.clone());
                        bound.extend(index.clone());
                        collect_paths(body, bound, out);
                        bound.truncate(bound.len() - 1 - usize::from(index.is_some()));
                    }
                }
            }
        }
        Expr::Filter(t, f, _) => {
            collect_paths(t, bound, out);
            if let Filter::Named(_, args) = f {
                args.iter().for_each(|a| collect_paths(a, bound, out));
            }
        }
    }
}

fn root_var(e: &Expr) -> Option<String> {
    match e {
        Expr::Var(n, _, _) => Some(n.clone()),
        Expr::Member(t, _, _) | Expr::Index(t, _, _) => root_var(t),
        _ => None,
    }
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "text",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Writes into a byte buffer and fails once it would pass `cap` bytes, so JSON text is bounded while
/// it is built.
struct Capped<'s> {
    out: &'s mut Vec<u8>,
    cap: usize,
}

impl io::Write for Capped<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.out.len() + buf.len() > self.cap {
            return Err(io::Error::other("over the cap"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a, 'b> Ctx<'a, 'b> {
    pub(super) fn new(
        root: &'a Value,
        budget: &'b mut Budget<'a>,
        roots: &'b mut [Option<Option<&'a Value>>],
    ) -> Self {
        Ctx {
            root,
            roots,
            scope: Vec::new(),
            budget,
            missing: Vec::new(),
            seen: None,
            at: Pos { line: 1, col: 1 },
        }
    }

    pub(super) fn into_missing(self) -> Vec<String> {
        self.missing
    }

    #[inline(always)]
    pub(super) fn burn(&mut self, pos: Pos) -> Result<(), ExprError> {
        self.budget.spend(1, pos)
    }

    #[inline(always)]
    pub(super) fn burn_bytes(&mut self, bytes: usize, pos: Pos) -> Result<(), ExprError> {
        self.budget.spend_bytes(bytes, pos)
    }

    pub(super) fn too_large(&self, pos: Pos) -> ExprError {
        ExprError::at(
            pos,
            format!(
                "result larger than the limit of {} bytes: render less (filter the list first, or cut long text with truncate(n))",
                self.budget.max_output()
            ),
        )
    }

    #[inline(always)]
    pub(super) fn check_size(&self, len: usize, pos: Pos) -> Result<(), ExprError> {
        if len > self.budget.max_output() {
            return Err(self.too_large(pos));
        }
        Ok(())
    }

    /// Charges what copying `v` costs (one unit per value and per key, one per [`BYTES_PER_UNIT`]
    /// bytes of text and keys), stopping as soon as the budget cannot pay, before anything is copied.
    fn charge_copy(&mut self, v: &Value, pos: Pos) -> Result<(), ExprError> {
        match v {
            Value::Array(_) | Value::Object(_) => {}
            Value::String(s) => {
                return self
                    .budget
                    .spend(1 + (s.len() / BYTES_PER_UNIT) as u64, pos)
            }
            _ => return self.burn(pos),
        }
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            self.burn(pos)?;
            match v {
                Value::String(s) => self.burn_bytes(s.len(), pos)?,
                Value::Array(items) => stack.extend(items),
                Value::Object(m) => {
                    for (k, v) in m {
                        self.budget
                            .spend(1 + (k.len() / BYTES_PER_UNIT) as u64, pos)?;
                        stack.push(v);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// An owned value: borrowed and shared values are copied and the copy is charged.
    pub(super) fn own(&mut self, v: Val<'a>, pos: Pos) -> Result<Value, ExprError> {
        match v {
            Val::Own(v) | Val::Marked(v, _) => Ok(v),
            Val::Ref(r) | Val::Lit(r) => {
                self.charge_copy(r, pos)?;
                Ok(r.clone())
            }
            Val::Shared(rc) => match Rc::try_unwrap(rc) {
                Ok(v) => Ok(v),
                Err(rc) => {
                    self.charge_copy(&rc, pos)?;
                    Ok((*rc).clone())
                }
            },
        }
    }

    /// Appends `s` to `out`, failing when `out` would pass `limit` bytes.
    fn push(&mut self, out: &mut String, s: &str, limit: usize, pos: Pos) -> Result<(), ExprError> {
        if out.len() + s.len() > limit {
            return Err(self.too_large(pos));
        }
        self.burn_bytes(s.len(), pos)?;
        out.push_str(s);
        Ok(())
    }

    /// Appends the text of `v` (as [`super::to_text`]) to `out`, charging each value and byte and
    /// failing as soon as `out` would pass `limit` bytes.
    pub(super) fn write_text(
        &mut self,
        v: &Value,
        out: &mut String,
        limit: usize,
        pos: Pos,
    ) -> Result<(), ExprError> {
        self.burn(pos)?;
        match v {
            Value::Null => Ok(()),
            Value::String(s) => self.push(out, s, limit, pos),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.push(out, ", ", limit, pos)?;
                    }
                    self.write_text(item, out, limit, pos)?;
                }
                Ok(())
            }
            Value::Object(_) => {
                let json = self.json(v, limit.saturating_sub(out.len()), pos)?;
                out.push_str(&json);
                Ok(())
            }
            Value::Bool(b) => self.push(out, if *b { "true" } else { "false" }, limit, pos),
            Value::Number(n) => {
                // Printed in place (as [`super::to_text`] prints it), not through a String of its own.
                let start = out.len();
                // Writing to a String cannot fail.
                let _ = match n.as_f64() {
                    Some(f) if n.is_f64() => write!(out, "{f}"),
                    _ => write!(out, "{n}"),
                };
                if out.len() > limit {
                    out.truncate(start);
                    return Err(self.too_large(pos));
                }
                self.burn_bytes(out.len() - start, pos)
            }
        }
    }

    /// Appends the text of `v` to `out` as [`Ctx::write_text`] does, adding the byte ranges of `out`
    /// that are markup to `spans`.
    pub(super) fn write_marked(
        &mut self,
        v: &Val<'a>,
        out: &mut String,
        spans: &mut Vec<Range<usize>>,
        limit: usize,
        pos: Pos,
    ) -> Result<(), ExprError> {
        match v {
            Val::Lit(lit) => {
                let start = out.len();
                self.write_text(lit, out, limit, pos)?;
                add_span(spans, start..out.len());
                Ok(())
            }
            Val::Marked(value, mark) => self.write_with_mark(value, mark, out, spans, limit, pos),
            other => self.write_text(other, out, limit, pos),
        }
    }

    fn write_with_mark(
        &mut self,
        v: &Value,
        mark: &Mark,
        out: &mut String,
        spans: &mut Vec<Range<usize>>,
        limit: usize,
        pos: Pos,
    ) -> Result<(), ExprError> {
        match (v, mark) {
            (Value::String(s), Mark::Text(ranges)) => {
                self.burn(pos)?;
                let start = out.len();
                self.push(out, s, limit, pos)?;
                for r in ranges {
                    add_span(spans, start + r.start..start + r.end);
                }
                Ok(())
            }
            (Value::Array(items), Mark::Items(marks)) => {
                self.burn(pos)?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.push(out, ", ", limit, pos)?;
                    }
                    match marks.get(i) {
                        Some(m) => self.write_with_mark(item, m, out, spans, limit, pos)?,
                        None => self.write_text(item, out, limit, pos)?,
                    }
                }
                Ok(())
            }
            (v, _) => self.write_text(v, out, limit, pos),
        }
    }

    /// `v` as JSON text of at most `room` bytes, built under the budget: each value is charged
    /// before anything is written, the bytes as they are.
    pub(super) fn json(&mut self, v: &Value, room: usize, pos: Pos) -> Result<String, ExprError> {
        self.charge_copy(v, pos)?;
        let affordable = usize::try_from(self.budget.left())
            .unwrap_or(usize::MAX)
            .saturating_add(1)
            .saturating_mul(BYTES_PER_UNIT_SLOW);
        let mut bytes = Vec::new();
        let cap = room.min(affordable);
        if serde_json::to_writer(
            Capped {
                out: &mut bytes,
                cap,
            },
            v,
        )
        .is_err()
        {
            return Err(if cap == room {
                self.too_large(pos)
            } else {
                // Spending more than is left fails with the budget's message.
                self.budget
                    .spend(u64::MAX, pos)
                    .err()
                    .unwrap_or_else(|| self.too_large(pos))
            });
        }
        self.budget.spend_slow_bytes(bytes.len(), pos)?;
        String::from_utf8(bytes)
            .map_err(|_| ExprError::at(pos, "the value could not be written as JSON".into()))
    }

    /// The text of `v`, capped at the output limit.
    pub(super) fn text(&mut self, v: &Value, pos: Pos) -> Result<String, ExprError> {
        let mut out = String::new();
        let limit = self.budget.max_output();
        self.write_text(v, &mut out, limit, pos)?;
        Ok(out)
    }

    /// A number for arithmetic and ordering: numbers, booleans, `null` (0) and numeric text.
    fn as_number(&mut self, v: &Value, pos: Pos) -> Result<Option<f64>, ExprError> {
        Ok(match v {
            Value::Number(n) => n.as_f64(),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            Value::Null => Some(0.0),
            Value::String(s) => {
                self.burn_bytes(s.len(), pos)?;
                s.trim().parse().ok()
            }
            _ => None,
        })
    }

    /// Strict equality: numbers by value at the top level (`1 == 1.0`), anything else as JSON values
    /// are equal; each value compared is charged.
    pub(super) fn strict_eq(&mut self, a: &Value, b: &Value, pos: Pos) -> Result<bool, ExprError> {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => Ok(x.as_f64() == y.as_f64()),
            _ => self.json_eq(a, b, pos),
        }
    }

    /// `a == b` for JSON values, paid for value by value.
    fn json_eq(&mut self, a: &Value, b: &Value, pos: Pos) -> Result<bool, ExprError> {
        self.burn(pos)?;
        Ok(match (a, b) {
            (Value::String(x), Value::String(y)) => {
                self.burn_bytes(x.len().min(y.len()), pos)?;
                x == y
            }
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    return Ok(false);
                }
                for (x, y) in x.iter().zip(y) {
                    if !self.json_eq(x, y, pos)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Object(x), Value::Object(y)) => self.map_eq(x, y, pos)?,
            _ => a == b,
        })
    }

    fn map_eq(
        &mut self,
        x: &Map<String, Value>,
        y: &Map<String, Value>,
        pos: Pos,
    ) -> Result<bool, ExprError> {
        if x.len() != y.len() {
            return Ok(false);
        }
        for (k, v) in x {
            self.burn_bytes(k.len(), pos)?;
            match y.get(k) {
                Some(w) if self.json_eq(v, w, pos)? => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    fn lookup(&mut self, name: &str, slot: u32, pos: Pos) -> Result<Option<Val<'a>>, ExprError> {
        if let Some((_, v)) = self.scope.iter().rev().find(|(n, _)| *n == name) {
            return Ok(Some(match v {
                Val::Ref(r) => Val::Ref(r),
                Val::Lit(r) => Val::Lit(r),
                Val::Shared(rc) => Val::Shared(rc.clone()),
                Val::Own(v) | Val::Marked(v, _) => {
                    let v = v.clone();
                    self.charge_copy(&v, pos)?;
                    Val::Own(v)
                }
            }));
        }
        let root = self.root;
        let found = match self.roots.get_mut(slot as usize) {
            Some(Some(known)) => *known,
            Some(unknown) => *unknown.insert(root.get(name)),
            None => root.get(name),
        };
        Ok(found.map(Val::Ref))
    }

    fn missing(&mut self, e: &Expr) {
        let Some(p) = path_text(e) else {
            return;
        };
        // A placeholder misses a few paths at most: a look through the list is cheaper than
        // hashing. Past [`FEW_MISSING`] a set takes over, so many distinct paths stay linear.
        let new = match &mut self.seen {
            Some(seen) => seen.insert(p.clone()),
            None if self.missing.len() < FEW_MISSING => !self.missing.contains(&p),
            None => {
                let mut seen: HashSet<String> = self.missing.iter().cloned().collect();
                let new = seen.insert(p.clone());
                self.seen = Some(seen);
                new
            }
        };
        if new {
            self.missing.push(p);
        }
    }

    /// A member or element that was not found is reported, unless its parent was already missing
    /// (reported itself) or `null`.
    fn found_or_missing(&mut self, v: Option<Val<'a>>, parent_null: bool, e: &Expr) -> Val<'a> {
        match v {
            Some(v) => v,
            None => {
                if !parent_null {
                    self.missing(e);
                }
                Val::Own(Value::Null)
            }
        }
    }

    /// A copy of `v`, a part of a shared value (which cannot be moved out of), charged as a copy.
    fn copied(&mut self, v: Option<&Value>, pos: Pos) -> Result<Option<Val<'a>>, ExprError> {
        let Some(v) = v else { return Ok(None) };
        self.charge_copy(v, pos)?;
        Ok(Some(Val::Own(v.clone())))
    }

    /// `t[key]` of an object, without copying the rest of it.
    fn field(&mut self, t: Val<'a>, key: &str, pos: Pos) -> Result<Option<Val<'a>>, ExprError> {
        Ok(match t {
            Val::Ref(Value::Object(m)) => m.get(key).map(Val::Ref),
            Val::Own(Value::Object(mut m)) | Val::Marked(Value::Object(mut m), _) => {
                m.remove(key).map(Val::Own)
            }
            Val::Shared(rc) => self.copied(rc.as_object().and_then(|m| m.get(key)), pos)?,
            _ => None,
        })
    }

    /// `t[i]` of a list, without copying the rest of it.
    fn element(&mut self, t: Val<'a>, i: usize, pos: Pos) -> Result<Option<Val<'a>>, ExprError> {
        Ok(match t {
            Val::Ref(Value::Array(a)) => a.get(i).map(Val::Ref),
            Val::Own(Value::Array(mut a)) => a.get_mut(i).map(|v| Val::Own(v.take())),
            Val::Marked(Value::Array(mut a), Mark::Items(mut marks)) if i < marks.len() => {
                let v = a.get_mut(i).map(Value::take);
                v.map(|v| Val::Marked(v, std::mem::replace(&mut marks[i], Mark::Items(Vec::new()))))
            }
            Val::Marked(Value::Array(mut a), _) => a.get_mut(i).map(|v| Val::Own(v.take())),
            Val::Shared(rc) => self.copied(rc.as_array().and_then(|a| a.get(i)), pos)?,
            _ => None,
        })
    }

    #[inline(always)]
    fn pos_of(e: &Expr) -> Pos {
        match e {
            Expr::Var(_, p, _)
            | Expr::Member(_, _, p)
            | Expr::Index(_, _, p)
            | Expr::Unary(_, _, p)
            | Expr::Binary(_, _, _, p)
            | Expr::Call(_, _, _, p)
            | Expr::Filter(_, _, p) => *p,
            Expr::Logic(_, a, _) | Expr::Cond(a, _, _) => Self::pos_of(a),
            Expr::Lit(_) => Pos::default(),
        }
    }

    pub(super) fn eval(&mut self, e: &'a Expr) -> Result<Val<'a>, ExprError> {
        let here = Self::pos_of(e);
        if here.line > 0 {
            self.at = here;
        }
        self.burn(self.at)?;
        match e {
            Expr::Lit(v) => Ok(Val::Lit(v)),
            Expr::Var(name, pos, slot) => match self.lookup(name, *slot, *pos)? {
                Some(v) => Ok(v),
                None => {
                    self.missing(e);
                    Ok(Val::Own(Value::Null))
                }
            },
            Expr::Member(target, name, pos) => {
                let t = self.eval(target)?;
                let parent_null = t.is_null();
                let v = match (&*t, name.as_str()) {
                    (Value::Object(_), _) => self.field(t, name, *pos)?,
                    (Value::Array(a), "length") => Some(Val::Own(Value::from(a.len()))),
                    (Value::String(s), "length") => {
                        self.burn_bytes(s.len(), *pos)?;
                        Some(Val::Own(Value::from(s.chars().count())))
                    }
                    _ => None,
                };
                Ok(self.found_or_missing(v, parent_null, e))
            }
            Expr::Index(target, index, pos) => {
                let t = self.eval(target)?;
                let i = self.eval(index)?;
                let parent_null = t.is_null();
                let v = match (&*t, &*i) {
                    (Value::Array(_), Value::Number(n)) => {
                        match n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0) {
                            Some(f) => self.element(t, f as usize, *pos)?,
                            None => None,
                        }
                    }
                    (Value::Object(_), Value::String(k)) => {
                        let k = k.clone();
                        self.field(t, &k, *pos)?
                    }
                    (Value::String(s), Value::Number(n)) => match n.as_f64() {
                        Some(f) => {
                            let at = f as usize;
                            self.burn_bytes(at.min(s.len()), *pos)?;
                            s.chars()
                                .nth(at)
                                .map(|c| Val::Own(Value::String(c.to_string())))
                        }
                        None => None,
                    },
                    (Value::Null, _) => None,
                    (Value::Array(_), other) | (Value::String(_), other) => {
                        return Err(ExprError::at(
                            *pos,
                            format!(
                                "a list or text index must be a whole number, got {}",
                                type_name(other)
                            ),
                        ))
                    }
                    _ => None,
                };
                Ok(self.found_or_missing(v, parent_null, e))
            }
            Expr::Unary(op, inner, pos) => {
                let v = self.eval(inner)?;
                match *op {
                    "!" => Ok(Val::Own(Value::Bool(!truthy(&v)))),
                    _ => self
                        .as_number(&v, *pos)?
                        .map(|n| Val::Own(num(-n)))
                        .ok_or_else(|| {
                            ExprError::at(*pos, format!("cannot negate a {}", type_name(&v)))
                        }),
                }
            }
            Expr::Logic(op, a, b) => {
                let left = self.eval(a)?;
                let take_left = match *op {
                    "&&" => !truthy(&left),
                    "??" => !left.is_null(),
                    _ => truthy(&left),
                };
                if take_left {
                    Ok(left)
                } else {
                    self.eval(b)
                }
            }
            Expr::Cond(c, a, b) => {
                let cond = self.eval(c)?;
                if truthy(&cond) {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            Expr::Binary(op, a, b, pos) => {
                let l = self.eval(a)?;
                let r = self.eval(b)?;
                if *op == "+" && (l.is_string() || r.is_string()) {
                    let limit = self.budget.max_output();
                    // Text this evaluation built (the left side of `a + b + c`) grows in place;
                    // anything else is copied into new text first.
                    let (mut s, mut spans) = match l {
                        Val::Own(Value::String(s)) => (s, Vec::new()),
                        Val::Marked(Value::String(s), Mark::Text(spans)) => (s, spans),
                        other => {
                            let mut s = String::new();
                            let mut spans = Vec::new();
                            self.write_marked(&other, &mut s, &mut spans, limit, *pos)?;
                            (s, spans)
                        }
                    };
                    self.write_marked(&r, &mut s, &mut spans, limit, *pos)?;
                    return Ok(built_text(s, spans));
                }
                self.binary(op, &l, &r, *pos).map(Val::Own)
            }
            Expr::Call(target, method, args, pos) => {
                let t = self.eval(target)?;
                self.call(t, method, args, *pos)
            }
            Expr::Filter(target, filter, pos) => {
                let v = self.eval(target)?;
                let args = match filter {
                    Filter::Named(_, args) => args
                        .iter()
                        .map(|a| self.eval(a))
                        .collect::<Result<Vec<_>, _>>()?,
                    Filter::Literal(_) | Filter::Date(..) => Vec::new(),
                };
                let out = self.apply_filter(filter, v, args, *pos)?;
                if let Value::String(s) = &*out {
                    self.check_size(s.len(), *pos)?;
                }
                Ok(out)
            }
        }
    }

    fn binary(&mut self, op: &str, l: &Value, r: &Value, pos: Pos) -> Result<Value, ExprError> {
        match op {
            "==" => return self.strict_eq(l, r, pos).map(Value::Bool),
            "!=" => return self.strict_eq(l, r, pos).map(|eq| Value::Bool(!eq)),
            "<" | "<=" | ">" | ">=" => {
                let ord = match (l, r) {
                    (Value::String(a), Value::String(b)) => {
                        self.burn_bytes(a.len().min(b.len()), pos)?;
                        Some(a.cmp(b))
                    }
                    _ => match (self.as_number(l, pos)?, self.as_number(r, pos)?) {
                        (Some(a), Some(b)) => a.partial_cmp(&b),
                        _ => {
                            return Err(ExprError::at(
                                pos,
                                format!(
                                    "cannot compare a {} with a {}",
                                    type_name(l),
                                    type_name(r)
                                ),
                            ))
                        }
                    },
                };
                let Some(ord) = ord else {
                    return Ok(Value::Bool(false));
                };
                return Ok(Value::Bool(match op {
                    "<" => ord.is_lt(),
                    "<=" => ord.is_le(),
                    ">" => ord.is_gt(),
                    _ => ord.is_ge(),
                }));
            }
            _ => {}
        }
        let (Some(a), Some(b)) = (self.as_number(l, pos)?, self.as_number(r, pos)?) else {
            return Err(ExprError::at(
                pos,
                format!(
                    "'{op}' needs numbers, got a {} and a {}",
                    type_name(l),
                    type_name(r)
                ),
            ));
        };
        let n = match op {
            "+" => a + b,
            "-" => a - b,
            "*" => a * b,
            "/" | "%" if b == 0.0 => return Err(ExprError::at(pos, "division by zero".into())),
            "/" => a / b,
            _ => a % b,
        };
        if !n.is_finite() {
            return Err(ExprError::at(
                pos,
                "the result is too large to be a number".into(),
            ));
        }
        Ok(num(n))
    }

    fn lambda(&self, args: &'a [Arg], method: &str, pos: Pos) -> Result<&'a Lambda, ExprError> {
        match args {
            [Arg::Lambda(l)] => Ok(l),
            _ => Err(ExprError::at(
                pos,
                format!(".{method} takes one function, like .{method}(x => x.name) or .{method}((x, i) => i + 1)"),
            )),
        }
    }

    fn value_args(
        &mut self,
        args: &'a [Arg],
        method: &str,
        max: usize,
        pos: Pos,
    ) -> Result<Vec<Val<'a>>, ExprError> {
        if args.len() > max {
            return Err(ExprError::at(
                pos,
                format!(".{method} takes at most {max} argument(s)"),
            ));
        }
        args.iter()
            .map(|a| match a {
                Arg::Value(e) => self.eval(e),
                Arg::Lambda(..) => Err(ExprError::at(
                    pos,
                    format!(".{method} does not take a function"),
                )),
            })
            .collect()
    }

    /// Runs the function `f` on each item of the list `items` (and its index); `filter` decides from
    /// the item's result what goes into the output: the result (`map`, keeping which of its text is
    /// markup) or the item itself (`filter`).
    fn each(
        &mut self,
        items: Val<'a>,
        f: &'a Lambda,
        pos: Pos,
        filter: bool,
    ) -> Result<Val<'a>, ExprError> {
        let len = items.as_array().map_or(0, Vec::len);
        self.check_size(len, pos)?;
        let mut out = Vec::new();
        let mut marks = Vec::new();
        let mut marked = false;
        // Items of a borrowed list are lent to the lambda; items of a list the evaluation built
        // are moved in and out, so neither is copied to bind the parameter.
        let bound: Box<dyn Iterator<Item = Val<'a>>> = match items {
            Val::Ref(Value::Array(a)) => Box::new(a.iter().map(Val::Ref)),
            other => match self.own(other, pos)? {
                Value::Array(a) => Box::new(a.into_iter().map(|v| Val::Shared(Rc::new(v)))),
                _ => Box::new(std::iter::empty()),
            },
        };
        for (i, item) in bound.enumerate() {
            self.burn(pos)?;
            if let Some(index) = &f.index {
                self.scope.push((index, Val::Own(Value::from(i))));
            }
            self.scope.push((&f.item, item));
            let r = self.eval(&f.body);
            let item = self.scope.pop().map(|(_, v)| v);
            if f.index.is_some() {
                self.scope.pop();
            }
            let r = r?;
            if filter {
                let keep = truthy(&r);
                drop(r);
                if let (true, Some(item)) = (keep, item) {
                    out.push(self.own(item, pos)?);
                }
            } else {
                drop(item);
                let mark = match &r {
                    Val::Marked(_, m) => m.clone(),
                    Val::Lit(Value::String(s)) => Mark::all(s.len()),
                    _ => Mark::Text(Vec::new()),
                };
                marked |= mark != Mark::Text(Vec::new());
                marks.push(mark);
                out.push(self.own(r, pos)?);
            }
        }
        Ok(if marked {
            Val::Marked(Value::Array(out), Mark::Items(marks))
        } else {
            Val::Own(Value::Array(out))
        })
    }

    /// Joins the text of each item of the list `items` with `sep`, capped at the output limit; the
    /// markup of the items and of the separator stays markup.
    pub(super) fn join(
        &mut self,
        items: &Val<'a>,
        sep: &Val<'a>,
        pos: Pos,
    ) -> Result<Val<'a>, ExprError> {
        let limit = self.budget.max_output();
        let mut sep_text = String::new();
        let mut sep_spans = Vec::new();
        self.write_marked(sep, &mut sep_text, &mut sep_spans, limit, pos)?;
        let (list, marks) = match items {
            Val::Marked(Value::Array(a), Mark::Items(m)) => (a.as_slice(), Some(m)),
            other => (other.as_array().map_or(&[][..], Vec::as_slice), None),
        };
        let mut s = String::new();
        let mut spans = Vec::new();
        for (i, item) in list.iter().enumerate() {
            if i > 0 {
                let start = s.len();
                self.push(&mut s, &sep_text, limit, pos)?;
                for r in &sep_spans {
                    add_span(&mut spans, start + r.start..start + r.end);
                }
            }
            match marks.and_then(|m| m.get(i)) {
                Some(m) => self.write_with_mark(item, m, &mut s, &mut spans, limit, pos)?,
                None => self.write_text(item, &mut s, limit, pos)?,
            }
        }
        Ok(built_text(s, spans))
    }

    fn call(
        &mut self,
        target: Val<'a>,
        method: &str,
        args: &'a [Arg],
        pos: Pos,
    ) -> Result<Val<'a>, ExprError> {
        match (method, &*target) {
            ("map" | "filter", Value::Array(_)) => {
                let f = self.lambda(args, method, pos)?;
                self.each(target, f, pos, method == "filter")
            }
            ("map" | "filter" | "join", Value::Null) => Ok(Val::Own(Value::Null)),
            ("join", Value::Array(_)) => {
                let sep = self
                    .value_args(args, method, 1, pos)?
                    .pop()
                    .unwrap_or_else(|| Val::Own(Value::String(",".into())));
                self.join(&target, &sep, pos)
            }
            ("includes", Value::Array(items)) => {
                let v = self.value_args(args, method, 1, pos)?;
                let mut found = false;
                if let Some(x) = v.first() {
                    for i in items {
                        self.burn(pos)?;
                        if self.strict_eq(i, x, pos)? {
                            found = true;
                            break;
                        }
                    }
                }
                Ok(Val::Own(Value::Bool(found)))
            }
            ("includes", Value::String(s)) => {
                let v = self.value_args(args, method, 1, pos)?;
                let found = match v.first() {
                    Some(x) => {
                        let needle = self.text(x, pos)?;
                        self.burn_bytes(s.len() + needle.len(), pos)?;
                        s.contains(&needle)
                    }
                    None => false,
                };
                Ok(Val::Own(Value::Bool(found)))
            }
            ("toUpperCase" | "toLowerCase" | "trim", Value::String(s)) => {
                self.value_args(args, method, 0, pos)?;
                self.budget.spend_slow_bytes(s.len(), pos)?;
                let out = match method {
                    "toUpperCase" => s.to_uppercase(),
                    "toLowerCase" => s.to_lowercase(),
                    _ => s.trim().to_string(),
                };
                self.check_size(out.len(), pos)?;
                Ok(Val::Own(Value::String(out)))
            }
            (
                m @ ("map" | "filter" | "join" | "includes" | "toUpperCase" | "toLowerCase"
                | "trim"),
                other,
            ) => Err(ExprError::at(
                pos,
                format!(".{m}() cannot be used on a {}", type_name(other)),
            )),
            (m, _) => Err(ExprError::at(
                pos,
                format!(
                    "unknown method .{m}(){}; available: map, filter, join, includes, toUpperCase, toLowerCase, trim, and the filters after | (docs/templates.md)",
                    method_hint(m)
                ),
            )),
        }
    }
}

/// What to write instead of a JavaScript method the language does not have.
fn method_hint(method: &str) -> &'static str {
    match method {
        "toFixed" => " (for decimals write x|number(2))",
        "toLocaleString" => " (for thousands separators write x|number, for money x|currency)",
        "slice" | "substring" | "substr" => " (to shorten text write x|truncate(n))",
        "round" | "floor" | "ceil" => " (to round write x|number(0))",
        "forEach" => " (write list.map(x => …).join(''))",
        "some" | "find" | "every" => {
            " (write list.filter(x => …).length > 0, or list.filter(x => …)[0])"
        }
        "toString" => " (values print as text already; to join text use +)",
        _ => "",
    }
}
