//! Turning a rendered template into `text`, `markdown` or `html`, and the template security checks.
//!
//! Text the template wrote is markup: its text and the string literals its placeholders used
//! ([`Piece::Markup`]: `'**' + name + '**'` is bold, `'- ' + items.join('\n- ')` a list). Every
//! value from the variables is escaped exactly once, for the place it lands in:
//! - `text`: values as they are (with `apply_security`, control characters other than newline and
//!   tab are removed);
//! - `markdown`: with `apply_security`, characters that would start Markdown or HTML markup in a
//!   value (`\ * _ ` [ ] < > & | #`) are backslash-escaped, so a value shows as the text it is;
//! - `html`: the template text is Markdown rendered to HTML (CommonMark, with tables and
//!   strikethrough). Values never go through the Markdown renderer: each stands in as a unique
//!   placeholder word and is HTML-escaped into the result afterwards, in an attribute or in text.
//!   With `apply_security`, raw HTML in the template or in `raw` values is shown as text, and links
//!   or images whose URL uses `javascript:`, `vbscript:` or `data:` become `#`; values that land in a
//!   URL attribute get the same check.
//!
//! Literal markup is checked like template text: in `markdown` with `apply_security`, when the
//! template's text and literal markup together would fail [`security_issues`] (a `<script>` split
//! over two literals, `'<scr' + 'ipt>'`, passes the check at creation), the literal markup is
//! escaped as values are. `html` needs no such check: it shows raw HTML as text and neutralises
//! dangerous URLs wherever they come from.

use std::collections::HashSet;

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag};

use super::template::{Piece, Rendered};

/// The output formats of `process_template`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plain text.
    Text,
    /// Markdown text.
    Markdown,
    /// HTML rendered from the Markdown.
    Html,
}

impl Format {
    /// Parses `text`, `markdown` or `html`.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "text" => Some(Format::Text),
            "markdown" => Some(Format::Markdown),
            "html" => Some(Format::Html),
            _ => None,
        }
    }
}

/// Produces the final output.
pub fn finish(r: &Rendered, format: Format, apply_security: bool) -> String {
    match format {
        Format::Text => {
            let mut out = String::with_capacity(r.as_str().len());
            for (piece, t) in r.pieces() {
                match piece {
                    Piece::Value { .. } if apply_security => out.push_str(&strip_controls(t)),
                    _ => out.push_str(t),
                }
            }
            out
        }
        Format::Markdown => {
            let markup_is_data = apply_security && unsafe_markup(r);
            let mut out = String::with_capacity(r.as_str().len());
            for (piece, t) in r.pieces() {
                match piece {
                    Piece::Text => out.push_str(t),
                    Piece::Markup if !markup_is_data => out.push_str(t),
                    Piece::Markup | Piece::Value { raw: false } if apply_security => {
                        out.push_str(&escape_markdown(t))
                    }
                    Piece::Markup | Piece::Value { .. } => out.push_str(t),
                }
            }
            out
        }
        Format::Html => to_html(r, apply_security),
    }
}

/// Whether the template's text and literal markup of this render, together, fail the security
/// check (only worth asking when there is literal markup).
fn unsafe_markup(r: &Rendered) -> bool {
    if !r.pieces().any(|(p, _)| p == Piece::Markup) {
        return false;
    }
    let trusted: String = r
        .pieces()
        .filter_map(|(p, t)| matches!(p, Piece::Text | Piece::Markup).then_some(t))
        .collect();
    !security_issues(&trusted).is_empty()
}

