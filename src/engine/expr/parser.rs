//! A precedence-climbing parser from tokens to the expression tree.
//!
//! Precedence, loosest first: `|` filters, `?:`, `|| ??`, `&&`, `== !=`, `< <= > >=`, `+ -`,
//! `* / %`, unary `! -`, then member access, indexing and method calls. Where a filter cannot mean
//! anything else it binds to the nearest value: in a function body (`a => a.price|currency`), in
//! the first branch of a conditional (`c ? x|upper : y`) and inside brackets and arguments.

use std::collections::HashMap;

use serde_json::Value;

use super::lexer::Tok;
use super::{ExprError, Pos};

/// The named filters with their least and most arguments.
pub(super) const NAMED: [(&str, usize, usize); 10] = [
    ("currency", 0, 1),
    ("join", 0, 1),
    ("upper", 0, 0),
    ("lower", 0, 0),
    ("title", 0, 0),
    ("default", 1, 1),
    ("truncate", 1, 1),
    ("number", 0, 1),
    ("json", 0, 0),
    ("raw", 0, 0),
];

/// Deepest tree the parser builds: every nesting (parentheses, ternaries, unary operators) and every
/// link of an operator or property chain counts one level. Deeper input is an error with a position,
/// never a stack overflow in the parser, the evaluator or the tree's destructor.
pub const MAX_DEPTH: usize = 200;

/// An expression tree node.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal value.
    Lit(Value),
    /// A top-level variable (or lambda parameter), and its slot in the render's cache of
    /// top-level values ([`NO_SLOT`] when it has none; see [`Expr::number_roots`]).
    Var(String, Pos, u32),
    /// `target.name` or `target?.name`.
    Member(Box<Expr>, String, Pos),
    /// `target[index]`.
    Index(Box<Expr>, Box<Expr>, Pos),
    /// `!e` or `-e`.
    Unary(&'static str, Box<Expr>, Pos),
    /// Arithmetic, comparison and equality.
    Binary(&'static str, Box<Expr>, Box<Expr>, Pos),
    /// `a && b`, `a || b`, `a ?? b` (short-circuit, value-returning as in JavaScript).
    Logic(&'static str, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `target.method(args)`.
    Call(Box<Expr>, String, Vec<Arg>, Pos),
    /// `value | filter` or `value | filter(args)` or `value | 'literal'`.
    Filter(Box<Expr>, Filter, Pos),
}

/// The slot of a variable that has no place in a cache of top-level values.
pub const NO_SLOT: u32 = u32::MAX;

impl Expr {
    /// Gives every variable the slot of its name in `slots` (adding the names not there yet), so
    /// a render looks each top-level variable up once however many placeholders read it. Walks
    /// the tree as deep as it is ([`MAX_DEPTH`] at most).
    pub fn number_roots(&mut self, slots: &mut HashMap<String, u32>) {
        match self {
            Expr::Var(name, _, slot) => {
                // Most names repeat across placeholders: look up before paying for a key.
                *slot = match slots.get(name.as_str()) {
                    Some(&s) => s,
                    None => {
                        let next = u32::try_from(slots.len()).unwrap_or(NO_SLOT);
                        slots.insert(name.clone(), next);
                        next
                    }
                };
            }
            Expr::Lit(_) => {}
            Expr::Member(t, _, _) | Expr::Unary(_, t, _) => t.number_roots(slots),
            Expr::Index(a, b, _) | Expr::Binary(_, a, b, _) | Expr::Logic(_, a, b) => {
                a.number_roots(slots);
                b.number_roots(slots);
            }
            Expr::Cond(c, a, b) => {
                c.number_roots(slots);
                a.number_roots(slots);
                b.number_roots(slots);
            }
            Expr::Call(t, _, args, _) => {
                t.number_roots(slots);
                for a in args {
                    match a {
                        Arg::Value(v) | Arg::Lambda(Lambda { body: v, .. }) => {
                            v.number_roots(slots)
                        }
                    }
                }
            }
            Expr::Filter(t, f, _) => {
                t.number_roots(slots);
                if let Filter::Named(_, args) = f {
                    args.iter_mut().for_each(|a| a.number_roots(slots));
                }
            }
        }
    }
}

/// A method argument: an expression or a function (`x => expr`, `(x) => expr`, `(x, i) => expr`).
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A plain value.
    Value(Expr),
    /// `item => body` or `(item, index) => body`.
    Lambda(Lambda),
}

/// A function argument of `map` or `filter`.
#[derive(Debug, Clone, PartialEq)]
pub struct Lambda {
    /// The name of the item.
    pub item: String,
    /// The name of the item's position (0-based), when the function takes two parameters.
    pub index: Option<String>,
    /// The value computed for each item.
    pub body: Expr,
}

/// What follows a `|`.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// A named filter with literal-or-expression arguments.
    Named(String, Vec<Expr>),
    /// A quoted literal that is not a date format: a fallback text.
    Literal(String),
    /// A quoted date format (see `dates::date_format`), split into its parts once.
    Date(String, Vec<super::dates::FormatPart>),
}

