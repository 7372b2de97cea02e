-- Finance domain (issue 4): vendors, invoices, expense reports and department budgets. Amounts are
-- integer cents in USD. People are hr_employees ids; who approved or submitted something is kept
-- as NULL once that employee is deleted, so the financial record survives. Invoice, expense-report
-- and budget ids are lowercase version-4 UUIDs, like employee ids (seed §9: "format": "uuid");
-- vendor ids are readable text.

CREATE TABLE IF NOT EXISTS finance_vendors (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
  category   TEXT NOT NULL,
  email      TEXT CHECK (email IS NULL OR email LIKE '_%@_%._%'),
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

-- Supplier invoices. pending: awaiting approval; approved: awaiting payment, not yet due;
-- overdue: approved, unpaid and past due; paid; rejected (with a reason).
CREATE TABLE IF NOT EXISTS finance_invoices (
  id               TEXT PRIMARY KEY CHECK (id GLOB '????????-????-4???-[89ab]???-????????????' AND length(replace(id, '-', '')) = 32 AND replace(id, '-', '') NOT GLOB '*[^0-9a-f]*'),
  vendor_id        TEXT NOT NULL REFERENCES finance_vendors (id),
  -- The vendor's own number, as printed on the invoice.
  vendor_reference TEXT NOT NULL,
  amount_cents     INTEGER NOT NULL CHECK (amount_cents >= 0),
  currency         TEXT NOT NULL DEFAULT 'USD' CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
  description      TEXT NOT NULL,
  department_id    TEXT NOT NULL REFERENCES hr_departments (id),
  status           TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'paid', 'rejected', 'overdue')),
  invoice_date     TEXT NOT NULL CHECK (date(invoice_date) = invoice_date),
  due_date         TEXT NOT NULL CHECK (date(due_date) = due_date AND due_date >= invoice_date),
  submitted_by     TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  submitted_at     TEXT NOT NULL,
  approved_by      TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  approved_at      TEXT,
  paid_at          TEXT,
  rejection_reason TEXT,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  CHECK ((status IN ('approved', 'paid', 'overdue')) = (approved_at IS NOT NULL)),
  CHECK ((status = 'paid') = (paid_at IS NOT NULL)),
  CHECK ((status = 'rejected') = (rejection_reason IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS finance_invoices_by_status ON finance_invoices (status, id);
CREATE INDEX IF NOT EXISTS finance_invoices_by_department ON finance_invoices (department_id, id);
CREATE INDEX IF NOT EXISTS finance_invoices_by_vendor ON finance_invoices (vendor_id, id);

-- One report per employee and month. Line items are a JSON array of
-- {"date","category","merchant","description","amount_cents"}; total_cents is their sum.
-- department_id is the employee's department when the report was filed, so moving an employee
-- does not move past spend. A report belongs to its employee and is deleted with them.
CREATE TABLE IF NOT EXISTS finance_expense_reports (
  id             TEXT PRIMARY KEY CHECK (id GLOB '????????-????-4???-[89ab]???-????????????' AND length(replace(id, '-', '')) = 32 AND replace(id, '-', '') NOT GLOB '*[^0-9a-f]*'),
  employee_id    TEXT NOT NULL REFERENCES hr_employees (id) ON DELETE CASCADE,
  department_id  TEXT NOT NULL REFERENCES hr_departments (id),
  month          TEXT NOT NULL CHECK (month GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]' AND date(month || '-01') = month || '-01'),
  status         TEXT NOT NULL CHECK (status IN ('draft', 'submitted', 'approved', 'rejected', 'reimbursed')),
  items          TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(items) AND json_type(items) = 'array'),
  total_cents    INTEGER NOT NULL CHECK (total_cents >= 0),
  submitted_at   TEXT,
  approved_by    TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  approved_at    TEXT,
  reimbursed_at  TEXT,
  notes          TEXT,
  created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  UNIQUE (employee_id, month),
  CHECK ((status = 'draft') = (submitted_at IS NULL)),
  CHECK ((status IN ('approved', 'reimbursed')) = (approved_at IS NOT NULL)),
  CHECK ((status = 'reimbursed') = (reimbursed_at IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS finance_expense_reports_by_status ON finance_expense_reports (status, id);
CREATE INDEX IF NOT EXISTS finance_expense_reports_by_department ON finance_expense_reports (department_id, month);

-- Operating (non-payroll) budget of a department for a fiscal year (= calendar year).
-- allocated_cents is the proposed amount until approval, then the approved one (approve_budget
-- may change it). Spend is not stored: finance_budget_summary derives it from paid invoices and
-- reimbursed expense reports, so it cannot drift from them.
CREATE TABLE IF NOT EXISTS finance_budgets (
  id              TEXT PRIMARY KEY CHECK (id GLOB '????????-????-4???-[89ab]???-????????????' AND length(replace(id, '-', '')) = 32 AND replace(id, '-', '') NOT GLOB '*[^0-9a-f]*'),
  department_id   TEXT NOT NULL REFERENCES hr_departments (id),
  fiscal_year     INTEGER NOT NULL CHECK (fiscal_year BETWEEN 2000 AND 2100),
  allocated_cents INTEGER NOT NULL CHECK (allocated_cents >= 0),
  status          TEXT NOT NULL CHECK (status IN ('draft', 'pending_approval', 'approved', 'active', 'closed')),
  submitted_by    TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  submitted_at    TEXT,
  approved_by     TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  approved_at     TEXT,
  notes           TEXT,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  UNIQUE (department_id, fiscal_year),
  CHECK ((status IN ('approved', 'active', 'closed')) = (approved_at IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS finance_budgets_by_status ON finance_budgets (status, id);

-- Every spend event with its department, fiscal year and quarter (1-4): a paid invoice counts on
-- its payment date, a reimbursed expense report in its month. "Q4 budget vs actual" sums this.
CREATE VIEW IF NOT EXISTS finance_department_spend AS
SELECT department_id, 'invoice' AS source, id AS source_id, amount_cents,
       CAST(substr(paid_at, 1, 4) AS INTEGER) AS fiscal_year,
       (CAST(substr(paid_at, 6, 2) AS INTEGER) + 2) / 3 AS quarter
FROM finance_invoices WHERE status = 'paid'
UNION ALL
SELECT department_id, 'expense_report', id, total_cents,
       CAST(substr(month, 1, 4) AS INTEGER),
       (CAST(substr(month, 6, 2) AS INTEGER) + 2) / 3
FROM finance_expense_reports WHERE status = 'reimbursed';

-- The seed's Budget: allocation, spend and what remains (negative when over budget).
CREATE VIEW IF NOT EXISTS finance_budget_summary AS
SELECT b.id, b.department_id, d.name AS department, b.fiscal_year, b.allocated_cents,
       b.spent_cents, b.allocated_cents - b.spent_cents AS remaining_cents, b.status,
       b.submitted_by, b.submitted_at, b.approved_by, b.approved_at, b.notes
FROM (SELECT f.*, (SELECT COALESCE(SUM(x.amount_cents), 0) FROM finance_department_spend x
                   WHERE x.department_id = f.department_id AND x.fiscal_year = f.fiscal_year) AS spent_cents
      FROM finance_budgets f) b
JOIN hr_departments d ON d.id = b.department_id;