fn strip_controls(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

fn escape_markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in strip_controls(s).chars() {
        if "\\*_`[]<>&|#".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// HTML-escapes text for element content and quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether a URL would run code or embed content when followed (`javascript:`, `vbscript:`, `data:`),
/// ignoring case, whitespace and control characters browsers ignore.
pub fn dangerous_url(url: &str) -> bool {
    let compact: String = url
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .collect::<String>()
        .to_ascii_lowercase();
    ["javascript:", "vbscript:", "data:"]
        .iter()
        .any(|s| compact.starts_with(s))
}

fn sanitize(mut ev: Event<'_>) -> Event<'_> {
    if let Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) = &mut ev {
        if dangerous_url(dest_url) {
            *dest_url = CowStr::Borrowed("#");
        }
    }
    match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        other => other,
    }
}

/// The marker prefix values stand in under while the Markdown is rendered.
const MARKER: &str = "mcpedgevalue";

/// A marker word that appears nowhere in `all`: `mcpedgevalue{n:x}q` for the smallest such `n`.
/// The words already in `all` are collected in one pass, so this is linear in its length.
fn fresh_marker(all: &str) -> String {
    let taken: HashSet<&str> = all
        .match_indices(MARKER)
        .filter_map(|(at, _)| {
            let rest = &all[at + MARKER.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
            (rest.as_bytes().get(digits) == Some(&b'q')).then(|| &rest[..digits])
        })
        .collect();
    let n = (0..=taken.len())
        .find(|n| !taken.contains(format!("{n:x}").as_str()))
        .unwrap_or(taken.len());
    format!("{MARKER}{n:x}q")
}

fn to_html(r: &Rendered, secure: bool) -> String {
    let marker = fresh_marker(r.as_str());
    let mut markdown = String::new();
    let mut values: Vec<&str> = Vec::new();
    for (p, text) in r.pieces() {
        match p {
            Piece::Text | Piece::Markup | Piece::Value { raw: true } => markdown.push_str(text),
            Piece::Value { raw: false } => {
                markdown.push_str(&format!("{marker}{}z", values.len()));
                values.push(text);
            }
        }
    }
    let parser = Parser::new_ext(
        &markdown,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH,
    );
    let mut rendered = String::new();
    if secure {
        html::push_html(&mut rendered, parser.map(sanitize));
    } else {
        html::push_html(&mut rendered, parser);
    }
    let mut out = String::with_capacity(rendered.len());
    // Where the last '<' and '>' of `out` are, kept up to date as text is added, so whether a value
    // lands inside a tag is known without searching `out` again for every value.
    let (mut last_lt, mut last_gt) = (None, None);
    let mut push = |out: &mut String, s: &str| {
        if let Some(i) = s.rfind('<') {
            last_lt = Some(out.len() + i);
        }
        if let Some(i) = s.rfind('>') {
            last_gt = Some(out.len() + i);
        }
        out.push_str(s);
        last_lt.is_some_and(|lt| last_gt.is_none_or(|gt| lt > gt))
    };
    let mut rest = rendered.as_str();
    while let Some(at) = rest.find(&marker) {
        let (before, after) = rest.split_at(at);
        let in_tag = push(&mut out, before);
        let after = &after[marker.len()..];
        // The index is a few hex digits and a 'z': look no further than that.
        let digits = after.bytes().take(20).position(|b| b == b'z').unwrap_or(0);
        match after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|i| values.get(i))
        {
            Some(v) => {
                let attr_url = in_tag && (out.ends_with("href=\"") || out.ends_with("src=\""));
                if secure && attr_url && dangerous_url(v) {
                    push(&mut out, "#");
                } else {
                    push(&mut out, &escape_html(v));
                }
                rest = &after[digits + 1..];
            }
            None => {
                push(&mut out, &marker);
                rest = after;
            }
        }
    }
    push(&mut out, rest);
    out
}

/// Security problems in a template's source, one message each (for `validate_security` at
/// creation): script, iframe, object, embed and frame tags, event-handler attributes, and
/// `javascript:`, `vbscript:` or `data:text/html` URLs.
pub fn security_issues(source: &str) -> Vec<String> {
    let lower = source.to_ascii_lowercase();
    let mut issues = Vec::new();
    for tag in ["script", "iframe", "object", "embed", "frame", "applet"] {
        if lower.contains(&format!("<{tag}")) {
            issues.push(format!("<{tag}> tags are not allowed in templates"));
        }
    }
    let compact: String = lower.chars().filter(|c| !c.is_whitespace()).collect();
    for scheme in ["javascript:", "vbscript:", "data:text/html"] {
        if compact.contains(scheme) {
            issues.push(format!("{scheme} URLs are not allowed in templates"));
        }
    }
    let mut in_tag = false;
    let bytes = lower.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => in_tag = bytes.get(i + 1).is_some_and(u8::is_ascii_alphabetic),
            b'>' => in_tag = false,
            b'o' if in_tag
                && i > 0
                && bytes[i - 1].is_ascii_whitespace()
                && bytes.get(i + 1) == Some(&b'n') =>
            {
                let name_end = bytes[i + 2..]
                    .iter()
                    .position(|c| !c.is_ascii_alphabetic())
                    .map_or(bytes.len(), |p| i + 2 + p);
                let after = lower[name_end..].trim_start();
                if name_end > i + 2 && after.starts_with('=') {
                    issues.push(format!(
                        "event-handler attribute {} is not allowed in templates",
                        &lower[i..name_end]
                    ));
                }
            }
            _ => {}
        }
    }
    issues.dedup();
    issues
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::template::{RenderOptions, Template};
    use serde_json::{json, Value};

    fn out(src: &str, vars: Value, format: Format, secure: bool) -> String {
        let r = Template::parse(src)
            .unwrap()
            .render(&vars, RenderOptions::default())
            .unwrap();
        finish(&r, format, secure)
    }

    #[test]
    fn html_escapes_values_once_and_renders_markdown() {
        let h = out(
            "# Hi {name}\n\n**Total:** {total|currency}",
            json!({"name": "<script>alert(1)</script>", "total": 5}),
            Format::Html,
            true,
        );
        assert_eq!(h, "<h1>Hi &lt;script&gt;alert(1)&lt;/script&gt;</h1>\n<p><strong>Total:</strong> $5.00</p>\n");
        let h = out(
            "{v}",
            json!({"v": "&lt;already&gt; & <b>"}),
            Format::Html,
            true,
        );
        assert_eq!(
            h, "<p>&amp;lt;already&amp;gt; &amp; &lt;b&gt;</p>\n",
            "escaped exactly once"
        );
        let h = out("*{v}*", json!({"v": "a*b_c"}), Format::Html, true);
        assert_eq!(
            h, "<p><em>a*b_c</em></p>\n",
            "markdown in values is not interpreted"
        );
    }

    #[test]
    fn html_attributes_cannot_be_broken_out_of() {
        for (template, url, href) in [
            (
                "[site]({url})",
                "\" onmouseover=\"alert(1)",
                "href=\"&quot; onmouseover=&quot;alert(1)\"",
            ),
            ("[site]({url})", "javascript:alert(1)", "href=\"#\""),
            ("[site]({url})", " JaVa\tScript:alert(1)", "href=\"#\""),
            ("[site](javascript:alert(1))", "", "href=\"#\""),
            (
                "[site]({url})",
                "https://example.com/?a=1&b=2",
                "href=\"https://example.com/?a=1&amp;b=2\"",
            ),
        ] {
            let h = out(template, json!({ "url": url }), Format::Html, true);
            assert!(h.contains(href), "{h}");
        }
    }

    #[test]
    fn raw_html_is_shown_as_text_when_securing() {
        let h = out(
            "<img src=x onerror=alert(1)> {v|raw}",
            json!({"v": "<b>bold</b>"}),
            Format::Html,
            true,
        );
        assert!(!h.contains("<img") && !h.contains("<b>"), "{h}");
        let h = out("{v|raw}", json!({"v": "<b>bold</b>"}), Format::Html, false);
        assert!(h.contains("<b>bold</b>"), "{h}");
    }

    #[test]
    fn text_and_markdown_outputs() {
        for (n, format, secure, want) in [
            ("A\u{7}B\nC", Format::Text, true, "Hi AB\nC"),
            ("*x*", Format::Text, true, "Hi *x*"),
            ("*x* <b>", Format::Markdown, true, "Hi \\*x\\* \\<b\\>"),
            ("*x*", Format::Markdown, false, "Hi *x*"),
        ] {
            assert_eq!(
                out("Hi {n}", json!({ "n": n }), format, secure),
                want,
                "{n:?}"
            );
        }
    }

    #[test]
    fn html_output_is_linear_in_many_values_and_planted_markers() {
        let src = format!(
            "{}{}",
            (0..10_000)
                .map(|i| format!("mcpedgevalue{i:x}q "))
                .collect::<String>(),
            "{v}".repeat(10_000)
        );
        let t = Template::parse(&src).unwrap();
        let r = t
            .render(&json!({"v": "<"}), RenderOptions::default())
            .unwrap();
        let started = std::time::Instant::now();
        let h = finish(&r, Format::Html, true);
        let took = started.elapsed();
        assert!(
            h.ends_with(&format!("{}</p>\n", "&lt;".repeat(10_000))),
            "{}",
            &h[h.len() - 100..]
        );
        assert!(
            h.contains("mcpedgevalue270fq "),
            "planted words stay as written"
        );
        // Before, each value searched the whole output so far and each planted word cost a scan of
        // the text: seconds for this input.
        let limit = if cfg!(debug_assertions) { 1_000 } else { 100 };
        assert!(took.as_millis() < limit, "took {took:?}");
    }

    #[test]
    fn literal_markup_in_placeholders_is_markup_and_values_are_escaped_once() {
        let src = "{'**Concierge:** ' + phone + '\\n'}{items ? '- ' + items.join('\\n- ') : ''}\n\n{acts.map(a => '• **' + a.n + '** (' + a.d + ')').join('\\n')}";
        let vars = json!({
            "phone": "<script>alert(1)</script>",
            "items": ["Adapter *2*", "Umbrella"],
            "acts": [{"n": "Louvre & more", "d": "June 16"}]
        });
        assert_eq!(
            out(src, vars.clone(), Format::Markdown, true),
            "**Concierge:** \\<script\\>alert(1)\\</script\\>\n- Adapter \\*2\\*\n- Umbrella\n\n• **Louvre \\& more** (June 16)"
        );
        assert_eq!(
            out(src, vars.clone(), Format::Html, true),
            "<p><strong>Concierge:</strong> &lt;script&gt;alert(1)&lt;/script&gt;</p>\n<ul>\n<li>Adapter *2*</li>\n<li>Umbrella</li>\n</ul>\n<p>• <strong>Louvre &amp; more</strong> (June 16)</p>\n"
        );
        assert_eq!(
            out(src, vars, Format::Text, true),
            "**Concierge:** <script>alert(1)</script>\n- Adapter *2*\n- Umbrella\n\n• **Louvre & more** (June 16)"
        );
    }

    #[test]
    fn literal_markup_that_would_fail_the_security_check_is_escaped() {
        let src = "Hi {'<scr' + 'ipt>alert(1)</scr' + 'ipt>'} {'**ok**'}";
        let md = out(src, json!({}), Format::Markdown, true);
        assert_eq!(md, "Hi \\<script\\>alert(1)\\</script\\> \\*\\*ok\\*\\*");
        let h = out(src, json!({}), Format::Html, true);
        assert!(!h.contains("<script>"), "{h}");
        let h = out(
            "{'[x](java' + 'script:alert(1))'}",
            json!({}),
            Format::Html,
            true,
        );
        assert!(h.contains("href=\"#\""), "{h}");
        assert_eq!(
            out(src, json!({}), Format::Markdown, false),
            "Hi <script>alert(1)</script> **ok**",
            "apply_security: false leaves the template as written"
        );
    }

    #[test]
    fn security_check_finds_scripts_handlers_and_urls() {
        let issues = security_issues("<SCRIPT>x</script> <a href='JavaScript:go()'> <div onClick = 'x'> <iframe src=a> ok onion=1");
        let all = issues.join("\n");
        assert!(all.contains("<script>"), "{all}");
        assert!(all.contains("javascript:"), "{all}");
        assert!(all.contains("onclick"), "{all}");
        assert!(all.contains("<iframe>"), "{all}");
        assert!(
            !all.contains("onion"),
            "text outside tags is not an attribute: {all}"
        );
        assert!(
            security_issues("Dear {client.name}, see [our site](https://x.example).").is_empty()
        );
    }
}
