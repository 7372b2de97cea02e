//! The evaluator: walks the tree over JSON values with a fuel budget.

use serde_json::Value;

use super::parser::{Arg, Expr, Filter};
use super::{filters, num, to_text, truthy, Evaluated, ExprError, Limits, Pos};

pub(super) struct Ctx<'v> {
    root: &'v Value,
    scope: Vec<(String, Value)>,
    fuel: u64,
    pub(super) max_output: usize,
    missing: Vec<String>,
}

pub(super) fn run(expr: &Expr, vars: &Value, limits: Limits) -> Result<Evaluated, ExprError> {
    let mut ctx = Ctx {
        root: vars,
        scope: Vec::new(),
        fuel: limits.fuel,
        max_output: limits.max_output,
        missing: Vec::new(),
    };
    let value = ctx.eval(expr)?;
    let raw = matches!(expr, Expr::Filter(_, Filter::Named(name, _), _) if name == "raw");
    Ok(Evaluated {
        value,
        missing: ctx.missing,
        raw,
    })
}

/// Renders a path expression as text (`trip.destination.city`, `items[0]`), for messages.
fn path_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Var(name, _) => Some(name.clone()),
        Expr::Member(t, name, _) => path_text(t).map(|p| format!("{p}.{name}")),
        Expr::Index(t, i, _) => {
            let base = path_text(t)?;
            match &**i {
                Expr::Lit(Value::Number(n)) => Some(format!("{base}[{n}]")),
                Expr::Lit(Value::String(s)) => Some(format!("{base}['{s}']")),
                _ => Some(format!("{base}[…]")),
            }
        }
        _ => None,
    }
}

