-- Sales domain (issue 4): customers, their contacts and deals. Sales ids are readable text
-- (CUST-0001, CON-00001, DEAL-00001). Owners are hr_employees ids, so UUIDs (the seed's
-- `owner`/`account_owner` strings are that employee's email or name in tool output).
-- A customer's contacts, deals and tickets belong to it: delete_customer removes them too.

CREATE TABLE IF NOT EXISTS sales_customers (
  id                   TEXT PRIMARY KEY,
  -- Display name ("Acme") and legal name ("Acme Holdings, Inc."): the seed's name and company.
  name                 TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  company              TEXT NOT NULL,
  -- The account's general address; people are in sales_contacts.
  email                TEXT NOT NULL CHECK (email LIKE '_%@_%._%'),
  phone                TEXT,
  industry             TEXT NOT NULL,
  tier                 TEXT NOT NULL CHECK (tier IN ('enterprise', 'business', 'startup', 'free')),
  annual_revenue_cents INTEGER CHECK (annual_revenue_cents IS NULL OR annual_revenue_cents >= 0),
  street               TEXT,
  city                 TEXT,
  state                TEXT,
  zip                  TEXT,
  country              TEXT NOT NULL,
  account_owner_id     TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  created_at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

CREATE INDEX IF NOT EXISTS sales_customers_by_owner ON sales_customers (account_owner_id, id);
CREATE INDEX IF NOT EXISTS sales_customers_by_tier ON sales_customers (tier, id);

CREATE TABLE IF NOT EXISTS sales_contacts (
  id          TEXT PRIMARY KEY,
  customer_id TEXT NOT NULL REFERENCES sales_customers (id) ON DELETE CASCADE,
  first_name  TEXT NOT NULL,
  last_name   TEXT NOT NULL,
  email       TEXT NOT NULL CHECK (email LIKE '_%@_%._%'),
  phone       TEXT,
  job_title   TEXT,
  is_primary  INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

CREATE INDEX IF NOT EXISTS sales_contacts_by_customer ON sales_contacts (customer_id, id);
-- At most one primary contact per customer.
CREATE UNIQUE INDEX IF NOT EXISTS sales_contacts_one_primary ON sales_contacts (customer_id) WHERE is_primary = 1;

-- Open stages in funnel order, then the two closed ones (close_deal sets them with closed_at).
-- Probability is the owner's estimate, pinned to 100 / 0 once won / lost.
CREATE TABLE IF NOT EXISTS sales_deals (
  id                  TEXT PRIMARY KEY,
  customer_id         TEXT NOT NULL REFERENCES sales_customers (id) ON DELETE CASCADE,
  name                TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  value_cents         INTEGER NOT NULL CHECK (value_cents >= 0),
  currency            TEXT NOT NULL DEFAULT 'USD' CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
  stage               TEXT NOT NULL CHECK (stage IN ('PROSPECTING', 'DISCOVERY', 'QUALIFICATION', 'PROPOSAL', 'NEGOTIATION', 'CLOSED_WON', 'CLOSED_LOST')),
  probability         INTEGER NOT NULL CHECK (probability BETWEEN 0 AND 100),
  expected_close_date TEXT NOT NULL CHECK (date(expected_close_date) = expected_close_date),
  -- "2026-Q4": the quarter the deal is expected to close in (closed deals: the quarter they did),
  -- which get_pipeline groups by.
  close_quarter       TEXT GENERATED ALWAYS AS (
                        substr(expected_close_date, 1, 4) || '-Q' || ((CAST(substr(expected_close_date, 6, 2) AS INTEGER) + 2) / 3)
                      ) VIRTUAL,
  owner_id            TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  notes               TEXT,
  loss_reason         TEXT,
  closed_at           TEXT,
  created_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  CHECK ((stage IN ('CLOSED_WON', 'CLOSED_LOST')) = (closed_at IS NOT NULL)),
  CHECK (stage <> 'CLOSED_WON' OR probability = 100),
  CHECK (stage <> 'CLOSED_LOST' OR probability = 0),
  CHECK (loss_reason IS NULL OR stage = 'CLOSED_LOST')
);

CREATE INDEX IF NOT EXISTS sales_deals_by_stage ON sales_deals (stage, id);
CREATE INDEX IF NOT EXISTS sales_deals_by_customer ON sales_deals (customer_id, id);
CREATE INDEX IF NOT EXISTS sales_deals_by_owner ON sales_deals (owner_id, stage, id);
CREATE INDEX IF NOT EXISTS sales_deals_by_close ON sales_deals (expected_close_date, id);
CREATE INDEX IF NOT EXISTS sales_deals_by_quarter ON sales_deals (close_quarter, stage);

-- get_pipeline: per quarter and stage, how many deals, their value and the probability-weighted
-- value (cents, rounded down).
CREATE VIEW IF NOT EXISTS sales_pipeline AS
SELECT close_quarter AS quarter, stage, COUNT(*) AS deal_count, SUM(value_cents) AS value_cents,
       SUM(value_cents * probability / 100) AS weighted_value_cents
FROM sales_deals
GROUP BY close_quarter, stage;
