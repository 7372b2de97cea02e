-- HR domain (issue 4): departments, grade levels, employees and performance reviews. D1 has no
-- schemas, so every domain's tables carry its prefix (hr_, finance_, sales_, support_).
-- An employee id is a lowercase version-4 UUID (seed §9: "format": "uuid"), and it is what a
-- caller's JWT `sub` holds (00000000-0000-4000-8000-000000000001 is the CEO). Other HR ids are
-- readable text.
-- Money is integer cents (`_cents`), never floating point; tools divide by 100 for output.

CREATE TABLE IF NOT EXISTS hr_departments (
  -- Short code (ENG, SALES...); tools accept the code or the name.
  id               TEXT PRIMARY KEY CHECK (length(id) BETWEEN 2 AND 10 AND id NOT GLOB '*[^A-Z]*'),
  name             TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (length(name) BETWEEN 2 AND 100),
  -- Set after the employees exist (the two tables reference each other); NULL while vacant.
  head_employee_id TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  cost_center      TEXT NOT NULL,
  location         TEXT NOT NULL,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

-- Pay bands: an employee's salary lies within their grade's band (the sample data keeps to it;
-- update_salary may go outside, which HR sometimes does on purpose, so it is not a constraint).
CREATE TABLE IF NOT EXISTS hr_grade_levels (
  grade            TEXT PRIMARY KEY CHECK (length(grade) BETWEEN 2 AND 4),
  title            TEXT NOT NULL,
  -- Seniority order across tracks, for "at or above grade" questions.
  level            INTEGER NOT NULL UNIQUE CHECK (level BETWEEN 0 AND 20),
  track            TEXT NOT NULL CHECK (track IN ('intern', 'individual', 'management', 'executive')),
  salary_min_cents INTEGER NOT NULL CHECK (salary_min_cents >= 0),
  salary_max_cents INTEGER NOT NULL CHECK (salary_max_cents >= salary_min_cents),
  -- PTO days accrued per year at this grade.
  pto_days         INTEGER NOT NULL CHECK (pto_days BETWEEN 0 AND 60)
);

CREATE TABLE IF NOT EXISTS hr_employees (
  -- xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx: exactly 32 lowercase hex digits around 4 hyphens.
  id               TEXT PRIMARY KEY CHECK (id GLOB '????????-????-4???-[89ab]???-????????????' AND length(replace(id, '-', '')) = 32 AND replace(id, '-', '') NOT GLOB '*[^0-9a-f]*'),
  first_name       TEXT NOT NULL CHECK (length(first_name) BETWEEN 1 AND 50),
  last_name        TEXT NOT NULL CHECK (length(last_name) BETWEEN 1 AND 50),
  email            TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (email LIKE '_%@_%._%'),
  -- PII (seed §8: contact info, salary and SSN are masked for callers without hr-write,
  -- finance-read or executive).
  personal_email   TEXT CHECK (personal_email IS NULL OR personal_email LIKE '_%@_%._%'),
  phone            TEXT,
  ssn              TEXT NOT NULL CHECK (ssn GLOB '[0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][0-9][0-9]'),
  salary_cents     INTEGER NOT NULL CHECK (salary_cents >= 0),
  job_title        TEXT NOT NULL,
  department_id    TEXT NOT NULL REFERENCES hr_departments (id),
  -- NULL only for the CEO. A manager with reports cannot be deleted (no ON DELETE action): the
  -- reports are reassigned first. The tree is walked with WITH RECURSIVE over this column.
  manager_id       TEXT REFERENCES hr_employees (id) CHECK (manager_id IS NULL OR manager_id <> id),
  grade            TEXT NOT NULL REFERENCES hr_grade_levels (grade),
  employment_type  TEXT NOT NULL DEFAULT 'full_time' CHECK (employment_type IN ('full_time', 'part_time', 'contractor', 'intern')),
  location         TEXT NOT NULL,
  hire_date        TEXT NOT NULL CHECK (date(hire_date) = hire_date),
  status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'on_leave', 'terminated')),
  termination_date TEXT CHECK (termination_date IS NULL OR date(termination_date) = termination_date),
  -- The seed's boolean `active`: everyone not terminated (people on leave are still employed).
  active           INTEGER GENERATED ALWAYS AS (status <> 'terminated') VIRTUAL,
  -- Days of paid time off available now (half days allowed).
  pto_balance      REAL NOT NULL DEFAULT 0 CHECK (pto_balance >= 0 AND pto_balance * 2 = CAST(pto_balance * 2 AS INTEGER)),
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  CHECK ((status = 'terminated') = (termination_date IS NOT NULL))
);

-- Keyset pagination: by department, by manager (a team), and the seed's (last, first, id) order.
CREATE INDEX IF NOT EXISTS hr_employees_by_department ON hr_employees (department_id, id);
CREATE INDEX IF NOT EXISTS hr_employees_by_manager ON hr_employees (manager_id, id);
CREATE INDEX IF NOT EXISTS hr_employees_by_name ON hr_employees (last_name, first_name, id);
CREATE INDEX IF NOT EXISTS hr_employees_by_status ON hr_employees (status, id);

-- One review per employee and period. Scheduled and in-progress reviews are the ones "due" (a
-- manager asks who on the team has reviews due); only completed reviews carry a rating.
CREATE TABLE IF NOT EXISTS hr_performance_reviews (
  id               TEXT PRIMARY KEY,
  -- Reviews belong to the person: deleting the employee deletes them.
  employee_id      TEXT NOT NULL REFERENCES hr_employees (id) ON DELETE CASCADE,
  -- Usually the manager at review time; NULL for the CEO (reviewed by the board) or once the
  -- reviewer has been deleted.
  reviewer_id      TEXT REFERENCES hr_employees (id) ON DELETE SET NULL,
  period           TEXT NOT NULL CHECK (period GLOB '[0-9][0-9][0-9][0-9]-H[12]'),
  status           TEXT NOT NULL CHECK (status IN ('scheduled', 'in_progress', 'completed')),
  due_date         TEXT NOT NULL CHECK (date(due_date) = due_date),
  completed_date   TEXT CHECK (completed_date IS NULL OR date(completed_date) = completed_date),
  -- 1 (does not meet expectations) to 5 (far exceeds).
  overall_rating   INTEGER CHECK (overall_rating IS NULL OR overall_rating BETWEEN 1 AND 5),
  goals            TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(goals) AND json_type(goals) = 'array'),
  strengths        TEXT,
  improvements     TEXT,
  comments         TEXT,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  UNIQUE (employee_id, period),
  CHECK ((status = 'completed') = (completed_date IS NOT NULL AND overall_rating IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS hr_performance_reviews_by_status ON hr_performance_reviews (status, due_date, id);
CREATE INDEX IF NOT EXISTS hr_performance_reviews_by_reviewer ON hr_performance_reviews (reviewer_id, status, id);
