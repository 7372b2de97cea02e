//! Templates: text with `{expr}` placeholders in the expression language ([`super::expr`]).
//!
//! - `{expr}` is replaced by the value of `expr` (see [`super::expr::to_text`] for how values print).
//! - `{{` and `}}` are literal braces. A `}` outside a placeholder is literal as well.
//! - Inside a placeholder, braces, brackets, parentheses and quoted strings nest, so
//!   `{items.map(i => '{' + i + '}').join(', ')}` is one placeholder.
//! - Missing values: a placeholder is missing when it evaluates to nothing (`null`) because a path it
//!   reads has no value; conditionals and fallbacks that handle an absent value (`{a ? a : ''}`,
//!   `{t|'3:00 PM'}`, `{x|default('n/a')}`) are not missing. In lenient mode (the default) a missing
//!   placeholder renders empty and its paths are listed in [`Rendered::missing`]; in strict mode it
//!   is an error. Evaluation errors (type errors, bad dates) are errors in both modes.
//!
//! Errors give the line and column in the template, with the template line and a caret.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use serde_json::Value;

use super::expr::{self, Budget, ExprError, Limits, Pos, Program};

/// Largest template source accepted, in bytes.
pub const MAX_SOURCE: usize = 256 * 1024;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// Literal text (a range of [`Template::literals`]) and where it starts in the source.
    Text(Range<usize>, Pos),
    Slot {
        program: Program,
        start: Pos,
    },
}

/// The error for output over `max` bytes, saying what to do.
fn too_large(max: usize) -> ExprError {
    ExprError::at(
        Pos { line: 1, col: 1 },
        format!("rendered output is larger than {max} bytes: render less (filter long lists first, or cut long text with truncate(n))"),
    )
}

/// A parsed template, ready to render many times.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
    /// The literal text of every text part, one after the other (with `{{` and `}}` undoubled).
    literals: String,
    source: String,
    /// How many distinct top-level variable names the placeholders read (the slots of a render's
    /// cache of top-level values).
    roots: usize,
}

/// How to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderOptions {
    /// A missing value is an error instead of empty text.
    pub strict: bool,
    /// Limits of the render: its placeholders share one budget (see [`Budget::new`]), and
    /// `max_output` caps each value and the whole output.
    pub limits: Limits,
}

/// The output of a render: one text, cut into pieces that say where each part came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    out: String,
    /// Where each piece of `out` ends, and what it is.
    ends: Vec<(usize, Piece)>,
    /// Paths that had no value, in order of first use.
    pub missing: Vec<String>,
}

/// What a piece of rendered output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// Template text, as written.
    Text,
    /// Text a placeholder took from the template's string literals (`'**' + name + '**'`): the
    /// author's markup, as template text is.
    Markup,
    /// A placeholder's value; `raw` when the expression ended in the `raw` filter.
    Value {
        /// Not to be escaped.
        raw: bool,
    },
}

impl Rendered {
    /// The output as plain text (values unescaped).
    pub fn text(&self) -> String {
        self.out.clone()
    }

    /// The output as plain text, without a copy.
    pub fn into_text(self) -> String {
        self.out
    }

    /// The output as plain text, borrowed.
    pub fn as_str(&self) -> &str {
        &self.out
    }

    /// The pieces of the output in order, each with what it is.
    pub fn pieces(&self) -> impl Iterator<Item = (Piece, &str)> {
        let mut start = 0;
        self.ends.iter().map(move |&(end, piece)| {
            let text = &self.out[start..end];
            start = end;
            (piece, text)
        })
    }

    /// Marks the output written since the last piece as `piece`.
    #[inline(always)]
    fn cut(&mut self, piece: Piece) {
        let end = self.out.len();
        if self.ends.last().map_or(0, |(e, _)| *e) < end {
            self.ends.push((end, piece));
        }
    }
}

