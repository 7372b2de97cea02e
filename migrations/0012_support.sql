-- Support domain (issue 4): tickets and knowledge-base articles, each with an FTS5 index for
-- search_tickets and knowledge-base search. The indexes are external-content tables (the text is
-- stored once, in the base table) kept in step by triggers. FTS5 joins on an integer rowid, which
-- VACUUM may renumber unless it is an INTEGER PRIMARY KEY, so each table has one (`*_no`) next to
-- its readable id, which is derived from it.

CREATE TABLE IF NOT EXISTS support_tickets (
  ticket_no       INTEGER PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE CHECK (id = printf('TKT-%06d', ticket_no)),
  subject         TEXT NOT NULL CHECK (length(subject) BETWEEN 1 AND 300),
  description     TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'pending', 'resolved', 'closed')),
  priority        TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'critical')),
  category        TEXT NOT NULL,
  tags            TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags) AND json_type(tags) = 'array'),
  customer_id     TEXT NOT NULL REFERENCES sales_customers (id) ON DELETE CASCADE,
  -- Who reported it (the seed's customer_email is this contact's email).
  contact_id      TEXT REFERENCES sales_contacts (id) ON DELETE SET NULL,
  -- NULL while unassigned (only open tickets are).
  assigned_to     TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  resolution      TEXT,
  resolution_type TEXT CHECK (resolution_type IS NULL OR resolution_type IN ('solved', 'workaround', 'duplicate', 'cannot_reproduce', 'wont_fix')),
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  resolved_at     TEXT,
  closed_at       TEXT,
  CHECK ((status IN ('resolved', 'closed')) = (resolved_at IS NOT NULL AND resolution IS NOT NULL AND resolution_type IS NOT NULL)),
  CHECK ((status = 'closed') = (closed_at IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS support_tickets_by_status ON support_tickets (status, id);
CREATE INDEX IF NOT EXISTS support_tickets_by_priority ON support_tickets (priority, id);
CREATE INDEX IF NOT EXISTS support_tickets_by_customer ON support_tickets (customer_id, id);
CREATE INDEX IF NOT EXISTS support_tickets_by_assignee ON support_tickets (assigned_to, status, id);

CREATE VIRTUAL TABLE IF NOT EXISTS support_tickets_fts USING fts5 (
  subject, description, resolution,
  content = 'support_tickets', content_rowid = 'ticket_no',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS support_tickets_fts_insert AFTER INSERT ON support_tickets BEGIN
  INSERT INTO support_tickets_fts (rowid, subject, description, resolution)
  VALUES (new.ticket_no, new.subject, new.description, new.resolution);
END;

CREATE TRIGGER IF NOT EXISTS support_tickets_fts_delete AFTER DELETE ON support_tickets BEGIN
  INSERT INTO support_tickets_fts (support_tickets_fts, rowid, subject, description, resolution)
  VALUES ('delete', old.ticket_no, old.subject, old.description, old.resolution);
END;

-- Only a change to indexed text re-indexes (status changes are the common update).
CREATE TRIGGER IF NOT EXISTS support_tickets_fts_update AFTER UPDATE OF subject, description, resolution ON support_tickets BEGIN
  INSERT INTO support_tickets_fts (support_tickets_fts, rowid, subject, description, resolution)
  VALUES ('delete', old.ticket_no, old.subject, old.description, old.resolution);
  INSERT INTO support_tickets_fts (rowid, subject, description, resolution)
  VALUES (new.ticket_no, new.subject, new.description, new.resolution);
END;

CREATE TABLE IF NOT EXISTS support_knowledge_articles (
  article_no    INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE CHECK (id = printf('KB-%04d', article_no)),
  title         TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 300),
  content       TEXT NOT NULL,
  summary       TEXT NOT NULL,
  category      TEXT NOT NULL,
  tags          TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags) AND json_type(tags) = 'array'),
  author_id     TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  status        TEXT NOT NULL CHECK (status IN ('draft', 'published', 'archived')),
  view_count    INTEGER NOT NULL DEFAULT 0 CHECK (view_count >= 0),
  helpful_votes INTEGER NOT NULL DEFAULT 0 CHECK (helpful_votes >= 0),
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

CREATE INDEX IF NOT EXISTS support_knowledge_articles_by_status ON support_knowledge_articles (status, id);
CREATE INDEX IF NOT EXISTS support_knowledge_articles_by_category ON support_knowledge_articles (category, id);

-- Tags are indexed as their JSON text: the tokenizer drops the brackets, quotes and commas.
CREATE VIRTUAL TABLE IF NOT EXISTS support_knowledge_articles_fts USING fts5 (
  title, content, tags,
  content = 'support_knowledge_articles', content_rowid = 'article_no',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS support_knowledge_articles_fts_insert AFTER INSERT ON support_knowledge_articles BEGIN
  INSERT INTO support_knowledge_articles_fts (rowid, title, content, tags)
  VALUES (new.article_no, new.title, new.content, new.tags);
END;

CREATE TRIGGER IF NOT EXISTS support_knowledge_articles_fts_delete AFTER DELETE ON support_knowledge_articles BEGIN
  INSERT INTO support_knowledge_articles_fts (support_knowledge_articles_fts, rowid, title, content, tags)
  VALUES ('delete', old.article_no, old.title, old.content, old.tags);
END;

CREATE TRIGGER IF NOT EXISTS support_knowledge_articles_fts_update AFTER UPDATE OF title, content, tags ON support_knowledge_articles BEGIN
  INSERT INTO support_knowledge_articles_fts (support_knowledge_articles_fts, rowid, title, content, tags)
  VALUES ('delete', old.article_no, old.title, old.content, old.tags);
  INSERT INTO support_knowledge_articles_fts (rowid, title, content, tags)
  VALUES (new.article_no, new.title, new.content, new.tags);
END;
