//! Incremental parser of a model's streamed answer: plain text, and tool calls written as
//! `<tool_call name="search_flights" args={"origin":"SFO"}></tool_call>`.
//!
//! The answer arrives in chunks split anywhere — inside the tag, inside a multi-byte character's
//! neighbourhood, inside the JSON — so the parser is a character-level state machine that never
//! looks back: text is released as soon as it cannot be the start of a tag, and a tag is held until
//! it is complete. The arguments are scanned as JSON (strings and escapes tracked), so `>` or
//! `</tool_call>` inside a JSON string does not end the tag; a `</tool_call>` outside a string
//! while the JSON is still open does, as a malformed call. A malformed call is reported with its
//! raw text and what was wrong, so the model can be told and write it again.

use serde_json::Value;

const OPEN: &str = "<tool_call";
const CLOSE: &str = "</tool_call>";
/// A tag longer than this (in bytes) is reported as malformed instead of being buffered further.
pub const MAX_TAG_BYTES: usize = 65_536;

/// One piece of the model's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// Text for the user.
    Text(String),
    /// A well-formed tool call.
    Call {
        /// The tool's name as the model wrote it.
        name: String,
        /// The parsed arguments.
        args: Value,
    },
    /// Something that started as a tool call but is not one.
    Malformed {
        /// The raw text of the tag, as the model wrote it.
        raw: String,
        /// What was wrong, for the corrective message.
        reason: String,
    },
}

/// Where the parser is inside a tag.
#[derive(Debug, Clone, PartialEq)]
enum Tag {
    /// Right after `<tool_call`: the next character must separate it from attributes.
    AfterOpen,
    /// Between attributes.
    Space,
    /// Reading an attribute name.
    AttrName(String),
    /// After `name=`: waiting for the opening quote.
    BeforeValue(String),
    /// Inside a quoted attribute value.
    Quoted {
        attr: String,
        quote: char,
        value: String,
    },
    /// Inside the JSON value of `args`.
    Json {
        depth: usize,
        in_string: bool,
        escaped: bool,
        value: String,
    },
    /// After `/` inside the open tag: `>` must follow (self-closing tag).
    SelfClosing,
    /// After the open tag's `>`: whitespace, then `</tool_call>`; `matched` characters of it seen.
    Closing { matched: usize },
    /// The tag is malformed: skip to `</tool_call>` (`matched` characters of it seen).
    Skip { reason: String, matched: usize },
}

#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Plain text; `pending` is a suffix that may be the start of `<tool_call`.
    Text { pending: String },
    /// Inside a tag.
    Tag(Tag),
}

impl State {
    /// Plain text with nothing held.
    const TEXT: State = State::Text {
        pending: String::new(),
    };
}

/// The streaming parser. Feed chunks with [`Parser::push`], then call [`Parser::finish`].
#[derive(Debug, Clone)]
pub struct Parser {
    state: State,
    /// The raw text of the current tag.
    raw: String,
    name: Option<String>,
    args: Option<String>,
    out: Vec<Item>,
    text: String,
}

impl Default for Parser {
    fn default() -> Self {
        Parser {
            state: State::TEXT,
            raw: String::new(),
            name: None,
            args: None,
            out: Vec::new(),
            text: String::new(),
        }
    }
}

impl Parser {
    /// A parser at the start of an answer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; returns the items completed by it (text is released as early as possible).
    pub fn push(&mut self, chunk: &str) -> Vec<Item> {
        for c in chunk.chars() {
            self.step(c);
        }
        self.flush_text();
        std::mem::take(&mut self.out)
    }

    /// Ends the answer: held text is released, and an unfinished tag is reported as malformed.
    pub fn finish(mut self) -> Vec<Item> {
        match std::mem::replace(&mut self.state, State::TEXT) {
            State::Text { pending } => self.text.push_str(&pending),
            State::Tag(tag) => {
                self.flush_text();
                let reason = match tag {
                    Tag::Skip { reason, .. } => reason,
                    _ => "the answer ended inside the tool call; close it with </tool_call>".into(),
                };
                self.malformed(reason);
            }
        }
        self.flush_text();
        self.out
    }

    fn flush_text(&mut self) {
        if !self.text.is_empty() {
            self.out.push(Item::Text(std::mem::take(&mut self.text)));
        }
    }