impl Template {
    /// Parses a template; every placeholder is compiled, so syntax errors surface here.
    ///
    /// One pass over the bytes: every delimiter is ASCII, so a byte equal to one is that character
    /// (UTF-8 continuation bytes never are), and literal text is copied a run at a time into one
    /// buffer that all text parts share.
    pub fn parse(source: &str) -> Result<Template, ExprError> {
        if source.len() > MAX_SOURCE {
            return Err(ExprError::at(
                Pos { line: 1, col: 1 },
                format!("template is larger than {MAX_SOURCE} bytes"),
            ));
        }
        let bytes = source.as_bytes();
        let mut parts = Vec::new();
        let mut slots = HashMap::new();
        let mut literals = String::with_capacity(source.len());
        let mut pos = Pos { line: 1, col: 1 };
        let mut text_start = pos;
        // Where the text part being built starts in `literals`, and where the run of source text
        // not yet copied there starts.
        let mut text_from = 0;
        let mut run = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if (b == b'{' || b == b'}') && bytes.get(i + 1) == Some(&b) {
                // The run up to and with the first brace; the second is dropped.
                literals.push_str(&source[run..=i]);
                pos.col += 2;
                i += 2;
                run = i;
                continue;
            }
            if b != b'{' {
                expr::advance(&mut pos, &[b]);
                i += 1;
                continue;
            }
            literals.push_str(&source[run..i]);
            let open = pos;
            let end = slot_end(bytes, i).ok_or_else(|| {
                ExprError::at(
                    open,
                    "placeholder is not closed: add '}' (write '{{' for a literal brace)".into(),
                )
                .with_source(source)
            })?;
            let start = Pos {
                line: open.line,
                col: open.col + 1,
            };
            let mut program = expr::compile(&source[i + 1..end]).map_err(|e| {
                let mut e = e.offset(start);
                e.excerpt = None;
                e.with_source(source)
            })?;
            if literals.len() > text_from {
                parts.push(Part::Text(text_from..literals.len(), text_start));
                text_from = literals.len();
            }
            program.number_roots(&mut slots);
            parts.push(Part::Slot { program, start });
            expr::advance(&mut pos, &bytes[i..=end]);
            text_start = pos;
            i = end + 1;
            run = i;
        }
        literals.push_str(&source[run..]);
        if literals.len() > text_from {
            parts.push(Part::Text(text_from..literals.len(), text_start));
        }
        literals.shrink_to_fit();
        Ok(Template {
            parts,
            literals,
            source: source.to_string(),
            roots: slots.len(),
        })
    }

    /// Renders against `vars`. All placeholders share one [`Budget`] (see [`Budget::new`]: it grows
    /// with the template and the variables), and the output is capped at `limits.max_output` while
    /// it is built.
    pub fn render(&self, vars: &Value, opts: RenderOptions) -> Result<Rendered, ExprError> {
        let mut budget = Budget::new(opts.limits, self.source.len(), vars);
        let mut r = Rendered {
            out: String::with_capacity(self.source.len() + self.source.len() / 2),
            ends: Vec::with_capacity(self.parts.len()),
            missing: Vec::new(),
        };
        let mut seen: HashSet<String> = HashSet::new();
        let mut roots = vec![None; self.roots];
        let max = opts.limits.max_output;
        for part in &self.parts {
            let relocate = |e: ExprError, start: Pos| {
                let mut e = e.offset(start);
                e.excerpt = None;
                e.with_source(&self.source)
            };
            match part {
                Part::Text(range, start) => {
                    let t = &self.literals[range.clone()];
                    if r.out.len() + t.len() > max {
                        return Err(relocate(too_large(max), *start));
                    }
                    budget
                        .spend_bytes(t.len(), Pos { line: 1, col: 1 })
                        .map_err(|e| relocate(e, *start))?;
                    r.out.push_str(t);
                    r.cut(Piece::Text);
                }
                Part::Slot { program, start } => {
                    let from = r.out.len();
                    let mut out = program
                        .print(vars, &mut budget, &mut roots, &mut r.out, max)
                        .map_err(|e| relocate(e, *start))?;
                    // Only a placeholder that renders nothing because of missing data counts: a
                    // conditional or a fallback that handled the absence produced a value.
                    if !out.null {
                        out.missing.clear();
                    }
                    if opts.strict {
                        if let Some(path) = out.missing.first() {
                            return Err(relocate(
                                ExprError::at(
                                    Pos { line: 1, col: 1 },
                                    format!("missing value for {path}: provide it, or render without strict mode (a missing value then renders empty, with a warning)"),
                                ),
                                *start,
                            ));
                        }
                    }
                    if !out.missing.is_empty() {
                        for m in out.missing {
                            if seen.insert(m.clone()) {
                                r.missing.push(m);
                            }
                        }
                    }
                    if out.raw || out.markup.is_empty() {
                        r.cut(Piece::Value { raw: out.raw });
                    } else {
                        // The markup ranges count from the start of the output; what lies between
                        // them is the value's data.
                        let end = r.out.len();
                        let mut at = from;
                        for m in &out.markup {
                            if m.start > at {
                                r.ends.push((m.start, Piece::Value { raw: false }));
                            }
                            r.ends.push((m.end, Piece::Markup));
                            at = m.end;
                        }
                        if at < end {
                            r.ends.push((end, Piece::Value { raw: false }));
                        }
                    }
                }
            }
        }
        Ok(r)
    }

    /// Every variable path the placeholders read (for checking against a template's schema).
    pub fn variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for p in &self.parts {
            if let Part::Slot { program, .. } = p {
                for v in program.variables() {
                    if seen.insert(v.clone()) {
                        out.push(v);
                    }
                }
            }
        }
        out
    }
}

