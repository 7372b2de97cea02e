//! Filters: what may follow `|` in an expression.
//!
//! | filter | effect |
//! | --- | --- |
//! | `currency`, `currency('EUR')` | `$14,750.00`; the code comes from the argument, else a top-level `currency` variable, else USD |
//! | `'MMMM DD, YYYY'` | a date format (moment tokens, below) applied to an ISO date, date-time, time or epoch |
//! | `'3:00 PM'` | a fallback text, shown when the value is missing, `null` or empty |
//! | `join(', ')` | joins a list (default separator `, `) |
//! | `upper`, `lower`, `title` | letter case |
//! | `default(x)` | `x` when the value is missing, `null` or empty |
//! | `truncate(n)` | at most `n` characters, ending with `…` when cut |
//! | `number(d)` | `d` decimals (default 0) with thousands separators |
//! | `json` | the value as JSON text |
//! | `raw` | no HTML escaping in `html` output (use only for trusted values) |
//!
//!
//! Date formats and the dates they read: [`super::dates`].

use serde_json::Value;

use super::dates::format_date;
use super::eval::{Ctx, Mark, Val};
use super::parser::{Arg, Expr, Filter, Lambda, NAMED};
use super::{shown, ExprError, Pos};

/// Checks every filter name and argument count in a tree (at compile time).
pub(super) fn check(e: &Expr) -> Result<(), ExprError> {
    match e {
        Expr::Lit(_) | Expr::Var(..) => Ok(()),
        Expr::Member(t, _, _) | Expr::Unary(_, t, _) => check(t),
        Expr::Index(a, b, _) | Expr::Binary(_, a, b, _) | Expr::Logic(_, a, b) => {
            check(a).and_then(|()| check(b))
        }
        Expr::Cond(c, a, b) => check(c).and_then(|()| check(a)).and_then(|()| check(b)),
        Expr::Call(t, _, args, _) => {
            check(t)?;
            args.iter().try_for_each(|a| match a {
                Arg::Value(v) | Arg::Lambda(Lambda { body: v, .. }) => check(v),
            })
        }
        Expr::Filter(t, f, pos) => {
            check(t)?;
            if let Filter::Named(name, args) = f {
                let Some((_, min, max)) = NAMED.iter().find(|(n, _, _)| n == name) else {
                    let names: Vec<&str> = NAMED.iter().map(|(n, _, _)| *n).collect();
                    return Err(ExprError::at(
                        *pos,
                        format!("unknown filter {name:?}; available: {}, or a quoted date format or fallback text", names.join(", ")),
                    ));
                };
                if args.len() < *min || args.len() > *max {
                    return Err(ExprError::at(
                        *pos,
                        format!(
                            "filter {name} takes {min} to {max} argument(s), got {}",
                            args.len()
                        ),
                    ));
                }
                args.iter().try_for_each(check)?;
            }
            Ok(())
        }
    }
}

fn is_empty(v: &Value) -> bool {
    matches!(v, Value::Null) || matches!(v, Value::String(s) if s.is_empty())
}

