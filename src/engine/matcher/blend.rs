//! Blending embedding similarity into the matcher's text similarity (`docs/flowmind.md`,
//! "Embedding blend").
//!
//! The confidence model ([`super::Model`]) was fitted on BM25F similarity, a share of the request's
//! information in [0, 1] where 0 means "shares nothing" and values above about 0.5 mean "clearly
//! about this". Cosine similarity of bge-small embeddings lives on another scale: unrelated English
//! texts rarely fall below about 0.5 and paraphrases reach about 0.9. So the cosine is first mapped
//! onto the text similarity's scale ([`Blend::embedding_similarity`]), then mixed with it
//! ([`Blend::similarity`]); the mix takes the text similarity's place in the model, and the
//! relative signal is recomputed from the mixed values. A request that shares no words with a
//! context but means the same thing thus gets the similarity a half-matching text would, instead
//! of 0.
//!
//! Also here: cosine similarity, the checks on a model's embedding output, and the compact text
//! form vectors are cached in.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;

/// Dimensions of a bge-small-en-v1.5 embedding.
pub const DIMS: usize = 384;

/// How embedding similarity is mixed into text similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blend {
    /// Share of the mixed similarity that comes from the embedding, in [0, 1].
    pub weight: f64,
    /// Cosine at or below which texts count as unrelated (embedding similarity 0).
    pub floor: f64,
    /// Cosine at or above which texts count as saying the same (embedding similarity 1).
    pub ceiling: f64,
}

impl Default for Blend {
    /// The weight is fitted on the training split with a real model's vectors; the floor and
    /// ceiling are priors. Workers AI cannot be called where the labelled set is measured, and
    /// bge-small-en-v1.5's weights are not to be had offline, so the fit ran on
    /// all-MiniLM-L6-v2's (`data/flowmind/embeddings/`, `measure::fit_blend`; docs/flowmind.md,
    /// "Embedding blend fitted on a real model"): on the seventh round's training split its best
    /// weight was 0.15 (0.20 and 0.25 in earlier rounds, 0.15 to 0.30 always within a few points),
    /// so the share carries over to a model of the same size and kind. Its floor and ceiling (0.05 and 0.55) are MiniLM's cosine scale, not bge-small's,
    /// which puts unrelated sentences near 0.5 and close paraphrases near 0.9: those stay the
    /// priors here. At 0.15 a request whose words match keeps most of its similarity when the
    /// embedding does not confirm it, and a paraphrase without shared words gets about a seventh
    /// of a clear match's.
    fn default() -> Self {
        Blend {
            weight: 0.15,
            floor: 0.5,
            ceiling: 0.9,
        }
    }
}

impl Blend {
    /// The cosine mapped linearly from [floor, ceiling] onto [0, 1], clamped.
    pub fn embedding_similarity(&self, cosine: f64) -> f64 {
        if self.ceiling <= self.floor {
            return 0.0;
        }
        ((cosine - self.floor) / (self.ceiling - self.floor)).clamp(0.0, 1.0)
    }

    /// The similarity the confidence model sees: `(1 − weight)·text + weight·embedding(cosine)`.
    pub fn similarity(&self, text: f64, cosine: f64) -> f64 {
        (1.0 - self.weight) * text + self.weight * self.embedding_similarity(cosine)
    }
}

/// Cosine similarity of two vectors; 0 when their lengths differ or either is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
}

/// The `n` vectors of a Workers AI text-embedding answer (`{"shape": [n, 384], "data": [[…], …]}`),
/// or what is wrong with it, in words a caller can act on.
pub fn parse_embeddings(output: &Value, n: usize) -> Result<Vec<Vec<f32>>, String> {
    let Some(data) = output.get("data").and_then(Value::as_array) else {
        return Err(format!(
            "the answer has no data array (expected {{\"shape\": [{n}, {DIMS}], \"data\": [[…]]}})"
        ));
    };
    if data.len() != n {
        return Err(format!(
            "the answer has {} vectors for {n} texts",
            data.len()
        ));
    }
    data.iter()
        .enumerate()
        .map(|(i, row)| {
            let row = row
                .as_array()
                .ok_or_else(|| format!("vector {i} is not an array of numbers"))?;
            if row.len() != DIMS {
                return Err(format!(
                    "vector {i} has {} dimensions, not {DIMS}",
                    row.len()
                ));
            }
            row.iter()
                .map(|x| {
                    x.as_f64()
                        .filter(|f| f.is_finite())
                        .map(|f| f as f32)
                        .ok_or_else(|| format!("vector {i} holds a value that is not a number"))
                })
                .collect()
        })
        .collect()
}

