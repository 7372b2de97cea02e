//! Date formats (moment tokens) and the dates they format: what a quoted date-format filter
//! (`'MMMM DD, YYYY'`) does, apart from the other filters so the parser can split a format once
//! without reaching into them.
//!
//! **Date format or fallback?** A quoted literal is a date format when it is made only of date tokens
//! (`YYYY YY MMMM MMM MM M Do DD D dddd ddd HH H hh h mm m ss s A a`), spaces and the punctuation
//! `, . - / : ( )`, and has at least one token; anything else (digits, other words) is a fallback
//! text. So `'h:mm A'` formats, `'3:00 PM'` is a fallback. A missing value under a date format
//! renders empty (and is listed as missing).
//!
//! Dates: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM]` (formatted at the clock time as
//! written, not converted), `HH:MM[:SS]` or a 12-hour `h:mm AM` for times, or a number of seconds since the Unix epoch (UTC;
//! numbers of 100000000000 and more are taken as milliseconds). Invalid dates are errors.

use std::fmt::Write as _;

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use serde_json::Value;

use super::shown;

/// A date format token (moment's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    /// `YYYY`
    Year,
    /// `YY`
    Year2,
    /// `MMMM`
    MonthName,
    /// `MMM`
    MonthShort,
    /// `MM`
    Month2,
    /// `M`
    Month,
    /// `Do`
    DayOrdinal,
    /// `DD`
    Day2,
    /// `D`
    Day,
    /// `dddd`
    Weekday,
    /// `ddd`
    WeekdayShort,
    /// `HH`
    Hour2,
    /// `H`
    Hour,
    /// `hh`
    Hour12Two,
    /// `h`
    Hour12,
    /// `mm`
    Minute2,
    /// `m`
    Minute,
    /// `ss`
    Second2,
    /// `s`
    Second,
    /// `A`
    AmPm,
    /// `a`
    AmPmLower,
}

impl Token {
    /// Whether the token needs a date (not only a time of day).
    fn needs_date(self) -> bool {
        matches!(
            self,
            Token::Year
                | Token::Year2
                | Token::MonthName
                | Token::MonthShort
                | Token::Month2
                | Token::Month
                | Token::DayOrdinal
                | Token::Day2
                | Token::Day
                | Token::Weekday
                | Token::WeekdayShort
        )
    }
}

/// The tokens, longest first where one is a prefix of another.
const TOKENS: [(&str, Token); 21] = [
    ("YYYY", Token::Year),
    ("YY", Token::Year2),
    ("MMMM", Token::MonthName),
    ("MMM", Token::MonthShort),
    ("MM", Token::Month2),
    ("M", Token::Month),
    ("Do", Token::DayOrdinal),
    ("DD", Token::Day2),
    ("D", Token::Day),
    ("dddd", Token::Weekday),
    ("ddd", Token::WeekdayShort),
    ("HH", Token::Hour2),
    ("H", Token::Hour),
    ("hh", Token::Hour12Two),
    ("h", Token::Hour12),
    ("mm", Token::Minute2),
    ("m", Token::Minute),
    ("ss", Token::Second2),
    ("s", Token::Second),
    ("A", Token::AmPm),
    ("a", Token::AmPmLower),
];

/// A part of a date format: a token (`YYYY`) or a character written as it is.
pub(super) type FormatPart = Result<Token, char>;

