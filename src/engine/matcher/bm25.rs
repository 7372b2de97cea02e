//! BM25F ranking (Robertson & Zaragoza, "The Probabilistic Relevance Framework", 2009, §3.7) over
//! short documents with four fields of different weight: a context's name says more than a word in
//! its description.
//!
//! Term frequencies are length-normalised per field, weighted and summed *before* the saturation
//! `tf / (k1 + tf)`, so a term repeated across fields cannot outscore a second distinct query term.
//! Besides the raw score, each hit carries a `similarity` in [0, 1]: the share of the query's
//! information (the sum of its terms' idf, unseen terms counted at the highest idf) that the
//! document covers. Unlike raw BM25 it is comparable across queries, which is what the confidence
//! calibration needs, and a query of words the catalog never uses scores near 0.

use std::cell::RefCell;
use std::collections::HashMap;

use super::text::terms as terms_of;

/// The fields of a document, in the order of [`Document::fields`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The context's name.
    Name = 0,
    /// Its tags.
    Tags = 1,
    /// Requests it is known to answer.
    Examples = 2,
    /// Its description (and activation condition).
    Description = 3,
}

/// How many fields a document has.
pub const FIELDS: usize = 4;

/// The tuning of the ranking function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Saturation: how fast repeated occurrences stop adding to the score.
    pub k1: f64,
    /// Weight of an occurrence in each field (see [`Field`]).
    pub weights: [f64; FIELDS],
    /// Length normalisation of each field: 0 ignores length, 1 divides by it fully.
    pub b: [f64; FIELDS],
}

impl Default for Params {
    /// Names and tags are short and curated (little length normalisation, high weight): a tool's
    /// tags carry its synonyms. Chosen by a grid over k1 and the field weights on the issue-23
    /// training split (catalog and tool requests over the full catalog, the model re-fitted and the
    /// thresholds re-tuned at every point: `cargo run --release --example flowmind_splits --
    /// --grid`); the neighbourhood is flat, so the values are rounded.
    fn default() -> Self {
        Params {
            k1: 1.2,
            weights: [3.0, 4.5, 1.5, 0.5],
            b: [0.3, 0.3, 0.75, 0.75],
        }
    }
}

/// One document's text, field by field (see [`Field`] for the order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    /// The text of each field.
    pub fields: [String; FIELDS],
}

/// A ranked document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Position of the document in the list the index was built from.
    pub doc: usize,
    /// The BM25F score.
    pub score: f64,
    /// The share of the query's information the document covers, in [0, 1].
    pub similarity: f64,
    /// The query terms (stems) found in the document.
    pub matched: Vec<String>,
}

/// The documents containing one term, in document order, each with its share of a score.
#[derive(Debug, Clone, Default)]
struct Postings {
    /// The documents, ascending.
    docs: Vec<u32>,
    /// What the term adds to each document's score, `idf · tf / (k1 + tf)`: it depends on the
    /// document and the term only, so it is computed once, when the index is built.
    scores: Vec<f64>,
}

/// An inverted index over a fixed list of documents.
///
/// A search scores only the documents that contain a query term: it adds each query term's
/// posting list, term after term, into one accumulator per document it meets (term at a time),
/// so its work is the length of those lists, whatever the catalog's size. Results are those of
/// scoring every document: the same documents, the same scores to the bit (a test compares them
/// with the straightforward scorer).
#[derive(Debug, Clone)]
pub struct Index {
    /// Term → its position in `postings`.
    terms: HashMap<String, u32>,
    postings: Vec<Postings>,
    /// How many documents are indexed.
    len: usize,
}

/// An accumulator no posting has touched yet (shares are never negative).
const UNSEEN: f64 = -1.0;