    fn step(&mut self, c: char) {
        let state = std::mem::replace(&mut self.state, State::TEXT);
        self.state = match state {
            State::Text { mut pending } => {
                pending.push(c);
                if pending == OPEN {
                    self.flush_text();
                    self.raw = pending;
                    self.name = None;
                    self.args = None;
                    State::Tag(Tag::AfterOpen)
                } else if OPEN.starts_with(pending.as_str()) {
                    State::Text { pending }
                } else {
                    // The held text is not a tag start; only its last `<` may begin one.
                    let keep = if c == '<' {
                        pending.pop();
                        "<".to_string()
                    } else {
                        String::new()
                    };
                    self.text.push_str(&pending);
                    State::Text { pending: keep }
                }
            }
            State::Tag(tag) => {
                self.raw.push(c);
                if self.raw.len() > MAX_TAG_BYTES {
                    self.malformed(format!(
                        "the tool call is longer than {MAX_TAG_BYTES} bytes"
                    ));
                    State::TEXT
                } else {
                    self.tag_step(tag, c)
                }
            }
        };
    }

    fn tag_step(&mut self, tag: Tag, c: char) -> State {
        let skip = |reason: String| State::Tag(Tag::Skip { reason, matched: 0 });
        match tag {
            Tag::AfterOpen if c.is_whitespace() => State::Tag(Tag::Space),
            Tag::AfterOpen if c.is_alphanumeric() || c == '_' || c == '-' => {
                // `<tool_calls…` or similar: not our tag after all, just text.
                self.text.push_str(&std::mem::take(&mut self.raw));
                State::TEXT
            }
            Tag::AfterOpen | Tag::Space => match c {
                c if c.is_whitespace() => State::Tag(Tag::Space),
                // The open tag ended: the close tag must follow.
                '>' => State::Tag(Tag::Closing { matched: 0 }),
                '/' => State::Tag(Tag::SelfClosing),
                c if c.is_ascii_alphabetic() || c == '_' => {
                    State::Tag(Tag::AttrName(c.to_string()))
                }
                other => skip(format!("unexpected {other:?} in the tool_call tag")),
            },
            Tag::AttrName(mut attr) => match c {
                c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {
                    attr.push(c);
                    State::Tag(Tag::AttrName(attr))
                }
                '=' => State::Tag(Tag::BeforeValue(attr)),
                _ => skip(format!("attribute {attr:?} has no value (write {attr}=…)")),
            },
            Tag::BeforeValue(attr) => match c {
                '"' | '\'' => State::Tag(Tag::Quoted {
                    attr,
                    quote: c,
                    value: String::new(),
                }),
                '{' if attr == "args" => State::Tag(Tag::Json {
                    depth: 1,
                    in_string: false,
                    escaped: false,
                    value: "{".into(),
                }),
                _ if attr == "args" => skip(
                    "args must be a JSON object written directly after args=, as args={\"key\":\"value\"}"
                        .into(),
                ),
                _ => skip(format!("the value of {attr} must be in double quotes")),
            },
            Tag::Quoted {
                attr,
                quote,
                mut value,
            } => {
                if c != quote {
                    value.push(c);
                    return State::Tag(Tag::Quoted { attr, quote, value });
                }
                match attr.as_str() {
                    "name" if self.name.is_none() => {
                        self.name = Some(value);
                        State::Tag(Tag::Space)
                    }
                    // Some models quote the JSON: accept it when the quoted text is the JSON.
                    "args" if self.args.is_none() => {
                        self.args = Some(value);
                        State::Tag(Tag::Space)
                    }
                    "name" | "args" => skip(format!("{attr} is given twice")),
                    other => skip(format!(
                        "unknown attribute {other:?}; a tool call has only name and args"
                    )),
                }
            }
            Tag::Json {
                mut depth,
                mut in_string,
                mut escaped,
                mut value,
            } => {
                value.push(c);
                if in_string {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        in_string = false;
                    }
                } else {
                    match c {
                        '"' => in_string = true,
                        '{' | '[' => depth += 1,
                        '}' | ']' => depth -= 1,
                        _ => {}
                    }
                    if value.ends_with(CLOSE) {
                        self.malformed(
                            "args is not a complete JSON object: </tool_call> came before its closing }"
                                .into(),
                        );
                        return State::TEXT;
                    }
                }
                if depth == 0 {
                    if self.args.is_some() {
                        return skip("args is given twice".into());
                    }
                    self.args = Some(value);
                    State::Tag(Tag::Space)
                } else {
                    State::Tag(Tag::Json {
                        depth,
                        in_string,
                        escaped,
                        value,
                    })
                }
            }
            Tag::SelfClosing if c == '>' => self.complete(),
            Tag::SelfClosing => skip("expected > after / in the tool_call tag".into()),
            Tag::Closing { matched } => {
                if matched == 0 && c.is_whitespace() {
                    return State::Tag(Tag::Closing { matched });
                }
                if CLOSE[matched..].starts_with(c) {
                    let matched = matched + c.len_utf8();
                    if matched == CLOSE.len() {
                        return self.complete();
                    }
                    return State::Tag(Tag::Closing { matched });
                }
                skip("expected </tool_call> right after the tag's >".into())
            }
            Tag::Skip { reason, matched } => {
                let matched = if CLOSE[matched..].starts_with(c) {
                    matched + c.len_utf8()
                } else if c == '<' {
                    1
                } else {
                    0
                };
                if matched == CLOSE.len() {
                    self.malformed(reason);
                    State::TEXT
                } else {
                    State::Tag(Tag::Skip { reason, matched })
                }
            }
        }
    }

    /// The whole tag has been read: a call, or malformed when name or args are missing or bad.
    fn complete(&mut self) -> State {
        let item = match (self.name.take(), self.args.take()) {
            (None, _) => {
                Err("the name attribute is missing (write name=\"tool_name\")".to_string())
            }
            (Some(name), _) if name.trim().is_empty() => Err("the name attribute is empty".into()),
            (Some(name), None) => Ok((name, Value::Object(Default::default()))),
            (Some(name), Some(text)) => match serde_json::from_str::<Value>(&text) {
                Ok(v @ Value::Object(_)) => Ok((name, v)),
                Ok(_) => Err("args must be a JSON object".into()),
                Err(e) => Err(format!("args is not valid JSON: {e}")),
            },
        };
        match item {
            Ok((name, args)) => {
                self.raw.clear();
                self.out.push(Item::Call {
                    name: name.trim().to_string(),
                    args,
                });
            }
            Err(reason) => self.malformed(reason),
        }
        State::TEXT
    }

    fn malformed(&mut self, reason: String) {
        self.name = None;
        self.args = None;
        self.out.push(Item::Malformed {
            raw: std::mem::take(&mut self.raw),
            reason,
        });
    }
}

