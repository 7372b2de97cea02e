-- FlowMind's context embeddings (issue 6): field_request blends bge-small similarity into its
-- matching when a Workers AI binding named AI is configured. One row per context and embedding
-- model, holding the hash of the text it was computed from (name, description, example requests):
-- a search reads the rows of its whole pool in one query and re-embeds only the contexts whose text
-- changed since (src/tools/flowmind/embeddings.rs). `vector` is base64 of the little-endian f32s.
CREATE TABLE IF NOT EXISTS flowmind_embeddings (
  uri TEXT NOT NULL,
  model TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  dims INTEGER NOT NULL CHECK (dims > 0),
  vector TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (uri, model)
);