/// A vector as text: base64 of its little-endian `f32`s (2,048 characters for 384 dimensions,
/// about a third of its JSON).
pub fn encode(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    STANDARD.encode(bytes)
}

/// The vector of [`encode`]'s text; `None` when it is not one of `DIMS` dimensions.
pub fn decode(text: &str) -> Option<Vec<f32>> {
    let bytes = STANDARD.decode(text).ok()?;
    if bytes.len() != DIMS * 4 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(cosine(&[1.0, 0.0], &[0.0, 2.0]).abs() < 1e-12);
        assert!((cosine(&[1.0, 1.0], &[1.0, 0.0]) - 0.5f64.sqrt()).abs() < 1e-9);
        assert!((cosine(&[1.0, 2.0], &[-1.0, -2.0]) + 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0, "a zero vector");
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0, "lengths differ");
    }

    #[test]
    fn the_blend_maps_the_cosine_then_mixes() {
        // An even mix rather than the fitted default, so the cases read as what they test.
        let b = Blend {
            weight: 0.5,
            ..Blend::default()
        };
        assert_eq!(b.embedding_similarity(0.3), 0.0, "below the floor");
        assert_eq!(b.embedding_similarity(0.95), 1.0, "above the ceiling");
        assert!((b.embedding_similarity(0.7) - 0.5).abs() < 1e-12);
        assert!((b.similarity(0.6, 0.9) - 0.8).abs() < 1e-12);
        assert!(
            (b.similarity(0.0, 0.9) - 0.5).abs() < 1e-12,
            "a paraphrase without shared words"
        );
        assert!(
            (b.similarity(0.6, 0.5) - 0.3).abs() < 1e-12,
            "shared words the embedding does not confirm"
        );
        let text_only = Blend { weight: 0.0, ..b };
        assert_eq!(text_only.similarity(0.42, 0.9), 0.42);
        let broken = Blend {
            floor: 0.9,
            ceiling: 0.9,
            ..b
        };
        assert_eq!(broken.embedding_similarity(0.95), 0.0);
    }

    #[test]
    fn embeddings_are_checked_for_shape() {
        let v: Vec<f64> = (0..DIMS).map(|i| i as f64 / 1000.0).collect();
        let good = json!({ "shape": [2, DIMS], "data": [v, v] });
        let parsed = parse_embeddings(&good, 2).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[1].len(), DIMS);
        for (bad, want) in [
            (json!({ "result": [] }), "no data array"),
            (json!({ "data": [v] }), "1 vectors for 2 texts"),
            (
                json!({ "data": [v, [1, 2, 3]] }),
                "vector 1 has 3 dimensions",
            ),
            (json!({ "data": [v, "x"] }), "vector 1 is not an array"),
        ] {
            let e = parse_embeddings(&bad, 2).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let mut strange = v.clone();
        strange[5] = 0.0;
        let mut row = json!(strange);
        row[5] = json!("NaN");
        let e = parse_embeddings(&json!({ "data": [v, row] }), 2).unwrap_err();
        assert!(e.contains("not a number"), "{e}");
    }

    #[test]
    fn vectors_round_trip_through_text() {
        let v: Vec<f32> = (0..DIMS).map(|i| (i as f32 - 190.0) / 37.0).collect();
        let text = encode(&v);
        assert_eq!(text.len(), 2048);
        assert_eq!(decode(&text), Some(v));
        assert_eq!(decode("AAAA"), None, "too short");
        assert_eq!(decode("not base64!"), None);
    }
}