struct Parser<'s> {
    toks: Vec<(Tok<'s>, Pos)>,
    at: usize,
    depth: usize,
}

/// Parses a whole expression.
pub fn parse(toks: Vec<(Tok<'_>, Pos)>) -> Result<Expr, ExprError> {
    let mut p = Parser {
        toks,
        at: 0,
        depth: 0,
    };
    let e = p.filtered()?;
    match p.peek() {
        Tok::End => Ok(e),
        Tok::Op("=>") => Err(ExprError::at(
            p.pos(),
            "a function (x => …) can only be the argument of .map() or .filter()".into(),
        )),
        other => Err(ExprError::at(
            p.pos(),
            format!(
                "unexpected {} after the end of the expression",
                describe(other)
            ),
        )),
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("name {s:?}"),
        Tok::Num(n) => format!("number {n}"),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::Op(o) => format!("{o:?}"),
        Tok::End => "end of expression".into(),
    }
}

impl<'s> Parser<'s> {
    fn peek(&self) -> &Tok<'s> {
        &self.toks[self.at].0
    }

    fn pos(&self) -> Pos {
        self.toks[self.at].1
    }

    /// Takes the current token and moves on; the last one (the end) stays in place.
    fn next(&mut self) -> (Tok<'s>, Pos) {
        if self.at + 1 < self.toks.len() {
            self.at += 1;
            let (tok, pos) = &mut self.toks[self.at - 1];
            (std::mem::replace(tok, Tok::End), *pos)
        } else {
            self.toks[self.at].clone()
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Tok::Op(o) if *o == op) {
            self.next();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), ExprError> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(ExprError::at(
                self.pos(),
                format!("expected {op:?}, found {}", describe(self.peek())),
            ))
        }
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ExprError::at(
                self.pos(),
                format!("expression nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    /// The arguments after an opening `(`, through the closing `)`.
    fn arguments(&mut self) -> Result<Vec<Expr>, ExprError> {
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.filtered()?);
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        Ok(args)
    }

    fn filtered(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.ternary()?;
        let mut chain = 0;
        while matches!(self.peek(), Tok::Op("|")) {
            let pos = self.pos();
            self.enter()?;
            chain += 1;
            self.next();
            let filter = match self.next() {
                (Tok::Str(s), _) => match super::dates::date_format(&s) {
                    Some(parts) => Filter::Date(s.into_owned(), parts),
                    None => Filter::Literal(s.into_owned()),
                },
                (Tok::Ident(name), _) => {
                    let args = if self.eat("(") {
                        self.arguments()?
                    } else {
                        Vec::new()
                    };
                    Filter::Named(name.to_string(), args)
                }
                (t, p) => {
                    return Err(ExprError::at(
                        p,
                        format!(
                            "expected a filter name or a quoted text after '|', found {}",
                            describe(&t)
                        ),
                    ))
                }
            };
            e = Expr::Filter(Box::new(e), filter, pos);
        }
        self.depth -= chain;
        Ok(e)
    }

    fn ternary(&mut self) -> Result<Expr, ExprError> {
        self.enter()?;
        let cond = self.binary(1)?;
        let out = if self.eat("?") {
            // Between `?` and `:` a filter can only mean the branch: `c ? x|upper : y`.
            let a = self.filtered()?;
            self.expect(":")?;
            let b = self.ternary()?;
            Expr::Cond(Box::new(cond), Box::new(a), Box::new(b))
        } else {
            cond
        };
        self.depth -= 1;
        Ok(out)
    }

    /// Precedence climbing: one frame per operator of rising precedence, not one per level, so
    /// nesting costs little stack.
    fn binary(&mut self, min_prec: u8) -> Result<Expr, ExprError> {
        fn prec(op: &str) -> Option<u8> {
            Some(match op {
                "||" | "??" => 1,
                "&&" => 2,
                "==" | "!=" | "===" | "!==" => 3,
                "<" | "<=" | ">" | ">=" => 4,
                "+" | "-" => 5,
                "*" | "/" | "%" => 6,
                _ => return None,
            })
        }
        let mut left = self.unary()?;
        let mut chain = 0;
        while let Some((op, p)) = match self.peek() {
            Tok::Op(o) => prec(o).filter(|p| *p >= min_prec).map(|p| (*o, p)),
            _ => None,
        } {
            self.enter()?;
            chain += 1;
            let pos = self.pos();
            self.next();
            let right = self.binary(p + 1)?;
            left = match op {
                "||" | "&&" | "??" => Expr::Logic(op, Box::new(left), Box::new(right)),
                "===" => Expr::Binary("==", Box::new(left), Box::new(right), pos),
                "!==" => Expr::Binary("!=", Box::new(left), Box::new(right), pos),
                _ => Expr::Binary(op, Box::new(left), Box::new(right), pos),
            };
        }
        self.depth -= chain;
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        let pos = self.pos();
        for op in ["!", "-"] {
            if self.eat(op) {
                self.enter()?;
                let inner = self.unary()?;
                self.depth -= 1;
                return Ok(Expr::Unary(op, Box::new(inner), pos));
            }
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.primary()?;
        let mut chain = 0;
        loop {
            let pos = self.pos();
            if matches!(self.peek(), Tok::Op("." | "?." | "[")) {
                self.enter()?;
                chain += 1;
            }
            if self.eat(".") || self.eat("?.") {
                let name = match self.next() {
                    (Tok::Ident(n), _) => n.to_string(),
                    // `a.0.b`: a whole number after a dot is a list index, as `a[0].b`.
                    (Tok::Num(n), p) => {
                        e = Expr::Index(Box::new(e), Box::new(Expr::Lit(super::num(n))), p);
                        continue;
                    }
                    (t, p) => {
                        return Err(ExprError::at(
                            p,
                            format!("expected a property name after '.', found {}", describe(&t)),
                        ))
                    }
                };
                if self.eat("(") {
                    let args = self.call_args()?;
                    e = Expr::Call(Box::new(e), name, args, pos);
                } else {
                    e = Expr::Member(Box::new(e), name, pos);
                }
            } else if self.eat("[") {
                let index = self.filtered()?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(index), pos);
            } else {
                self.depth -= chain;
                return Ok(e);
            }
        }
    }

    fn call_args(&mut self) -> Result<Vec<Arg>, ExprError> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            if let Some((item, index, len)) = self.lambda_params() {
                self.at += len;
                if matches!(self.peek(), Tok::Op("{")) {
                    return Err(ExprError::at(
                        self.pos(),
                        "a function body in braces is not supported: write the value itself, as x => x.name".into(),
                    ));
                }
                let body = self.filtered()?;
                args.push(Arg::Lambda(Lambda { item, index, body }));
            } else {
                args.push(Arg::Value(self.filtered()?));
            }
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    /// The parameters of a function starting here (`x =>`, `(x) =>`, `(x, i) =>`) and how many
    /// tokens they take, `=>` included.
    fn lambda_params(&self) -> Option<(String, Option<String>, usize)> {
        let tok = |k: usize| self.toks.get(self.at + k).map(|(t, _)| t);
        let ident = |k: usize| match tok(k) {
            Some(Tok::Ident(n)) => Some(n.to_string()),
            _ => None,
        };
        let op = |k: usize, o: &str| matches!(tok(k), Some(Tok::Op(x)) if *x == o);
        if op(1, "=>") {
            return ident(0).map(|item| (item, None, 2));
        }
        if !op(0, "(") {
            return None;
        }
        let item = ident(1)?;
        if op(2, ")") && op(3, "=>") {
            return Some((item, None, 4));
        }
        if op(2, ",") && op(4, ")") && op(5, "=>") {
            return Some((item, Some(ident(3)?), 6));
        }
        None
    }

    /// `currency(x)`, `upper(x)`, `join(list, ', ')`: a filter called as a function is the filter
    /// applied to its first argument. Anything else called by name is an error that says what to
    /// write instead.
    fn function(&mut self, name: &str, pos: Pos) -> Result<Expr, ExprError> {
        if !NAMED.iter().any(|(n, _, _)| *n == name) {
            let names: Vec<&str> = NAMED.iter().map(|(n, _, _)| *n).collect();
            return Err(ExprError::at(
                pos,
                format!(
                    "unknown function {name}(); the functions are the filters ({}), and currency(x) means x|currency. Methods are called on a value: list.join(', ')",
                    names.join(", ")
                ),
            ));
        }
        self.expect("(")?;
        let mut args = self.arguments()?;
        if args.is_empty() {
            return Err(ExprError::at(
                pos,
                format!("{name}() needs the value to work on: {name}(x), or x|{name}"),
            ));
        }
        let value = args.remove(0);
        Ok(Expr::Filter(
            Box::new(value),
            Filter::Named(name.to_string(), args),
            pos,
        ))
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let (tok, pos) = self.next();
        match tok {
            Tok::Num(n) => Ok(Expr::Lit(super::num(n))),
            Tok::Str(s) => Ok(Expr::Lit(Value::String(s.into_owned()))),
            Tok::Ident(name) => Ok(match name {
                "true" => Expr::Lit(Value::Bool(true)),
                "false" => Expr::Lit(Value::Bool(false)),
                "null" | "undefined" => Expr::Lit(Value::Null),
                "function" => return Err(ExprError::at(pos, "function expressions are not supported: write x => x.name".into())),
                "return" => return Err(ExprError::at(pos, "return is not needed: a function's value is its body, as x => x.name".into())),
                "let" | "const" | "var" | "new" | "typeof" | "this" => {
                    return Err(ExprError::at(
                        pos,
                        format!("{name} is not supported: a placeholder is one expression over the variables"),
                    ))
                }
                _ if matches!(self.peek(), Tok::Op("(")) => {
                    self.enter()?;
                    let e = self.function(name, pos);
                    self.depth -= 1;
                    return e;
                }
                _ => Expr::Var(name.to_string(), pos, NO_SLOT),
            }),
            // `{path}` inside an expression is the path itself, as chain conditions write
            // `{validation_status} == 'approved'`.
            Tok::Op(open @ ("(" | "{")) => {
                self.enter()?;
                let e = self.filtered()?;
                self.expect(if open == "(" { ")" } else { "}" })?;
                self.depth -= 1;
                Ok(e)
            }
            t => Err(ExprError::at(
                pos,
                format!("expected a value, found {}", describe(&t)),
            )),
        }
    }
}