impl<'a> Ctx<'a, '_> {
    /// Applies one filter, charging its work to the budget.
    pub(super) fn apply_filter(
        &mut self,
        f: &'a Filter,
        v: Val<'a>,
        args: Vec<Val<'a>>,
        pos: Pos,
    ) -> Result<Val<'a>, ExprError> {
        let err = |m: String| ExprError::at(pos, m);
        match f {
            Filter::Date(text, parts) => {
                if is_empty(&v) {
                    Ok(Val::Own(Value::Null))
                } else {
                    if let Value::String(s) = &*v {
                        self.burn_bytes(s.len(), pos)?;
                    }
                    self.burn_bytes(text.len(), pos)?;
                    format_date(&v, text, parts)
                        .map(|s| Val::Own(Value::String(s)))
                        .map_err(err)
                }
            }
            Filter::Literal(text) => Ok(if is_empty(&v) {
                self.burn_bytes(text.len(), pos)?;
                Val::Marked(Value::String(text.clone()), Mark::all(text.len()))
            } else {
                v
            }),
            Filter::Named(name, _) => match name.as_str() {
                "currency" => {
                    if v.is_null() {
                        return Ok(Val::Own(Value::Null));
                    }
                    // A code that is missing (`currency(code)` with no `code`) falls back like no
                    // argument: the missing path is reported, the amount still shows.
                    let code = match args.first().filter(|a| !a.is_null()) {
                        Some(a) => Some(self.text(a, pos)?),
                        None => self
                            .root
                            .get("currency")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    };
                    if let Value::String(s) = &*v {
                        self.burn_bytes(s.len(), pos)?;
                    }
                    currency(&v, code.as_deref().unwrap_or("USD"))
                        .map(|s| Val::Own(Value::String(s)))
                        .map_err(err)
                }
                "join" => {
                    if !v.is_array() {
                        return Ok(v);
                    }
                    let sep = args
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| Val::Own(Value::String(", ".into())));
                    self.join(&v, &sep, pos)
                }
                "upper" => self.text_map(&v, pos, &|s| s.to_uppercase()).map(Val::Own),
                "lower" => self.text_map(&v, pos, &|s| s.to_lowercase()).map(Val::Own),
                "title" => self.text_map(&v, pos, &title_case).map(Val::Own),
                "default" => Ok(if is_empty(&v) {
                    args.into_iter().next().unwrap_or(Val::Own(Value::Null))
                } else {
                    v
                }),
                "truncate" => {
                    let n = args
                        .first()
                        .and_then(|a| a.as_f64())
                        .filter(|n| *n >= 0.0)
                        .ok_or_else(|| err("truncate needs a length of 0 or more".into()))?
                        as usize;
                    self.text_map(&v, pos, &|s| crate::engine::clip(s, n))
                        .map(Val::Own)
                }
                "number" => {
                    if v.is_null() {
                        return Ok(Val::Own(Value::Null));
                    }
                    let d = args.first().and_then(|a| a.as_f64()).unwrap_or(0.0);
                    if !(0.0..=10.0).contains(&d) || d.fract() != 0.0 {
                        return Err(err(
                            "number(d) needs a whole number of decimals from 0 to 10".into(),
                        ));
                    }
                    if let Value::String(s) = &*v {
                        self.burn_bytes(s.len(), pos)?;
                    }
                    let n = finite(&v, "number").map_err(err)?;
                    Ok(Val::Own(Value::String(group(n, d as usize))))
                }
                "json" => {
                    let room = self.budget.max_output();
                    self.json(&v, room, pos).map(|s| Val::Own(Value::String(s)))
                }
                _ => Ok(v),
            },
        }
    }

    /// Applies `f` to text, to each item of a list (recursively), or to the text of another value;
    /// `null` stays `null`. Each value and byte is charged.
    fn text_map(
        &mut self,
        v: &Value,
        pos: Pos,
        f: &dyn Fn(&str) -> String,
    ) -> Result<Value, ExprError> {
        self.burn(pos)?;
        Ok(match v {
            Value::Null => Value::Null,
            Value::String(s) => {
                self.budget.spend_slow_bytes(s.len(), pos)?;
                let out = f(s);
                self.check_size(out.len(), pos)?;
                Value::String(out)
            }
            Value::Array(items) => {
                self.check_size(items.len(), pos)?;
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    out.push(self.text_map(i, pos, f)?);
                }
                Value::Array(out)
            }
            other => {
                let text = self.text(other, pos)?;
                self.budget.spend_slow_bytes(text.len(), pos)?;
                let out = f(&text);
                self.check_size(out.len(), pos)?;
                Value::String(out)
            }
        })
    }
}

fn title_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut start = true;
    for c in s.chars() {
        if start {
            out.extend(c.to_uppercase());
        } else {
            out.extend(c.to_lowercase());
        }
        start = c.is_whitespace() || c == '-';
    }
    out
}

fn finite(v: &Value, filter: &str) -> Result<f64, String> {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n.is_finite() => Ok(if n == 0.0 { 0.0 } else { n }),
        _ => Err(format!("{filter}: {} is not a finite number", shown(v))),
    }
}

/// `|n|` rounded to a number of decimals, as the digits `{:.*}` prints.
enum Rounded {
    /// The digits as one whole number (`14750.00` is 1475000): no float formatting.
    Whole(u64),
    /// The text `{:.*}` prints, for amounts too large or too fine for [`Rounded::Whole`].
    Text(String),
}

/// Below this, `|n| × 10^decimals` computed in floating point is off from the exact product by at
/// most 1/16, so when it comes out whole it is the whole number nearest the exact product: the
/// digits `{:.*}` prints (it rounds the exact binary value), with no tie to break.
const WHOLE_BELOW: f64 = (1u64 << 50) as f64;

fn rounded(n: f64, decimals: usize) -> Rounded {
    let scaled = n.abs() * 10f64.powi(decimals as i32);
    if scaled.fract() == 0.0 && scaled < WHOLE_BELOW {
        Rounded::Whole(scaled as u64)
    } else {
        Rounded::Text(format!("{:.*}", decimals, n.abs()))
    }
}

