//! Tokens of the expression language, each with the position it starts at.
//!
//! The lexer walks the source's bytes: every delimiter, operator and digit is ASCII, so a byte
//! equal to one is that character (UTF-8 continuation bytes never are); only a byte of 0x80 or more
//! is decoded, to tell a letter of a name from whitespace or an unexpected character. Names and
//! strings without escapes are slices of the source, not copies.

use std::borrow::Cow;

use super::{ExprError, Pos};

/// One token, borrowing its text from the source.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok<'s> {
    /// A name: variable, property, method, filter or lambda parameter.
    Ident(&'s str),
    /// A number literal.
    Num(f64),
    /// A string literal, escapes resolved (borrowed when it has none).
    Str(Cow<'s, str>),
    /// Punctuation and operators, as written (`==`, `=>`, `(`, …).
    Op(&'static str),
    /// End of input.
    End,
}

/// The operator or punctuation that starts `here` (longest first), if any.
fn op(here: &[u8]) -> Option<&'static str> {
    let second = here.get(1).copied();
    Some(match (*here.first()?, second) {
        (b'=', Some(b'=')) if here.get(2) == Some(&b'=') => "===",
        (b'!', Some(b'=')) if here.get(2) == Some(&b'=') => "!==",
        (b'=', Some(b'=')) => "==",
        (b'!', Some(b'=')) => "!=",
        (b'<', Some(b'=')) => "<=",
        (b'>', Some(b'=')) => ">=",
        (b'&', Some(b'&')) => "&&",
        (b'|', Some(b'|')) => "||",
        (b'=', Some(b'>')) => "=>",
        (b'?', Some(b'?')) => "??",
        (b'?', Some(b'.')) => "?.",
        (b'<', _) => "<",
        (b'>', _) => ">",
        (b'!', _) => "!",
        (b'+', _) => "+",
        (b'-', _) => "-",
        (b'*', _) => "*",
        (b'/', _) => "/",
        (b'%', _) => "%",
        (b'?', _) => "?",
        (b':', _) => ":",
        (b'.', _) => ".",
        (b',', _) => ",",
        (b'(', _) => "(",
        (b')', _) => ")",
        (b'[', _) => "[",
        (b']', _) => "]",
        (b'|', _) => "|",
        (b'{', _) => "{",
        (b'}', _) => "}",
        _ => return None,
    })
}

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

/// Whitespace as `char::is_whitespace` sees it, for one ASCII byte.
fn ascii_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// The character starting at byte `i` of `src` (a character boundary).
fn char_at(src: &str, i: usize) -> char {
    src[i..].chars().next().unwrap_or('\0')
}

/// Moves `pos` past `bytes` of UTF-8 text: columns count characters, so continuation bytes do not
/// move it.
pub(crate) fn advance(pos: &mut Pos, bytes: &[u8]) {
    for &b in bytes {
        if b == b'\n' {
            pos.line += 1;
            pos.col = 1;
        } else if b & 0xC0 != 0x80 {
            pos.col += 1;
        }
    }
}

/// The end (a byte index) of the run of ASCII digits starting at `i`.
fn digits_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// Splits `src` into tokens. Positions are 1-based line and column (in characters).
pub fn lex(src: &str) -> Result<Vec<(Tok<'_>, Pos)>, ExprError> {
    let b = src.as_bytes();
    let mut out: Vec<(Tok, Pos)> = Vec::with_capacity(b.len() / 2 + 1);
    let mut here = Pos { line: 1, col: 1 };
    let mut i = 0usize;
    while i < b.len() {
        let c = b[i];
        let pos = here;
        if ascii_space(c) {
            advance(&mut here, &b[i..=i]);
            i += 1;
            continue;
        }
        if c >= 0x80 {
            let ch = char_at(src, i);
            if ch.is_whitespace() {
                here.col += 1;
                i += ch.len_utf8();
                continue;
            }
            if !ch.is_alphabetic() {
                return Err(ExprError::at(pos, format!("unexpected character {ch:?}")));
            }
        }
        let member = matches!(out.last(), Some((Tok::Op("." | "?."), _)));
        if member && c.is_ascii_digit() {
            // `a.0.b`: after a member dot, digits are a list index, never a fraction.
            let end = digits_end(b, i);
            let text = &src[i..end];
            let n: f64 = text
                .parse()
                .map_err(|_| ExprError::at(pos, format!("{text:?} is not an index")))?;
            out.push((Tok::Num(n), pos));
            here.col += (end - i) as u32;
            i = end;
            continue;
        }
        if c == b'.' && ends_value(out.last()) {
            out.push((Tok::Op("."), pos));
            here.col += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                j += 1;
            }
            if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
                let mut k = j + 1;
                if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
                    k += 1;
                }
                if k < b.len() && b[k].is_ascii_digit() {
                    j = digits_end(b, k);
                }
            }
            let text = &src[i..j];
            let n: f64 = text
                .parse()
                .map_err(|_| ExprError::at(pos, format!("{text:?} is not a number")))?;
            out.push((Tok::Num(n), pos));
            here.col += (j - i) as u32;
            i = j;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 {
            let mut j = i;
            let mut ascii = true;
            while j < b.len() {
                let d = b[j];
                if d.is_ascii_alphanumeric() || d == b'_' || d == b'$' {
                    j += 1;
                } else if d >= 0x80 && char_at(src, j).is_alphanumeric() {
                    ascii = false;
                    j += char_at(src, j).len_utf8();
                } else {
                    break;
                }
            }
            out.push((Tok::Ident(&src[i..j]), pos));
            if ascii {
                here.col += (j - i) as u32;
            } else {
                advance(&mut here, &b[i..j]);
            }
            i = j;
            continue;
        }
        if c == b'\'' || c == b'"' {
            let (text, len) = string(src, i, pos)?;
            out.push((Tok::Str(text), pos));
            advance(&mut here, &b[i..i + len]);
            i += len;
            continue;
        }
        match op(&b[i..]) {
            Some(op) => {
                out.push((Tok::Op(op), pos));
                here.col += op.len() as u32;
                i += op.len();
            }
            None => {
                let c = char_at(src, i);
                return Err(ExprError::at(
                    pos,
                    unsupported(c)
                        .map_or_else(|| format!("unexpected character {c:?}"), str::to_string),
                ));
            }
        }
    }
    out.push((Tok::End, here));
    Ok(out)
}