/// The index of the `}` that closes the placeholder opened at `open`, skipping nested brackets and
/// quoted strings. Works on bytes: every character it looks for is ASCII.
fn slot_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut i = open + 1;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) => {
                if c == b'\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' => depth = depth.saturating_sub(1),
                b'}' if depth == 0 => return Some(i),
                b'}' => depth -= 1,
                _ => {}
            },
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(src: &str, vars: Value) -> Rendered {
        Template::parse(src)
            .unwrap()
            .render(&vars, RenderOptions::default())
            .unwrap()
    }

    #[test]
    fn substitutes_placeholders_and_literal_braces() {
        let r = render(
            "Dear {client.name}, {{literal}} and }",
            json!({"client": {"name": "Ana"}}),
        );
        assert_eq!(r.text(), "Dear Ana, {literal} and }");
        let r = render(
            "{items.map(i => '{' + i + '}').join(', ')}",
            json!({"items": ["a", "b"]}),
        );
        assert_eq!(r.text(), "{a}, {b}");
        let r = render("{'it\\'s'}", json!({}));
        assert_eq!(r.text(), "it's");
    }

    #[test]
    fn missing_values_render_empty_or_fail_in_strict_mode() {
        let t = Template::parse(
            "Hi {client.name}{client.title ? ' ' + client.title : ''}, {agent.name}",
        )
        .unwrap();
        let r = t
            .render(
                &json!({"client": {"name": "Ana"}}),
                RenderOptions::default(),
            )
            .unwrap();
        assert_eq!(r.text(), "Hi Ana, ");
        assert_eq!(
            r.missing,
            vec!["agent"],
            "the guarded client.title is not missing"
        );
        let e = t
            .render(
                &json!({"client": {"name": "Ana"}}),
                RenderOptions {
                    strict: true,
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(e.message.contains("missing value for agent"), "{e}");
        assert_eq!((e.pos.line, e.pos.col), (1, 60));
    }

    #[test]
    fn errors_point_into_the_template() {
        let e = Template::parse("line one\nTotal: {price|currency(}").unwrap_err();
        assert_eq!(e.pos.line, 2);
        assert!(e.to_string().contains("Total: {price|currency(}"), "{e}");
        let e = Template::parse("Hello {name").unwrap_err();
        assert!(e.message.contains("not closed"), "{e}");
        let e = Template::parse("a\n  {x / y}")
            .unwrap()
            .render(&json!({"x": 1, "y": 0}), RenderOptions::default())
            .unwrap_err();
        assert_eq!((e.pos.line, e.pos.col), (2, 6));
        // Columns count characters, not bytes, before and after doubled braces.
        for src in ["héllo {x / y}", "{{é}} {x / y}"] {
            let e = Template::parse(src)
                .unwrap()
                .render(&json!({"x": 1, "y": 0}), RenderOptions::default())
                .unwrap_err();
            assert_eq!((e.pos.line, e.pos.col), (1, 10), "{src}");
        }
    }

    #[test]
    fn values_are_marked_for_escaping_unless_raw() {
        let r = render("{a}{b|raw}", json!({"a": "<i>", "b": "<b>"}));
        assert_eq!(
            r.pieces().collect::<Vec<_>>(),
            vec![
                (Piece::Value { raw: false }, "<i>"),
                (Piece::Value { raw: true }, "<b>")
            ]
        );
        let r = render("x{'**' + a + '**'}", json!({"a": "<i>"}));
        assert_eq!(
            r.pieces().collect::<Vec<_>>(),
            vec![
                (Piece::Text, "x"),
                (Piece::Markup, "**"),
                (Piece::Value { raw: false }, "<i>"),
                (Piece::Markup, "**")
            ]
        );
    }

    #[test]
    fn output_size_is_capped() {
        let t = Template::parse("{s}{s}{s}").unwrap();
        let opts = RenderOptions {
            strict: false,
            limits: Limits {
                fuel: 1000,
                max_output: 100,
            },
        };
        assert!(t
            .render(&json!({"s": "x".repeat(40)}), opts)
            .unwrap_err()
            .message
            .contains("larger than"));
    }

    #[test]
    fn lists_the_variables_used() {
        let t = Template::parse("{client.name} {trip.days > 1 ? 's' : ''} {items.map(i => i.n)}")
            .unwrap();
        assert_eq!(t.variables(), vec!["client.name", "trip.days", "items"]);
    }

    #[test]
    fn renders_the_seed_trip_confirmation_template() {
        let t =
            Template::parse(include_str!("testdata/trip-confirmation-comprehensive.txt")).unwrap();
        let vars = json!({
            "client": { "name": "Sarah Johnson", "tier": "vip" },
            "trip": {
                "trip_type": "anniversary", "duration_days": 7,
                "destination": { "city": "Paris", "country": "France", "visa_required": false, "special_items": ["Plug adapter"] },
                "travelers": { "adults": 2, "children": 0 },
                "departure_date": "2025-06-15", "return_date": "2025-06-22",
                "special_occasions": ["10th anniversary"]
            },
            "flight": {
                "departure_time": "09:30", "return_time": "17:45",
                "outbound": { "airline": "Air France", "flight_number": "AF 7", "departure_time": "9:30 AM",
                              "departure_airport": "JFK", "arrival_time": "10:45 PM", "arrival_airport": "CDG" },
                "return": { "airline": "Air France", "flight_number": "AF 8", "departure_time": "5:45 PM",
                            "departure_airport": "CDG", "arrival_time": "8:10 PM", "arrival_airport": "JFK" }
            },
            "booking": { "package_tier": "Premium", "reference_number": "SOMO-2025-0615" },
            "pricing": { "final_total": 14750, "package_price": 12500, "extras": 1250, "taxes": 1000,
                         "total_paid": 14750, "remaining_balance": 0 },
            "hotel": { "name": "Le Meurice", "rating": 5, "address": "228 Rue de Rivoli", "room_type": "Deluxe",
                       "amenities": ["Spa", "Butler service"] },
            "activities": [ { "name": "Louvre", "description": "Private tour", "date": "June 16" } ],
            "support": { "vip_phone": "+1 555 0100", "emergency_phone": "+1 555 0199" },
            "agent": { "name": "Kim Henderson", "title": "Senior Travel Consultant", "agency": "Somo Travel",
                       "phone": "+1 555 0123", "email": "kim@somotravel.example", "contact_signature": "somotravel.example" },
            "session": { "id": "S-1" },
            "current_date": "2025-06-01"
        });
        let r = t
            .render(
                &vars,
                RenderOptions {
                    strict: true,
                    ..Default::default()
                },
            )
            .unwrap();
        let out = r.text();
        for expected in [
            "Subject: Your Paris Adventure is Confirmed!",
            "**Travelers:** Sarah Johnson\n",
            "**Departure:** June 15, 2025 at 9:30 AM",
            "**Return:** June 22, 2025 at 5:45 PM",
            "**Total Investment:** $14,750.00",
            "**Check-in:** June 15 after 3:00 PM",
            "**Special Amenities:** Spa, Butler service",
            "• **Louvre** - Private tour (June 16)",
            "- Remaining Balance: $0.00\n",
            "**VIP Concierge:** Available 24/7 at +1 555 0100",
            "We're honored to be part of your 10th anniversary celebration!",
            "- Plug adapter",
            "*This confirmation was generated on June 01, 2025 | Booking Reference: SOMO-2025-0615 | Session: S-1*",
        ] {
            assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
        }
        assert!(!out.contains('{'), "every placeholder was replaced:\n{out}");
    }
}