/// Collects the root variable paths an expression reads, skipping lambda parameters in `bound`.
pub(super) fn collect_paths(e: &Expr, bound: &mut Vec<String>, out: &mut Vec<String>) {
    match e {
        Expr::Var(name, _) => {
            if !bound.contains(name) && !out.contains(name) {
                out.push(name.clone());
            }
        }
        Expr::Member(t, _, _) => match path_text(e) {
            Some(p) if !matches!(root_var(e), Some(r) if bound.contains(&r)) => {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
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
                    Arg::Lambda(p, body) => {
                        bound.push(p.clone());
                        collect_paths(body, bound, out);
                        bound.pop();
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
        Expr::Var(n, _) => Some(n.clone()),
        Expr::Member(t, _, _) | Expr::Index(t, _, _) => root_var(t),
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "text",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// A number for arithmetic and ordering: numbers, booleans, `null` (0) and numeric text.
fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Null => Some(0.0),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

impl Ctx<'_> {
    fn burn(&mut self, pos: Pos) -> Result<(), ExprError> {
        if self.fuel == 0 {
            return Err(ExprError::at(pos, "evaluation budget exhausted: the expression does too much work (large lists or loops); simplify it".into()));
        }
        self.fuel -= 1;
        Ok(())
    }

    pub(super) fn check_size(&self, len: usize, pos: Pos) -> Result<(), ExprError> {
        if len > self.max_output {
            return Err(ExprError::at(
                pos,
                format!("result larger than the limit of {} bytes", self.max_output),
            ));
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<Value> {
        if let Some((_, v)) = self.scope.iter().rev().find(|(n, _)| n == name) {
            return Some(v.clone());
        }
        self.root.get(name).cloned()
    }

    fn missing(&mut self, e: &Expr) {
        if let Some(p) = path_text(e) {
            if !self.missing.contains(&p) {
                self.missing.push(p);
            }
        }
    }

    /// A member or element that was not found is reported, unless its parent was already missing
    /// (reported itself) or `null`.
    fn found_or_missing(
        &mut self,
        v: Option<Value>,
        parent: &Value,
        e: &Expr,
    ) -> Result<Value, ExprError> {
        match v {
            Some(v) => Ok(v),
            None => {
                if !parent.is_null() {
                    self.missing(e);
                }
                Ok(Value::Null)
            }
        }
    }

    fn pos_of(e: &Expr) -> Pos {
        match e {
            Expr::Var(_, p)
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

    pub(super) fn eval(&mut self, e: &Expr) -> Result<Value, ExprError> {
        self.burn(Self::pos_of(e))?;
        match e {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::Var(name, _) => match self.lookup(name) {
                Some(v) => Ok(v),
                None => {
                    self.missing(e);
                    Ok(Value::Null)
                }
            },
            Expr::Member(target, name, _) => {
                let t = self.eval(target)?;
                let v = match (&t, name.as_str()) {
                    (Value::Object(m), _) => m.get(name).cloned(),
                    (Value::Array(a), "length") => Some(Value::from(a.len())),
                    (Value::String(s), "length") => Some(Value::from(s.chars().count())),
                    _ => None,
                };
                self.found_or_missing(v, &t, e)
            }
            Expr::Index(target, index, pos) => {
                let t = self.eval(target)?;
                let i = self.eval(index)?;
                let v = match (&t, &i) {
                    (Value::Array(a), Value::Number(n)) => n
                        .as_f64()
                        .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                        .and_then(|f| a.get(f as usize))
                        .cloned(),
                    (Value::Object(m), Value::String(k)) => m.get(k).cloned(),
                    (Value::String(s), Value::Number(n)) => n
                        .as_f64()
                        .and_then(|f| s.chars().nth(f as usize))
                        .map(|c| Value::String(c.to_string())),
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
                self.found_or_missing(v, &t, e)
            }
            Expr::Unary(op, inner, pos) => {
                let v = self.eval(inner)?;
                match *op {
                    "!" => Ok(Value::Bool(!truthy(&v))),
                    _ => as_number(&v).map(|n| num(-n)).ok_or_else(|| {
                        ExprError::at(*pos, format!("cannot negate a {}", type_name(&v)))
                    }),
                }
            }
            Expr::Logic(op, a, b) => {
                let left = self.eval(a)?;
                let take_left = if *op == "&&" {
                    !truthy(&left)
                } else {
                    truthy(&left)
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
                self.binary(op, &l, &r, *pos)
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
                    Filter::Literal(_) => Vec::new(),
                };
                let out = filters::apply(filter, v, &args, self.root, *pos)?;
                if let Value::String(s) = &out {
                    self.check_size(s.len(), *pos)?;
                }
                Ok(out)
            }
        }
    }

    fn binary(&mut self, op: &str, l: &Value, r: &Value, pos: Pos) -> Result<Value, ExprError> {
        match op {
            "==" => return Ok(Value::Bool(strict_eq(l, r))),
            "!=" => return Ok(Value::Bool(!strict_eq(l, r))),
            "+" if l.is_string() || r.is_string() => {
                let s = to_text(l) + &to_text(r);
                self.check_size(s.len(), pos)?;
                return Ok(Value::String(s));
            }
            "<" | "<=" | ">" | ">=" => {
                let ord = match (l, r) {
                    (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
                    _ => match (as_number(l), as_number(r)) {
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
        let (Some(a), Some(b)) = (as_number(l), as_number(r)) else {
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

    fn lambda<'a>(
        &self,
        args: &'a [Arg],
        method: &str,
        pos: Pos,
    ) -> Result<(&'a str, &'a Expr), ExprError> {
        match args {
            [Arg::Lambda(p, body)] => Ok((p, body)),
            _ => Err(ExprError::at(
                pos,
                format!(".{method} takes one function, like .{method}(x => x.name)"),
            )),
        }
    }

    fn value_args(
        &mut self,
        args: &[Arg],
        method: &str,
        max: usize,
        pos: Pos,
    ) -> Result<Vec<Value>, ExprError> {
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

    fn each(
        &mut self,
        items: Vec<Value>,
        param: &str,
        body: &Expr,
        pos: Pos,
        mut f: impl FnMut(Value, Value) -> Option<Value>,
    ) -> Result<Vec<Value>, ExprError> {
        self.check_size(items.len(), pos)?;
        let mut out = Vec::new();
        for item in items {
            self.burn(pos)?;
            self.scope.push((param.to_string(), item.clone()));
            let r = self.eval(body);
            self.scope.pop();
            if let Some(v) = f(item, r?) {
                out.push(v);
            }
        }
        Ok(out)
    }

    fn call(
        &mut self,
        target: Value,
        method: &str,
        args: &[Arg],
        pos: Pos,
    ) -> Result<Value, ExprError> {
        match (method, target) {
            ("map", Value::Array(items)) => {
                let (p, body) = self.lambda(args, method, pos)?;
                Ok(Value::Array(self.each(items, p, body, pos, |_, r| Some(r))?))
            }
            ("filter", Value::Array(items)) => {
                let (p, body) = self.lambda(args, method, pos)?;
                Ok(Value::Array(self.each(items, p, body, pos, |item, r| truthy(&r).then_some(item))?))
            }
            ("map" | "filter" | "join", Value::Null) => Ok(Value::Null),
            ("join", Value::Array(items)) => {
                let sep = self.value_args(args, method, 1, pos)?.first().map(to_text).unwrap_or_else(|| ",".into());
                let s = items.iter().map(to_text).collect::<Vec<_>>().join(&sep);
                self.check_size(s.len(), pos)?;
                Ok(Value::String(s))
            }
            ("includes", Value::Array(items)) => {
                let v = self.value_args(args, method, 1, pos)?;
                Ok(Value::Bool(v.first().is_some_and(|x| items.iter().any(|i| strict_eq(i, x)))))
            }
            ("includes", Value::String(s)) => {
                let v = self.value_args(args, method, 1, pos)?;
                Ok(Value::Bool(v.first().is_some_and(|x| s.contains(&to_text(x)))))
            }
            ("toUpperCase", Value::String(s)) => self.value_args(args, method, 0, pos).map(|_| Value::String(s.to_uppercase())),
            ("toLowerCase", Value::String(s)) => self.value_args(args, method, 0, pos).map(|_| Value::String(s.to_lowercase())),
            ("trim", Value::String(s)) => self.value_args(args, method, 0, pos).map(|_| Value::String(s.trim().to_string())),
            (m @ ("map" | "filter" | "join" | "includes" | "toUpperCase" | "toLowerCase" | "trim"), other) => {
                Err(ExprError::at(pos, format!(".{m}() cannot be used on a {}", type_name(&other))))
            }
            (m, _) => Err(ExprError::at(
                pos,
                format!("unknown method .{m}(); available: map, filter, join, includes, toUpperCase, toLowerCase, trim"),
            )),
        }
    }
}