/// Reads the quoted string starting at byte `start` of `src`; returns its value (a slice of `src`
/// when it has no escapes) and its length in bytes, quotes included.
fn string(src: &str, start: usize, pos: Pos) -> Result<(Cow<'_, str>, usize), ExprError> {
    let b = src.as_bytes();
    let quote = b[start];
    let body = start + 1;
    let mut j = body;
    while j < b.len() && b[j] != quote && b[j] != b'\\' {
        j += 1;
    }
    if b.get(j) == Some(&quote) {
        return Ok((Cow::Borrowed(&src[body..j]), j + 1 - start));
    }
    let mut out = String::from(&src[body..j]);
    while j < b.len() {
        match b[j] {
            c if c == quote => return Ok((Cow::Owned(out), j + 1 - start)),
            b'\\' => {
                let Some(e) = src[j + 1..].chars().next() else {
                    return Err(ExprError::at(pos, "unterminated string".into()));
                };
                out.push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    other => other,
                });
                j += 1 + e.len_utf8();
            }
            _ => {
                let from = j;
                while j < b.len() && b[j] != quote && b[j] != b'\\' {
                    j += 1;
                }
                out.push_str(&src[from..j]);
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

    fn toks(src: &str) -> Vec<Tok<'_>> {
        lex(src).unwrap().into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn lexes_operators_strings_and_numbers() {
        assert_eq!(
            toks("a.b >= 1.5e2 && 'x\\'y\\n' != \"z\""),
            vec![
                Tok::Ident("a"),
                Tok::Op("."),
                Tok::Ident("b"),
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

    #[test]
    fn columns_count_characters_of_names_strings_and_spaces_beyond_ascii() {
        let t = lex("préné\u{a0}+ 'ü\\'\n' + ñ1 ¬").unwrap_err();
        assert_eq!(t.message, "unexpected character '¬'");
        assert_eq!((t.pos.line, t.pos.col), (2, 8));
        let t = lex("préné\u{a0}+ 'ü\\'\n' + ñ1").unwrap();
        let got: Vec<(Tok, u32, u32)> = t.into_iter().map(|(t, p)| (t, p.line, p.col)).collect();
        assert_eq!(
            got,
            vec![
                (Tok::Ident("préné"), 1, 1),
                (Tok::Op("+"), 1, 7),
                (Tok::Str("ü'\n".into()), 1, 9),
                (Tok::Op("+"), 2, 3),
                (Tok::Ident("ñ1"), 2, 5),
                (Tok::End, 2, 7),
            ]
        );
        assert!(matches!(
            lex("'plain'").unwrap()[0].0,
            Tok::Str(Cow::Borrowed("plain"))
        ));
        assert_eq!(lex("'a\\").unwrap_err().message, "unterminated string");
    }
}
