//! Tokens of the expression language, each with the position it starts at.

use super::{ExprError, Pos};

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A name: variable, property, method, filter or lambda parameter.
    Ident(String),
    /// A number literal.
    Num(f64),
    /// A string literal, escapes resolved.
    Str(String),
    /// Punctuation and operators, as written (`==`, `=>`, `(`, …).
    Op(&'static str),
    /// End of input.
    End,
}

const OPS: [&str; 28] = [
    "===", "!==", "==", "!=", "<=", ">=", "&&", "||", "=>", "??", "?.", "<", ">", "!", "+", "-",
    "*", "/", "%", "?", ":", ".", ",", "(", ")", "[", "]", "|",
];
const BRACES: [&str; 2] = ["{", "}"];

/// Characters JavaScript authors reach for that the language does not have, with the fix.
fn unsupported(c: char) -> Option<&'static str> {
    Some(match c {
        '`' => {
            "template strings (`…${x}…`) are not supported: join text with +, as 'Hello ' + name"
        }
        '=' => "a single '=' assigns, which expressions cannot do: compare with == (or ===)",
        '&' => "'&' is not an operator: write && for 'and'",
        ';' => "';' is not needed: a placeholder holds one expression",
        _ => return None,
    })
}

/// Whether a token ends a value, so a `.` after it starts a member (`a.0.b`, `f(x).1`) rather than
/// a number (`.5`).
fn ends_value(t: Option<&(Tok, Pos)>) -> bool {
    matches!(
        t,
        Some((Tok::Ident(_) | Tok::Str(_) | Tok::Op(")" | "]"), _))
    )
}

/// Splits `src` into tokens. Positions are 1-based line and column (in characters).
pub fn lex(src: &str) -> Result<Vec<(Tok, Pos)>, ExprError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let advance = |i: &mut usize, line: &mut u32, col: &mut u32, n: usize| {
        for _ in 0..n {
            if chars.get(*i) == Some(&'\n') {
                *line += 1;
                *col = 1;
            } else {
                *col += 1;
            }
            *i += 1;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let pos = Pos { line, col };
        if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col, 1);
            continue;
        }
        let member = matches!(out.last(), Some((Tok::Op("." | "?."), _)));
        if member && c.is_ascii_digit() {
            // `a.0.b`: after a member dot, digits are a list index, never a fraction.
            let len = chars[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let text: String = chars[i..i + len].iter().collect();
            let n: f64 = text
                .parse()
                .map_err(|_| ExprError::at(pos, format!("{text:?} is not an index")))?;
            out.push((Tok::Num(n), pos));
            advance(&mut i, &mut line, &mut col, len);
            continue;
        }
        if c == '.' && ends_value(out.last()) {
            out.push((Tok::Op("."), pos));
            advance(&mut i, &mut line, &mut col, 1);
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let start = i;
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            if j < chars.len() && (chars[j] == 'e' || chars[j] == 'E') {
                let mut k = j + 1;
                if k < chars.len() && (chars[k] == '+' || chars[k] == '-') {
                    k += 1;
                }
                if k < chars.len() && chars[k].is_ascii_digit() {
                    j = k;
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                }
            }
            let text: String = chars[start..j].iter().collect();
            let n: f64 = text
                .parse()
                .map_err(|_| ExprError::at(pos, format!("{text:?} is not a number")))?;
            out.push((Tok::Num(n), pos));
            advance(&mut i, &mut line, &mut col, j - start);
            continue;
        }
        if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            let mut j = i;
            while j < chars.len()
                && (chars[j].is_alphanumeric() || chars[j] == '_' || chars[j] == '$')
            {
                j += 1;
            }
            out.push((Tok::Ident(chars[start..j].iter().collect()), pos));
            advance(&mut i, &mut line, &mut col, j - start);
            continue;
        }
        if c == '\'' || c == '"' {
            let (text, len) = string(&chars[i..], pos)?;
            out.push((Tok::Str(text), pos));
            advance(&mut i, &mut line, &mut col, len);
            continue;
        }
        // Operators are ASCII: one character each byte.
        let here = &chars[i..];
        match OPS
            .iter()
            .chain(BRACES.iter())
            .find(|op| op.len() <= here.len() && op.chars().zip(here).all(|(a, b)| a == *b))
        {
            Some(op) => {
                out.push((Tok::Op(op), pos));
                advance(&mut i, &mut line, &mut col, op.len());
            }
            None => {
                return Err(ExprError::at(
                    pos,
                    unsupported(c)
                        .map_or_else(|| format!("unexpected character {c:?}"), str::to_string),
                ))
            }
        }
    }
    out.push((Tok::End, Pos { line, col }));
    Ok(out)
}

/// Reads a quoted string starting at `s[0]`; returns its value and its length in characters.
fn string(s: &[char], pos: Pos) -> Result<(String, usize), ExprError> {
    let quote = s[0];
    let mut out = String::new();
    let mut j = 1;
    while j < s.len() {
        match s[j] {
            c if c == quote => return Ok((out, j + 1)),
            '\\' => {
                let e = *s
                    .get(j + 1)
                    .ok_or_else(|| ExprError::at(pos, "unterminated string".into()))?;
                out.push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    other => other,
                });
                j += 2;
            }
            c => {
                out.push(c);
                j += 1;
            }
        }
    }
    Err(ExprError::at(
        pos,
        "unterminated string: add the closing quote".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        lex(src).unwrap().into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn lexes_operators_strings_and_numbers() {
        assert_eq!(
            toks("a.b >= 1.5e2 && 'x\\'y\\n' != \"z\""),
            vec![
                Tok::Ident("a".into()),
                Tok::Op("."),
                Tok::Ident("b".into()),
                Tok::Op(">="),
                Tok::Num(150.0),
                Tok::Op("&&"),
                Tok::Str("x'y\n".into()),
                Tok::Op("!="),
                Tok::Str("z".into()),
                Tok::End
            ]
        );
        assert_eq!(toks("x => x|y")[1], Tok::Op("=>"));
    }

    #[test]
    fn positions_count_lines_and_columns() {
        let t = lex("a +\n  b").unwrap();
        assert_eq!(t[2].1, Pos { line: 2, col: 3 });
        let e = lex("a # b").unwrap_err();
        assert_eq!((e.pos.line, e.pos.col), (1, 3));
        assert!(lex("'open").is_err());
    }
}