impl Rounded {
    fn is_zero(&self) -> bool {
        match self {
            Rounded::Whole(k) => *k == 0,
            Rounded::Text(t) => !t.bytes().any(|b| b.is_ascii_digit() && b != b'0'),
        }
    }

    /// Writes the amount with `decimals` decimals and a comma between thousands.
    fn write(&self, out: &mut String, decimals: usize) {
        match self {
            Rounded::Whole(k) => {
                let unit = 10u64.pow(decimals as u32);
                let mut buf = [0u8; 20];
                grouped(out, ascii_digits(k / unit, 1, &mut buf));
                if decimals > 0 {
                    out.push('.');
                    out.push_str(ascii_digits(k % unit, decimals, &mut buf));
                }
            }
            Rounded::Text(fixed) => {
                let (int, frac) = fixed.split_once('.').unwrap_or((fixed, ""));
                grouped(out, int);
                if !frac.is_empty() {
                    out.push('.');
                    out.push_str(frac);
                }
            }
        }
    }
}

/// The decimal digits of `n`, at least `width` of them (zero-padded), written at the end of `buf`.
fn ascii_digits(mut n: u64, width: usize, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    while n > 0 || buf.len() - at < width {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[at..]).unwrap_or("0")
}

/// Writes the ASCII digits `int` with a comma before each group of three from the right.
fn grouped(out: &mut String, int: &str) {
    for (i, c) in int.char_indices() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
}

/// `1234567.891` with 2 decimals → `1,234,567.89` (rounded half away from zero on the exact binary
/// value, as `{:.2}` does; negative zero prints as zero).
fn group(n: f64, decimals: usize) -> String {
    let r = rounded(n, decimals);
    let mut out = String::with_capacity(24);
    if n < 0.0 && !r.is_zero() {
        out.push('-');
    }
    r.write(&mut out, decimals);
    out
}

fn currency(v: &Value, code: &str) -> Result<String, String> {
    let n = finite(v, "currency")?;
    let code = code.trim();
    let (symbol, decimals) = if code.eq_ignore_ascii_case("USD") {
        ("$", 2)
    } else if code.eq_ignore_ascii_case("EUR") {
        ("€", 2)
    } else if code.eq_ignore_ascii_case("GBP") {
        ("£", 2)
    } else if code.eq_ignore_ascii_case("JPY") {
        ("¥", 0)
    } else if code.len() == 3 && code.bytes().all(|b| b.is_ascii_alphabetic()) {
        ("", 2)
    } else {
        return Err(format!(
            "currency: {:?} is not a three-letter currency code",
            code.to_ascii_uppercase()
        ));
    };
    let r = rounded(n, decimals);
    let mut out = String::with_capacity(24);
    if n < 0.0 && !r.is_zero() {
        out.push('-');
    }
    if symbol.is_empty() {
        out.extend(code.chars().map(|c| c.to_ascii_uppercase()));
        out.push(' ');
    } else {
        out.push_str(symbol);
    }
    r.write(&mut out, decimals);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::group;

    /// What `group` printed before it had a path without float formatting: `{:.*}`, then commas.
    fn formatted(n: f64, decimals: usize) -> String {
        let fixed = format!("{:.*}", decimals, n.abs());
        let (int, frac) = fixed.split_once('.').unwrap_or((&fixed, ""));
        let mut out = String::new();
        if n < 0.0 && fixed.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
            out.push('-');
        }
        for (i, c) in int.chars().enumerate() {
            if i > 0 && (int.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        out
    }

    #[test]
    fn grouping_prints_what_the_float_formatter_prints() {
        let mut values = vec![
            0.0,
            -0.0,
            0.005,
            0.015,
            1.005,
            2.675,
            0.125,
            0.375,
            1e15,
            1.1e15,
            9.999_999e14,
            123_456_789.125,
            0.1 + 0.2,
            1e-7,
            -1e-7,
            -0.004,
            -0.005,
            999.995,
            999_999.999,
            14_750.0,
            1e21,
            4.35,
            1.45,
            8.675,
            1_125_899_906_842_624.0,
            1_125_899_906_842_623.5,
        ];
        // A spread of amounts with cents, and their negatives.
        let mut x = 0.01f64;
        while x < 1e16 {
            values.push(x);
            values.push(x * 1.37 + 0.005);
            x *= 3.1;
        }
        for i in 0..2_000 {
            values.push(f64::from(i) / 1000.0);
            values.push(f64::from(i) * 0.01 + 0.005);
        }
        for n in values {
            for n in [n, -n] {
                for d in 0..=10 {
                    assert_eq!(group(n, d), formatted(n, d), "{n} with {d} decimals");
                }
            }
        }
    }
}