thread_local! {
    /// One score accumulator per document, [`UNSEEN`] between searches: kept from one search to
    /// the next, since filling a new one would cost the catalog's size on every search. A search
    /// puts back every accumulator it touched, so resetting costs what scoring did.
    static ACCUMULATORS: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

impl Index {
    /// Indexes `docs` with `params`.
    pub fn build(docs: &[Document], params: Params) -> Index {
        let mut terms: HashMap<String, u32> = HashMap::new();
        // Per term: (document, occurrences in each field), in document order.
        let mut counts: Vec<Vec<(u32, [u16; FIELDS])>> = Vec::new();
        let mut lengths = Vec::with_capacity(docs.len());
        let mut totals = [0f64; FIELDS];
        for (i, doc) in docs.iter().enumerate() {
            let mut own: HashMap<u32, [u16; FIELDS]> = HashMap::new();
            let mut length = [0u32; FIELDS];
            for (f, text) in doc.fields.iter().enumerate() {
                for term in terms_of(text) {
                    let next = terms.len() as u32;
                    let id = *terms.entry(term).or_insert(next);
                    let slot = own.entry(id).or_default();
                    slot[f] = slot[f].saturating_add(1);
                    length[f] += 1;
                }
                totals[f] += f64::from(length[f]);
            }
            counts.resize(terms.len(), Vec::new());
            for (id, c) in own {
                counts[id as usize].push((i as u32, c));
            }
            lengths.push(length);
        }
        let n = docs.len().max(1) as f64;
        let average = totals.map(|t| (t / n).max(1.0));
        let p = &params;
        let postings = counts
            .into_iter()
            .map(|list| {
                let idf = idf(docs.len(), list.len());
                let mut out = Postings::default();
                for (doc, c) in list {
                    let length = &lengths[doc as usize];
                    let tf: f64 = (0..FIELDS)
                        .map(|f| {
                            let norm = 1.0 - p.b[f] + p.b[f] * f64::from(length[f]) / average[f];
                            p.weights[f] * f64::from(c[f]) / norm
                        })
                        .sum();
                    let score = idf * tf / (p.k1 + tf);
                    out.docs.push(doc);
                    out.scores.push(score);
                }
                out
            })
            .collect();
        Index {
            terms,
            postings,
            len: docs.len(),
        }
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no document is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inverse document frequency, the always-positive variant `ln(1 + (N - df + 0.5) / (df + 0.5))`.
    pub fn idf(&self, term: &str) -> f64 {
        let df = self
            .terms
            .get(term)
            .map_or(0, |&id| self.postings[id as usize].docs.len());
        idf(self.len, df)
    }

    /// The documents matching any term of `query` that `keep` accepts, best first (ties by
    /// position), at most `limit`.
    pub fn search(&self, query: &str, keep: impl Fn(usize) -> bool, limit: usize) -> Vec<Hit> {
        let mut unique = terms_of(query);
        unique.sort();
        unique.dedup();
        let information: f64 = unique.iter().map(|t| self.idf(t)).sum();
        // The query's terms the index knows, in the order of `unique`: a document's score adds
        // their shares in this order, as the straightforward scorer does.
        let lists: Vec<(&String, &Postings)> = unique
            .iter()
            .filter_map(|t| Some((t, &self.postings[*self.terms.get(t)? as usize])))
            .collect();
        let top = self.top(&lists, &keep, limit);
        top.into_iter()
            .map(|(score, doc)| Hit {
                doc: doc as usize,
                score,
                similarity: if information > 0.0 {
                    (score / information).clamp(0.0, 1.0)
                } else {
                    0.0
                },
                matched: lists
                    .iter()
                    .filter(|(_, p)| p.docs.binary_search(&doc).is_ok())
                    .map(|(t, _)| (*t).clone())
                    .collect(),
            })
            .collect()
    }

    /// The first `limit` (score, document) of the documents in `lists` that `keep` accepts, by
    /// score, ties by position.
    ///
    /// A document's score adds its shares in the order of `lists`, starting from 0, as the
    /// straightforward scorer does, so the sums agree to the bit. The documents are then taken
    /// in the order they were first met, and one enters the first `limit` only when it beats
    /// their last (higher score, or the same score and an earlier position); `keep` is asked
    /// only of those.
    fn top(
        &self,
        lists: &[(&String, &Postings)],
        keep: &dyn Fn(usize) -> bool,
        limit: usize,
    ) -> Vec<(f64, u32)> {
        let mut held: Vec<(f64, u32)> = Vec::with_capacity(limit + 1);
        if limit == 0 {
            return held;
        }
        let scored: Vec<(f64, u32)> = ACCUMULATORS.with(|a| {
            let mut acc = a.borrow_mut();
            if acc.len() < self.len {
                acc.resize(self.len, UNSEEN);
            }
            let mut met: Vec<u32> =
                Vec::with_capacity(lists.iter().map(|(_, p)| p.docs.len()).sum());
            for (_, p) in lists {
                for (&doc, &share) in p.docs.iter().zip(&p.scores) {
                    let sum = &mut acc[doc as usize];
                    if *sum == UNSEEN {
                        met.push(doc);
                        *sum = 0.0;
                    }
                    *sum += share;
                }
            }
            met.into_iter()
                .map(|doc| {
                    let sum = std::mem::replace(&mut acc[doc as usize], UNSEEN);
                    (sum, doc)
                })
                .collect()
        });
        let before = |a: &(f64, u32), b: &(f64, u32)| a.0 > b.0 || (a.0 == b.0 && a.1 < b.1);
        for hit in scored {
            if held.len() == limit && !before(&hit, &held[limit - 1]) {
                continue;
            }
            if !keep(hit.1 as usize) {
                continue;
            }
            let place = held.partition_point(|h| before(h, &hit));
            held.insert(place, hit);
            held.truncate(limit);
        }
        held
    }
}

/// The always-positive idf of a term found in `df` of `n` documents.
fn idf(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, tags: &str, examples: &str, description: &str) -> Document {
        Document {
            fields: [name, tags, examples, description].map(str::to_string),
        }
    }

    fn catalog() -> Vec<Document> {
        vec![
            doc(
                "Incident response",
                "incident outage production on-call",
                "The checkout API is down in production",
                "Coordinate the response to a production outage: triage, mitigate, communicate.",
            ),
            doc(
                "Code review",
                "review pull-request quality",
                "Review my pull request for the payment service",
                "Review a change for correctness, security and style.",
            ),
            doc(
                "Novel planning",
                "writing fiction plot characters",
                "Help me plan the plot of my fantasy novel",
                "Plan a novel: premise, characters, plot outline and chapters.",
            ),
            doc(
                "GDPR review",
                "privacy gdpr compliance eu",
                "Is our newsletter signup GDPR compliant?",
                "Review data processing for GDPR compliance and list the gaps.",
            ),
        ]
    }

    /// The straightforward scorer: every posting of every query term into a map of scores.
    struct Straightforward {
        params: Params,
        postings: HashMap<String, Vec<(u32, [u16; FIELDS])>>,
        lengths: Vec<[u32; FIELDS]>,
        average: [f64; FIELDS],
    }

    impl Straightforward {
        fn build(docs: &[Document], params: Params) -> Straightforward {
            let mut postings: HashMap<String, Vec<(u32, [u16; FIELDS])>> = HashMap::new();
            let mut lengths = Vec::new();
            let mut totals = [0f64; FIELDS];
            for (i, doc) in docs.iter().enumerate() {
                let mut counts: HashMap<String, [u16; FIELDS]> = HashMap::new();
                let mut length = [0u32; FIELDS];
                for (f, text) in doc.fields.iter().enumerate() {
                    for term in terms_of(text) {
                        let slot = counts.entry(term).or_default();
                        slot[f] = slot[f].saturating_add(1);
                        length[f] += 1;
                    }
                    totals[f] += f64::from(length[f]);
                }
                for (term, c) in counts {
                    postings.entry(term).or_default().push((i as u32, c));
                }
                lengths.push(length);
            }
            let average = totals.map(|t| (t / docs.len().max(1) as f64).max(1.0));
            Straightforward {
                params,
                postings,
                lengths,
                average,
            }
        }

        fn idf(&self, term: &str) -> f64 {
            let n = self.lengths.len() as f64;
            let df = self.postings.get(term).map_or(0, Vec::len) as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        }

        fn search(&self, query: &str, keep: impl Fn(usize) -> bool, limit: usize) -> Vec<Hit> {
            let mut unique = terms_of(query);
            unique.sort();
            unique.dedup();
            let information: f64 = unique.iter().map(|t| self.idf(t)).sum();
            let mut found: HashMap<u32, (f64, Vec<String>)> = HashMap::new();
            let p = &self.params;
            for term in &unique {
                let Some(list) = self.postings.get(term) else {
                    continue;
                };
                let idf = self.idf(term);
                for (doc, counts) in list {
                    if !keep(*doc as usize) {
                        continue;
                    }
                    let length = &self.lengths[*doc as usize];
                    let tf: f64 = (0..FIELDS)
                        .map(|f| {
                            let norm =
                                1.0 - p.b[f] + p.b[f] * f64::from(length[f]) / self.average[f];
                            p.weights[f] * f64::from(counts[f]) / norm
                        })
                        .sum();
                    let entry = found.entry(*doc).or_default();
                    entry.0 += idf * tf / (p.k1 + tf);
                    entry.1.push(term.clone());
                }
            }
            let mut hits: Vec<Hit> = found
                .into_iter()
                .map(|(doc, (score, matched))| Hit {
                    doc: doc as usize,
                    score,
                    similarity: if information > 0.0 {
                        (score / information).clamp(0.0, 1.0)
                    } else {
                        0.0
                    },
                    matched,
                })
                .collect();
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
            hits.truncate(limit);
            hits
        }
    }

    /// A generated corpus of `n` documents over a small vocabulary (so terms are shared and
    /// scores tie), every 7th a copy of an earlier one.
    fn generated(n: usize, seed: u64) -> Vec<Document> {
        let vocab: Vec<String> = (0..150).map(|i| format!("w{i}x")).collect();
        let mut state = seed;
        let mut next = move |k: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % k
        };
        let mut docs: Vec<Document> = Vec::new();
        for i in 0..n {
            if i % 7 == 6 {
                let copy = docs[next(i)].clone();
                docs.push(copy);
                continue;
            }
            // Skewed draws, so some terms are in most documents and others in few.
            let mut words = |k: usize| {
                (0..k)
                    .map(|_| {
                        let spread = next(vocab.len()) + 1;
                        vocab[next(spread)].as_str()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let fields = [
                words(1 + i % 3),
                words(2 + i % 4),
                words(4 + i % 9),
                words(6 + i % 25),
            ];
            docs.push(Document { fields });
        }
        docs
    }

    #[test]
    fn the_index_returns_what_scoring_every_document_returns_to_the_bit() {
        let params = [
            Params::default(),
            Params {
                k1: 0.5,
                weights: [1.0, 0.0, 2.0, 0.25],
                b: [0.0, 1.0, 0.5, 0.75],
            },
        ];
        let mut checked = 0;
        for (c, p) in params.iter().enumerate() {
            let docs = generated(1500, 7 + c as u64);
            let index = Index::build(&docs, *p);
            let reference = Straightforward::build(&docs, *p);
            let mut state = 99u64 + c as u64;
            for q in 0..200 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                let k = 1 + (state >> 40) as usize % 9;
                let query: Vec<String> = (0..k)
                    .map(|j| format!("w{}x", (state >> (j * 5 % 40)) as usize % 160))
                    .collect();
                let query = query.join(" ");
                for limit in [1, 3, 20, 50, 5000] {
                    let keep = |d: usize| q % 3 != 0 || d % 4 != 1;
                    let fast = index.search(&query, keep, limit);
                    let slow = reference.search(&query, keep, limit);
                    assert_eq!(fast.len(), slow.len(), "{query} limit {limit}");
                    for (a, b) in fast.iter().zip(&slow) {
                        assert_eq!(a.doc, b.doc, "{query} limit {limit}");
                        assert_eq!(a.score.to_bits(), b.score.to_bits(), "{query}");
                        assert_eq!(a.similarity.to_bits(), b.similarity.to_bits(), "{query}");
                        assert_eq!(a.matched, b.matched, "{query}");
                    }
                    checked += fast.len();
                }
            }
        }
        assert!(checked > 10_000, "the queries hit documents: {checked}");
    }

    #[test]
    fn ranks_the_document_whose_name_and_tags_carry_the_query_first() {
        let index = Index::build(&catalog(), Params::default());
        let hits = index.search("production outage on the checkout service", |_| true, 5);
        assert_eq!(hits[0].doc, 0, "{hits:?}");
        let hits = index.search("plot and characters for a fantasy novel", |_| true, 5);
        assert_eq!(hits[0].doc, 2, "{hits:?}");
        assert_eq!(hits.len(), 1, "no other document shares a term: {hits:?}");
        let hits = index.search("GDPR compliance review of our signup", |_| true, 5);
        assert_eq!(hits[0].doc, 3, "{hits:?}");
        assert_eq!(hits[1].doc, 1, "shares only `review`: {hits:?}");
        assert!(hits[0].score > 2.0 * hits[1].score);
    }

    #[test]
    fn similarity_is_comparable_and_low_for_unknown_words() {
        let index = Index::build(&catalog(), Params::default());
        let strong = index.search("incident response for a production outage", |_| true, 1);
        assert!(strong[0].similarity > 0.5, "{strong:?}");
        let weak = index.search(
            "bake sourdough bread with rye flour and outage",
            |_| true,
            1,
        );
        assert!(weak[0].similarity < 0.2, "{weak:?}");
        assert!(index.search("bake sourdough bread", |_| true, 5).is_empty());
        assert!(index.search("", |_| true, 5).is_empty());
    }

    #[test]
    fn filters_limits_and_breaks_ties_by_position() {
        let index = Index::build(&catalog(), Params::default());
        let hits = index.search("review", |d| d != 1, 5);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), vec![3]);
        let twins = Index::build(
            &[doc("", "", "", "xylophone"), doc("", "", "", "xylophone")],
            Params::default(),
        );
        let hits = twins.search("xylophone", |_| true, 1);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].doc, 0);
        assert!(Index::build(&[], Params::default()).is_empty());
    }
}