/// Parses a whole answer at once (for stored answers and tests).
pub fn parse_all(text: &str) -> Vec<Item> {
    let mut p = Parser::new();
    let mut items = p.push(text);
    items.extend(p.finish());
    merge_text(items)
}

/// Joins adjacent text items (a stream yields text in as many pieces as chunks).
pub fn merge_text(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    for item in items {
        match (out.last_mut(), item) {
            (Some(Item::Text(prev)), Item::Text(t)) => prev.push_str(&t),
            (_, item) => out.push(item),
        }
    }
    out
}

/// The JSON object a model wrote in its reply: from the first `{` to the last `}`, parsed, so
/// prose or a code fence around it does not matter. Chain steps read a model step's outputs this
/// way, and so do the answers to a paused chain task's questions.
pub fn json_object_in(text: &str) -> Option<serde_json::Map<String, Value>> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    match serde_json::from_str(text.get(start..=end)?) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> Item {
        Item::Call {
            name: name.into(),
            args,
        }
    }

    /// Feeds `text` split at every possible pair of positions and checks the result never changes.
    fn same_for_every_split(text: &str) -> Vec<Item> {
        let whole = parse_all(text);
        let idx: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        for (a, &i) in idx.iter().enumerate() {
            for &j in &idx[a..] {
                let mut p = Parser::new();
                let mut items = p.push(&text[..i]);
                items.extend(p.push(&text[i..j]));
                items.extend(p.push(&text[j..]));
                items.extend(p.finish());
                assert_eq!(merge_text(items), whole, "split at {i}/{j} of {text:?}");
            }
        }
        whole
    }

    #[test]
    fn plain_text_passes_through() {
        assert_eq!(
            same_for_every_split("Hello <b>world</b> a<b and <tool_cal"),
            vec![Item::Text("Hello <b>world</b> a<b and <tool_cal".into())]
        );
    }

    #[test]
    fn a_call_split_anywhere_is_one_call_and_its_text_is_not_shown() {
        let text = r#"Let me look.<tool_call name="search_flights" args={"origin":"SFO","n":[1,{"x":2}]}></tool_call>Done."#;
        assert_eq!(
            same_for_every_split(text),
            vec![
                Item::Text("Let me look.".into()),
                call("search_flights", json!({"origin":"SFO","n":[1,{"x":2}]})),
                Item::Text("Done.".into()),
            ]
        );
    }

    #[test]
    fn text_before_a_tag_is_released_before_the_tag_completes() {
        let mut p = Parser::new();
        assert_eq!(p.push("Hi <tool_c"), vec![Item::Text("Hi ".into())]);
        assert_eq!(p.push(r#"all name="a" args={"#), vec![]);
        assert_eq!(p.push("}></tool_call>"), vec![call("a", json!({}))]);
    }

    #[test]
    fn several_calls_in_one_answer() {
        let text = "<tool_call name=\"a\" args={\"x\":1}></tool_call>\n<tool_call name=\"b\" args={}></tool_call>";
        assert_eq!(
            same_for_every_split(text),
            vec![
                call("a", json!({"x":1})),
                Item::Text("\n".into()),
                call("b", json!({})),
            ]
        );
    }

    #[test]
    fn strings_in_args_may_hold_gt_and_the_close_tag() {
        let text =
            r#"<tool_call name="note" args={"text":"a > b </tool_call> \"}\" done"}></tool_call>"#;
        assert_eq!(
            same_for_every_split(text),
            vec![call(
                "note",
                json!({"text":"a > b </tool_call> \"}\" done"})
            )]
        );
    }

    #[test]
    fn bad_json_is_malformed_with_its_raw_text() {
        let raw = r#"<tool_call name="a" args={"x":1,}></tool_call>"#;
        match &same_for_every_split(&format!("ok {raw} after"))[..] {
            [Item::Text(t), Item::Malformed { raw: r, reason }, Item::Text(a)] => {
                assert_eq!(t, "ok ");
                assert_eq!(r, raw);
                assert!(reason.starts_with("args is not valid JSON"), "{reason}");
                assert_eq!(a, " after");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unbalanced_json_ends_at_the_close_tag() {
        let raw = r#"<tool_call name="a" args={"x":1></tool_call>"#;
        match &same_for_every_split(&format!("{raw}next"))[..] {
            [Item::Malformed { raw: r, reason }, Item::Text(t)] => {
                assert_eq!(r, raw);
                assert!(reason.contains("closing }"), "{reason}");
                assert_eq!(t, "next");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn structural_mistakes_are_malformed_and_parsing_goes_on() {
        for (raw, want) in [
            (
                r#"<tool_call args={}></tool_call>"#,
                "name attribute is missing",
            ),
            (r#"<tool_call name=a args={}></tool_call>"#, "double quotes"),
            (
                r#"<tool_call name="a" args=[1]></tool_call>"#,
                "JSON object",
            ),
            (
                r#"<tool_call name="a" kind="x"></tool_call>"#,
                "unknown attribute",
            ),
            (
                r#"<tool_call name="a" args={}>oops</tool_call>"#,
                "expected </tool_call>",
            ),
            (
                r#"<tool_call name="a" args="[1]"></tool_call>"#,
                "must be a JSON object",
            ),
        ] {
            let items = same_for_every_split(&format!("{raw}<tool_call name=\"b\" args={{}}/>"));
            match &items[..] {
                [Item::Malformed { raw: r, reason }, Item::Call { name, .. }] => {
                    assert_eq!(r, raw);
                    assert!(reason.contains(want), "{raw}: {reason}");
                    assert_eq!(name, "b");
                }
                other => panic!("{raw}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_answer_that_stops_inside_a_tag_is_malformed() {
        let items = parse_all(r#"x<tool_call name="a" args={"q":"#);
        assert!(
            matches!(&items[1], Item::Malformed { reason, .. } if reason.contains("ended inside"))
        );
    }

    #[test]
    fn similar_tags_are_text() {
        assert_eq!(
            parse_all("<tool_calls> and <tool_callx"),
            vec![Item::Text("<tool_calls> and <tool_callx".into())]
        );
    }

    #[test]
    fn multibyte_text_and_args_survive() {
        let text = "Grüße 🚀<tool_call name=\"a\" args={\"city\":\"Zürich\"}></tool_call>é";
        assert_eq!(
            same_for_every_split(text),
            vec![
                Item::Text("Grüße 🚀".into()),
                call("a", json!({"city":"Zürich"})),
                Item::Text("é".into()),
            ]
        );
    }

    #[test]
    fn an_endless_tag_is_cut_off() {
        let mut p = Parser::new();
        let mut items = p.push("<tool_call name=\"a\" args={\"x\":\"");
        items.extend(p.push(&"y".repeat(MAX_TAG_BYTES)));
        items.extend(p.push("tail"));
        items.extend(p.finish());
        let items = merge_text(items);
        assert!(
            matches!(&items[0], Item::Malformed { reason, .. } if reason.contains("longer than"))
        );
        assert!(matches!(&items[..], [_, Item::Text(t)] if t.ends_with("ytail")));
    }
}
