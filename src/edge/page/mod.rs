//! The session page served at `GET /sessions/:id`: one static HTML document (its CSS and script
//! inline) that watches `/sessions/:id/events` in the browser and shows each tool event as it
//! arrives.
//!
//! The document is the same for every session (the script reads the id from its own path), so it
//! holds no session data and needs no token: the events it reads stay behind the stream's own
//! rules. Inline code runs under a Content-Security-Policy that names its SHA-256 hashes, so no
//! other script or style (an injected one included) can run, and nothing is loaded from elsewhere.

use std::sync::OnceLock;

use base64::Engine;
use sha2::{Digest, Sha256};

const HTML: &str = include_str!("session.html");
const CSS: &str = include_str!("session.css");
const JS: &str = include_str!("session.js");

/// Where the stylesheet and the script go in `session.html`.
const STYLE_SLOT: &str = "<style></style>";
const SCRIPT_SLOT: &str = "<script></script>";

/// The assembled page and the headers it is served with.
pub struct Page {
    /// The HTML document with its stylesheet and script inline.
    pub html: String,
    /// The response headers: type, Content-Security-Policy and the other hardening headers.
    pub headers: Vec<(&'static str, String)>,
}

/// The page, assembled once per wasm instance.
pub fn page() -> &'static Page {
    static PAGE: OnceLock<Page> = OnceLock::new();
    PAGE.get_or_init(assemble)
}

fn assemble() -> Page {
    let html = HTML
        .replacen(STYLE_SLOT, &format!("<style>{CSS}</style>"), 1)
        .replacen(SCRIPT_SLOT, &format!("<script>{JS}</script>"), 1);
    let csp = format!(
        "default-src 'none'; script-src '{}'; style-src '{}'; connect-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
         require-trusted-types-for 'script'; trusted-types 'none'",
        csp_hash(JS),
        csp_hash(CSS)
    );
    Page {
        html,
        headers: vec![
            ("content-type", "text/html; charset=utf-8".into()),
            ("content-security-policy", csp),
            ("x-content-type-options", "nosniff".into()),
            // The path carries the session id, which is all an anonymous session's watcher needs:
            // keep it out of caches and of the Referer of anything the page links to.
            ("cache-control", "no-store".into()),
            ("referrer-policy", "no-referrer".into()),
            ("x-frame-options", "DENY".into()),
        ],
    }
}

/// A CSP source expression for inline code: `sha256-` and the base64 digest of its exact text.
fn csp_hash(code: &str) -> String {
    let digest = Sha256::digest(code.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn between<'a>(html: &'a str, open: &str, close: &str) -> Vec<&'a str> {
        html.split(open)
            .skip(1)
            .filter_map(|rest| rest.split_once(close).map(|(inner, _)| inner))
            .collect()
    }

    fn header<'a>(p: &'a Page, name: &str) -> &'a str {
        p.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    }

    #[test]
    fn the_policy_names_exactly_the_inline_code() {
        let p = page();
        let scripts = between(&p.html, "<script>", "</script>");
        let styles = between(&p.html, "<style>", "</style>");
        assert_eq!(scripts, vec![JS]);
        assert_eq!(styles, vec![CSS]);
        let csp = header(p, "content-security-policy");
        assert!(csp.contains(&format!("script-src '{}';", csp_hash(scripts[0]))));
        assert!(csp.contains(&format!("style-src '{}';", csp_hash(styles[0]))));
        assert!(csp.starts_with("default-src 'none';"));
        assert!(!csp.contains("unsafe"));
    }

    #[test]
    fn the_page_loads_nothing_else_and_inlines_no_handlers() {
        let html = &page().html;
        assert!(!html.contains(STYLE_SLOT) && !html.contains(SCRIPT_SLOT));
        for banned in [
            "http:", "https:", " src=", " href=", " style=", " onload", " onclick",
        ] {
            assert!(!HTML.contains(banned), "session.html contains {banned:?}");
        }
        assert!(
            !JS.contains("</script"),
            "the script would end the element early"
        );
        assert!(
            !CSS.contains("</style"),
            "the stylesheet would end the element early"
        );
    }

    #[test]
    fn the_script_never_parses_event_data_as_html() {
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!JS.contains(sink), "session.js uses {sink}");
        }
    }

    #[test]
    fn served_with_hardening_headers() {
        let p = page();
        assert_eq!(header(p, "x-content-type-options"), "nosniff");
        assert_eq!(header(p, "referrer-policy"), "no-referrer");
        assert_eq!(header(p, "cache-control"), "no-store");
        assert!(header(p, "content-type").starts_with("text/html"));
    }

    #[test]
    fn the_hash_is_the_one_browsers_compute() {
        // From the CSP spec's example: `alert('Hello, world.');`.
        assert_eq!(
            csp_hash("alert('Hello, world.');"),
            "sha256-qznLcsROx4GACP2dm0UCKCzCG+HiZ1guq6ZZDob/Tng="
        );
    }
}