fn split_format(fmt: &str) -> Option<Vec<FormatPart>> {
    let mut out = Vec::new();
    let mut rest = fmt;
    while let Some(c) = rest.chars().next() {
        if let Some((text, tok)) = TOKENS.iter().find(|(t, _)| rest.starts_with(*t)) {
            out.push(Ok(*tok));
            rest = &rest[text.len()..];
        } else if c == ' ' || ",.-/:()".contains(c) {
            out.push(Err(c));
            rest = &rest[c.len_utf8()..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// The parts of a quoted filter literal that is a date format, or `None` for a fallback text.
pub(super) fn date_format(text: &str) -> Option<Vec<FormatPart>> {
    split_format(text).filter(|parts| parts.iter().any(Result::is_ok))
}

/// A number of exactly `digits.len()` ASCII digits.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

/// `YYYY-MM-DD` read by hand: the common case, without chrono's format parser.
fn iso_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    NaiveDate::from_ymd_opt(digits(&b[..4])? as i32, digits(&b[5..7])?, digits(&b[8..])?)
}

/// `H:MM` or `HH:MM` read by hand.
fn clock_time(s: &str) -> Option<NaiveTime> {
    let (h, m) = s.split_once(':')?;
    if h.is_empty() || h.len() > 2 || m.len() != 2 {
        return None;
    }
    NaiveTime::from_hms_opt(digits(h.as_bytes())?, digits(m.as_bytes())?, 0)
}

enum When {
    Date(NaiveDate),
    Time(NaiveTime),
    DateTime(NaiveDateTime),
}

fn parse_when(v: &Value) -> Result<When, String> {
    match v {
        Value::Number(n) => {
            let n = n
                .as_f64()
                .filter(|f| f.is_finite())
                .ok_or("date: not a finite number")?;
            let ms = if n.abs() >= 1e11 { n } else { n * 1000.0 };
            chrono::DateTime::from_timestamp_millis(ms as i64)
                .map(|d| When::DateTime(d.naive_utc()))
                .ok_or_else(|| format!("date: {n} is outside the supported range"))
        }
        Value::String(s) => {
            let s = s.trim();
            let bad = || {
                format!(
                    "date: {:?} is not a valid date (use YYYY-MM-DD, an ISO date-time, HH:MM or h:mm AM)",
                    shown(&Value::String(s.to_string()))
                )
            };
            if let Some(d) = iso_date(s) {
                return Ok(When::Date(d));
            }
            if let Some(t) = clock_time(s) {
                return Ok(When::Time(t));
            }
            if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                return Ok(When::Date(d));
            }
            if let Some(t) = [
                "%H:%M:%S",
                "%H:%M",
                "%I:%M %p",
                "%I:%M:%S %p",
                "%I:%M%p",
                "%I %p",
                "%I%p",
            ]
            .iter()
            .find_map(|f| NaiveTime::parse_from_str(s, f).ok())
            {
                return Ok(When::Time(t));
            }
            // Keep the clock time as written: drop a trailing Z or ±HH:MM offset.
            let local = s
                .strip_suffix('Z')
                .or_else(|| s.strip_suffix('z'))
                .unwrap_or(s);
            let local = match local
                .char_indices()
                .rev()
                .find(|(_, c)| *c == '+' || *c == '-')
            {
                Some((i, _))
                    if i > 10 && local[i..].len() == 6 && local.as_bytes()[i + 3] == b':' =>
                {
                    &local[..i]
                }
                _ => local,
            };
            [
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%dT%H:%M",
                "%Y-%m-%d %H:%M:%S",
                "%Y-%m-%d %H:%M",
                "%Y-%m-%d %I:%M %p",
            ]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(local, f).ok())
            .map(When::DateTime)
            .ok_or_else(bad)
        }
        other => Err(format!(
            "date: a {} cannot be formatted as a date",
            shown(other)
        )),
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn ordinal(n: u32) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// Writes `n` in decimal, with a leading zero below `10` when `two` (the `DD`, `HH`, … tokens).
fn push_number(out: &mut String, n: u32, two: bool) {
    if n < 100 {
        if n >= 10 || two {
            out.push(char::from(b'0' + (n / 10) as u8));
        }
        out.push(char::from(b'0' + (n % 10) as u8));
    } else {
        // Writing to a String cannot fail.
        let _ = write!(out, "{n}");
    }
}

pub(super) fn format_date(v: &Value, fmt: &str, parts: &[FormatPart]) -> Result<String, String> {
    let when = parse_when(v)?;
    let (date, time) = match when {
        When::Date(d) => (Some(d), None),
        When::Time(t) => (None, Some(t)),
        When::DateTime(dt) => (Some(dt.date()), Some(dt.time())),
    };
    let mut out = String::with_capacity(fmt.len() + 8);
    for part in parts {
        let tok = match *part {
            Err(c) => {
                out.push(c);
                continue;
            }
            Ok(t) => t,
        };
        if tok.needs_date() {
            let d = date.ok_or_else(|| {
                format!(
                    "date: {} is a time of day; the format {fmt:?} needs a date",
                    shown(v)
                )
            })?;
            match tok {
                Token::Year => {
                    // Writing to a String cannot fail.
                    let _ = write!(out, "{:04}", d.year());
                }
                Token::Year2 => push_number(&mut out, d.year().rem_euclid(100) as u32, true),
                Token::MonthName => out.push_str(MONTHS[d.month0() as usize]),
                Token::MonthShort => out.push_str(&MONTHS[d.month0() as usize][..3]),
                Token::Month2 => push_number(&mut out, d.month(), true),
                Token::Month => push_number(&mut out, d.month(), false),
                Token::DayOrdinal => {
                    push_number(&mut out, d.day(), false);
                    out.push_str(ordinal(d.day()));
                }
                Token::Day2 => push_number(&mut out, d.day(), true),
                Token::Day => push_number(&mut out, d.day(), false),
                Token::Weekday => {
                    out.push_str(DAYS[d.weekday().num_days_from_monday() as usize]);
                }
                _ => out.push_str(&DAYS[d.weekday().num_days_from_monday() as usize][..3]),
            }
        } else {
            let t = time.unwrap_or(NaiveTime::MIN);
            let h12 = match t.hour() % 12 {
                0 => 12,
                h => h,
            };
            match tok {
                Token::Hour2 => push_number(&mut out, t.hour(), true),
                Token::Hour => push_number(&mut out, t.hour(), false),
                Token::Hour12Two => push_number(&mut out, h12, true),
                Token::Hour12 => push_number(&mut out, h12, false),
                Token::Minute2 => push_number(&mut out, t.minute(), true),
                Token::Minute => push_number(&mut out, t.minute(), false),
                Token::Second2 => push_number(&mut out, t.second(), true),
                Token::Second => push_number(&mut out, t.second(), false),
                Token::AmPm => out.push_str(if t.hour() < 12 { "AM" } else { "PM" }),
                _ => out.push_str(if t.hour() < 12 { "am" } else { "pm" }),
            }
        }
    }
    Ok(out)
}
