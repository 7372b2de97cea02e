#!/usr/bin/env node
// Writes sample-data/domain.sql, the sample company behind the HR, Finance, Sales and Support tools
// (issue 4), and sample-data/remove-domain.sql, which deletes exactly those rows again. Sample data
// is not a migration (production gets schema and shipped definitions alone): `npm run dev` and the
// tests load it, and `npm run sample-data` loads or removes it on request (docs/deploying.md).
// Deterministic: a fixed seed drives a mulberry32 generator and the data is dated relative to a
// fixed AS_OF day, so a regeneration is byte-identical (the test checks it).
// Usage: node scripts/domain-data.js [--out-dir DIR]   (npm run domain-data; default sample-data/)
// Employee, budget, invoice and expense-report ids are lowercase version-4 UUIDs (seed §9 declares
// them "format": "uuid"); the named sample users have fixed ones, 00000000-0000-4000-8000-000000000001
// (Eve) to ...-000000000015 (Ryan), documented in docs/domain-data.md.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { inserts, sql } from "./sql.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const AS_OF = "2026-11-20";

// ---------------------------------------------------------------- randomness and formatting

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(0x7a35a1);
// UUIDs come from a stream of their own, so drawing them does not shift the data drawn from `rand`.
const idRand = mulberry32(0x1d5eed);
const usedUuids = new Set();
/** A random lowercase RFC 4122 version-4 UUID from `idRand` (never one already handed out). */
function uuid() {
  for (;;) {
    const hex = Array.from({ length: 4 }, () => Math.floor(idRand() * 4294967296).toString(16).padStart(8, "0")).join("");
    const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${"89ab"[parseInt(hex[16], 16) & 3]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    if (!usedUuids.has(id)) {
      usedUuids.add(id);
      return id;
    }
  }
}
/** The fixed id of named sample user `n` (1-15): 00000000-0000-4000-8000-000000000001 and so on. */
const namedId = (n) => {
  const id = `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
  usedUuids.add(id);
  return id;
};
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (list) => list[Math.floor(rand() * list.length)];
const chance = (p) => rand() < p;
/** Picks a key of `weights` ({key: weight}) with probability proportional to its weight. */
function weighted(weights) {
  const entries = Object.entries(weights);
  let r = rand() * entries.reduce((s, [, w]) => s + w, 0);
  for (const [k, w] of entries) if ((r -= w) < 0) return k;
  return entries[entries.length - 1][0];
}
function sample(list, n) {
  const copy = [...list];
  const out = [];
  while (out.length < n && copy.length) out.push(copy.splice(Math.floor(rand() * copy.length), 1)[0]);
  return out;
}
const pad = (n, width) => String(n).padStart(width, "0");
const DAY = 86400000;
const addDays = (date, n) => new Date(Date.parse(date) + n * DAY).toISOString().slice(0, 10);
const daysBetween = (a, b) => Math.round((Date.parse(b) - Date.parse(a)) / DAY);
const randomDate = (from, to) => addDays(from, int(0, Math.max(0, daysBetween(from, to))));
const minDate = (a, b) => (a < b ? a : b);
/** An ISO timestamp on `date` during office hours. */
const at = (date) => `${date}T${pad(int(8, 18), 2)}:${pad(int(0, 59), 2)}:${pad(int(0, 59), 2)}Z`;
const dollars = (lo, hi, step = 1) => Math.round(int(lo, hi) / step) * step * 100;
const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, "");

const out = [];
// What each INSERT added, in order, by primary key: remove-domain.sql deletes it in reverse order.
const added = [];
const insert = (table, columns, rows, key = "id") => {
  out.push(...inserts(table, columns, rows));
  added.push({ table, key, values: rows.map((r) => r[key]) });
};

// ---------------------------------------------------------------- HR

const GRADES = [
  ["L0", "Intern", 0, "intern", 35000, 55000, 10],
  ["L1", "Associate", 1, "individual", 55000, 80000, 15],
  ["L2", "Professional", 2, "individual", 75000, 110000, 15],
  ["L3", "Senior", 3, "individual", 100000, 150000, 20],
  ["L4", "Staff", 4, "individual", 135000, 190000, 20],
  ["L5", "Principal", 5, "individual", 170000, 240000, 25],
  ["M1", "Manager", 6, "management", 130000, 190000, 20],
  ["M2", "Director", 7, "management", 170000, 250000, 25],
  ["E1", "Vice President", 8, "executive", 220000, 350000, 25],
  ["E2", "Chief Executive", 9, "executive", 350000, 600000, 30],
].map(([grade, title, level, track, min, max, pto]) => ({
  grade, title, level, track, salary_min_cents: min * 100, salary_max_cents: max * 100, pto_days: pto,
}));
const gradeOf = Object.fromEntries(GRADES.map((g) => [g.grade, g]));

const LOCATIONS = ["San Francisco, CA", "New York, NY", "Austin, TX", "Chicago, IL", "London, UK", "Toronto, ON", "Remote (US)"];
// size: head count; roles: staff job families; vp: the head's title.
const DEPARTMENTS = [
  { id: "EXEC", name: "Executive", size: 4, cost_center: "CC-100", location: "San Francisco, CA" },
  { id: "ENG", name: "Engineering", size: 160, directors: 4, cost_center: "CC-200", location: "San Francisco, CA", vp: "VP of Engineering",
    areas: ["Platform Engineering", "Product Engineering", "Infrastructure", "Quality and Reliability"], manager: "Engineering Manager",
    roles: ["Software Engineer", "Software Engineer", "Site Reliability Engineer", "QA Engineer", "Data Engineer", "Security Engineer"] },
  { id: "PROD", name: "Product", size: 40, directors: 1, cost_center: "CC-210", location: "San Francisco, CA", vp: "VP of Product",
    areas: ["Product Management"], manager: "Group Product Manager", roles: ["Product Manager", "Product Designer", "UX Researcher"] },
  { id: "SALES", name: "Sales", size: 90, directors: 2, cost_center: "CC-300", location: "New York, NY", vp: "VP of Sales",
    areas: ["Enterprise Sales", "Commercial Sales"], manager: "Sales Manager",
    roles: ["Account Executive", "Account Executive", "Sales Development Representative", "Solutions Engineer"] },
  { id: "MKT", name: "Marketing", size: 45, directors: 1, cost_center: "CC-310", location: "New York, NY", vp: "VP of Marketing",
    areas: ["Growth Marketing"], manager: "Marketing Manager", roles: ["Marketing Specialist", "Content Strategist", "Marketing Analyst"] },
  { id: "SUP", name: "Customer Support", size: 80, directors: 2, cost_center: "CC-400", location: "Austin, TX", vp: "VP of Customer Support",
    areas: ["Technical Support", "Customer Success"], manager: "Support Manager",
    roles: ["Support Engineer", "Support Engineer", "Customer Success Manager", "Support Specialist"] },
  { id: "FIN", name: "Finance", size: 30, directors: 1, cost_center: "CC-500", location: "New York, NY", vp: "Chief Financial Officer",
    areas: ["Accounting"], manager: "Accounting Manager", roles: ["Accountant", "Financial Analyst", "Payroll Specialist"] },
  { id: "HR", name: "Human Resources", size: 25, directors: 1, cost_center: "CC-600", location: "Chicago, IL", vp: "VP of People",
    areas: ["People Operations"], manager: "HR Manager", roles: ["HR Generalist", "Recruiter", "HR Business Partner"] },
  { id: "OPS", name: "Operations", size: 45, directors: 1, cost_center: "CC-700", location: "Chicago, IL", vp: "VP of Operations",
    areas: ["Business Operations"], manager: "Operations Manager", roles: ["Operations Analyst", "IT Support Specialist", "Facilities Coordinator"] },
  { id: "LEGAL", name: "Legal", size: 12, directors: 1, cost_center: "CC-800", location: "San Francisco, CA", vp: "General Counsel",
    areas: ["Commercial Legal"], manager: "Legal Manager", roles: ["Corporate Counsel", "Paralegal", "Compliance Analyst"] },
];

// The named users' ids, in the order of the table in docs/domain-data.md.
const [EVE, CAROL, VICTOR, GRACE, NINA, MARCUS, SARAH, FRANK, HELEN, ALICE, RAJ, BOB, OLIVIA, DAN, RYAN] =
  Array.from({ length: 15 }, (_, i) => namedId(i + 1));
// The seed's people (§4, §8) and one user per role, with fixed ids; `level` places them in the tree.
const NAMED = [
  { id: EVE, first: "Eve", last: "Thompson", dept: "EXEC", level: "ceo", title: "Chief Executive Officer", grade: "E2", salary: 480000, hire: "2012-03-01" },
  { id: CAROL, first: "Carol", last: "Johnson", dept: "SALES", level: "vp", manager: EVE, title: "VP of Sales", grade: "E1", salary: 295000, hire: "2015-06-15" },
  { id: VICTOR, first: "Victor", last: "Reyes", dept: "ENG", level: "vp", manager: EVE, title: "VP of Engineering", grade: "E1", salary: 310000, hire: "2013-01-07" },
  { id: GRACE, first: "Grace", last: "Liu", dept: "ENG", level: "director", manager: VICTOR, title: "Director of Platform Engineering", grade: "M2", salary: 228000, hire: "2016-04-11" },
  { id: NINA, first: "Nina", last: "Patel", dept: "ENG", level: "manager", manager: GRACE, title: "Engineering Manager", grade: "M1", salary: 176000, hire: "2018-09-04" },
  { id: MARCUS, first: "Marcus", last: "Johnson", dept: "ENG", level: "staff", manager: NINA, title: "Software Engineer", grade: "L2", salary: 98000, hire: "2022-02-14", pto: 15 },
  { id: SARAH, first: "Sarah", last: "Kim", dept: "ENG", level: "staff", manager: NINA, title: "Senior Software Engineer", grade: "L3", salary: 112000, hire: "2019-11-18" },
  { id: FRANK, first: "Frank", last: "Davis", dept: "ENG", level: "staff", manager: NINA, title: "Software Engineering Intern", grade: "L0", salary: 48000, hire: "2026-06-01", type: "intern", pto: 2.5 },
  { id: HELEN, first: "Helen", last: "Brooks", dept: "HR", level: "vp", manager: EVE, title: "VP of People", grade: "E1", salary: 240000, hire: "2014-08-25" },
  { id: ALICE, first: "Alice", last: "Chen", dept: "HR", level: "manager", manager: HELEN, title: "HR Manager", grade: "M1", salary: 142000, hire: "2017-05-22" },
  { id: RAJ, first: "Raj", last: "Mehta", dept: "FIN", level: "vp", manager: EVE, title: "Chief Financial Officer", grade: "E1", salary: 320000, hire: "2014-02-03" },
  { id: BOB, first: "Bob", last: "Martinez", dept: "FIN", level: "director", manager: RAJ, title: "Finance Director", grade: "M2", salary: 205000, hire: "2016-10-10" },
  { id: OLIVIA, first: "Olivia", last: "Grant", dept: "SUP", level: "vp", manager: EVE, title: "VP of Customer Support", grade: "E1", salary: 235000, hire: "2015-03-30" },
  { id: DAN, first: "Dan", last: "Williams", dept: "SUP", level: "manager", manager: OLIVIA, title: "Support Team Lead", grade: "M1", salary: 134000, hire: "2019-01-14" },
  { id: RYAN, first: "Ryan", last: "Lee", dept: "SALES", level: "staff", manager: CAROL, title: "Account Executive", grade: "L2", salary: 92000, hire: "2021-07-06" },
];

const FIRST = ["James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "David", "Elizabeth", "William",
  "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Karen", "Christopher", "Lisa", "Daniel", "Nancy", "Matthew",
  "Sandra", "Anthony", "Ashley", "Mark", "Emily", "Steven", "Michelle", "Andrew", "Amanda", "Joshua", "Melissa", "Kevin",
  "Deborah", "Brian", "Stephanie", "George", "Rebecca", "Timothy", "Laura", "Jason", "Helen", "Jeffrey", "Amy", "Ryan", "Anna",
  "Jacob", "Kathleen", "Wei", "Priya", "Arjun", "Mei", "Hiroshi", "Yuki", "Carlos", "Sofia", "Mateo", "Lucia", "Ahmed", "Fatima",
  "Omar", "Aisha", "Kwame", "Amara", "Lars", "Ingrid", "Pierre", "Chloe", "Giulia", "Marco", "Olga", "Dmitri", "Siobhan", "Liam",
  "Noah", "Zoe", "Ethan", "Maya"];
const LAST = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Hernandez",
  "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White",
  "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres",
  "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts",
  "Chen", "Wang", "Patel", "Shah", "Kumar", "Tanaka", "Sato", "Kim", "Park", "Okafor", "Mensah", "Novak", "Kowalski", "Schmidt",
  "Müller", "Rossi", "Dubois", "Ivanova", "O'Brien", "O'Connor", "D'Angelo", "Smith-Jones", "MacLeod", "Van der Berg"];

const employees = [];
const byId = new Map();
const usedEmails = new Set(NAMED.map((n) => `${slug(n.first)}.${slug(n.last)}@tamshai.com`));

function salaryFor(grade) {
  const g = gradeOf[grade];
  return Math.round(int(g.salary_min_cents / 100, g.salary_max_cents / 100) / 500) * 500 * 100;
}
function addEmployee(p) {
  const first = p.first ?? pick(FIRST);
  const last = p.last ?? pick(LAST);
  let email = `${slug(first)}.${slug(last)}@tamshai.com`;
  if (!p.id) {
    for (let n = 2; usedEmails.has(email); n++) email = `${slug(first)}.${slug(last)}${n}@tamshai.com`;
    usedEmails.add(email);
  }
  const dept = DEPARTMENTS.find((d) => d.id === p.dept);
  const hire = p.hire;
  const e = {
    id: p.id ?? uuid(),
    // Creation order (the named users are 1-15): a stable order for sorting, as ids are random.
    no: employees.length + 1,
    first_name: first,
    last_name: last,
    email,
    personal_email: `${slug(first)}${slug(last)}${int(1, 99)}@${pick(["example.com", "example.net", "example.org"])}`,
    phone: `+1-${pick(["415", "212", "512", "312", "646", "737"])}-555-01${pad(int(0, 99), 2)}`,
    // Area numbers 900-999 are never issued: these can never be someone's real SSN.
    ssn: `${int(900, 999)}-${pad(int(1, 99), 2)}-${pad(int(1, 9999), 4)}`,
    salary_cents: p.salary ? p.salary * 100 : salaryFor(p.grade),
    job_title: p.title,
    department_id: p.dept,
    manager_id: p.manager ?? null,
    grade: p.grade,
    employment_type: p.type ?? "full_time",
    location: chance(0.7) ? dept.location : pick(LOCATIONS),
    hire_date: hire,
    status: "active",
    termination_date: null,
    pto_balance: p.pto ?? int(0, 50) / 2,
    created_at: `${hire}T09:00:00Z`,
    updated_at: `${hire}T09:00:00Z`,
    level: p.level,
    named: Boolean(p.id),
  };
  employees.push(e);
  byId.set(e.id, e);
  return e;
}

for (const n of NAMED) addEmployee({ ...n });
const ceo = byId.get(EVE);
// The rest of the executive office.
addEmployee({ dept: "EXEC", level: "staff", manager: ceo.id, title: "Chief of Staff", grade: "M2", hire: randomDate("2016-01-01", "2021-12-31") });
for (let i = 0; i < 2; i++) addEmployee({ dept: "EXEC", level: "staff", manager: ceo.id, title: "Executive Assistant", grade: "L2", hire: randomDate("2017-01-01", "2024-12-31") });

const heads = { EXEC: ceo };
for (const d of DEPARTMENTS.filter((d) => d.id !== "EXEC")) {
  const named = (level) => employees.filter((e) => e.named && e.department_id === d.id && e.level === level);
  const head = named("vp")[0] ?? addEmployee({ dept: d.id, level: "vp", manager: ceo.id, title: d.vp, grade: "E1", hire: randomDate("2013-01-01", "2019-12-31") });
  heads[d.id] = head;
  const directors = named("director");
  for (let i = directors.length; i < d.directors; i++) {
    directors.push(addEmployee({ dept: d.id, level: "director", manager: head.id, title: `Director of ${d.areas[i]}`, grade: "M2", hire: randomDate("2014-01-01", "2021-12-31") }));
  }
  const remaining = d.size - 1 - directors.length;
  const managerCount = Math.max(1, Math.round(remaining / 9));
  const managers = named("manager");
  for (let i = managers.length; i < managerCount; i++) {
    managers.push(addEmployee({ dept: d.id, level: "manager", manager: directors[i % directors.length].id, title: d.manager, grade: "M1", hire: randomDate("2015-01-01", "2023-12-31") }));
  }
  const staffCount = remaining - managers.length - named("staff").length;
  for (let i = 0; i < staffCount; i++) {
    const manager = managers[i % managers.length];
    const intern = ["ENG", "PROD", "MKT"].includes(d.id) && chance(0.03);
    const grade = intern ? "L0" : weighted({ L1: 20, L2: 35, L3: 28, L4: 12, L5: 5 });
    const role = pick(d.roles);
    const title = intern ? `${role} Intern`
      : { L1: `Associate ${role}`, L2: role, L3: `Senior ${role}`, L4: `Staff ${role}`, L5: `Principal ${role}` }[grade];
    const e = addEmployee({
      dept: d.id, level: "staff", manager: manager.id, title, grade, type: intern ? "intern" : chance(0.04) ? "part_time" : "full_time",
      hire: intern ? randomDate("2026-05-15", "2026-09-15") : randomDate(grade >= "L4" ? "2013-06-01" : "2016-01-01", "2026-10-31"),
    });
    // Only staff leave or take leave, so every active employee's manager is active.
    const r = rand();
    if (r < 0.04 && e.hire_date < "2026-06-01") {
      e.status = "terminated";
      e.termination_date = randomDate(addDays(e.hire_date, 120), AS_OF);
      e.pto_balance = 0;
      e.updated_at = `${e.termination_date}T17:00:00Z`;
    } else if (r < 0.07) {
      e.status = "on_leave";
      e.updated_at = at(randomDate("2026-06-01", AS_OF));
    }
  }
}

const depthOf = (e) => (e.manager_id ? depthOf(byId.get(e.manager_id)) + 1 : 0);
const departmentsRows = DEPARTMENTS.map((d) => ({ id: d.id, name: d.name, cost_center: d.cost_center, location: d.location, created_at: "2012-03-01T09:00:00Z" }));
const activeIn = (dept) => employees.filter((e) => e.department_id === dept && e.status !== "terminated");
const salesReps = employees.filter((e) => e.department_id === "SALES" && e.level === "staff" && e.status === "active" && /Account Executive/.test(e.job_title));
const supportStaff = employees.filter((e) => e.department_id === "SUP" && ["staff", "manager"].includes(e.level) && e.status === "active");

// Review cycles: half-years, each due a month after it ends; 2026-H2 is the open cycle.
const CYCLES = [
  { period: "2024-H2", start: "2024-07-01", due: "2025-01-31" },
  { period: "2025-H1", start: "2025-01-01", due: "2025-07-31" },
  { period: "2025-H2", start: "2025-07-01", due: "2026-01-31" },
  { period: "2026-H1", start: "2026-01-01", due: "2026-07-31" },
];
const OPEN_CYCLE = { period: "2026-H2", start: "2026-07-01", due: "2026-12-15" };
const GOALS = ["Ship the quarterly roadmap commitments", "Reduce incident follow-up time", "Mentor a new team member",
  "Improve documentation of owned systems", "Grow key accounts by 10%", "Raise customer satisfaction above 4.5",
  "Complete the compliance training", "Automate a manual reporting process", "Lead a cross-team project", "Present at an all-hands"];
const STRENGTHS = ["Reliable delivery under pressure.", "Clear written communication.", "Strong ownership of customer issues.",
  "Helps teammates get unblocked.", "Deep technical knowledge of the platform.", "Builds trust with stakeholders quickly."];
const IMPROVEMENTS = ["Delegate more and review less.", "Raise risks earlier.", "Prioritise fewer goals at a time.",
  "Share progress more often with the wider team.", "Invest in estimation accuracy.", "Write down decisions and their reasons."];
const reviews = [];
for (const e of employees) {
  const end = e.termination_date ?? AS_OF;
  const eligible = CYCLES.filter((c) => addDays(e.hire_date, 60) <= c.due && c.due <= end);
  const forcedOpen = { [MARCUS]: "scheduled", [SARAH]: "in_progress" }[e.id];
  const open = forcedOpen ?? (e.status !== "terminated" && e.hire_date < "2026-09-01" && e.id !== EVE && chance(0.7) ? weighted({ scheduled: 6, in_progress: 4 }) : null);
  const count = Math.min(eligible.length, open ? int(0, 2) : int(1, 3));
  const done = e.id === MARCUS ? eligible.slice(-2) : eligible.slice(eligible.length - count);
  for (const c of done) {
    const completed = addDays(c.due, -int(0, 20));
    reviews.push({
      employee_id: e.id, reviewer_id: e.manager_id, period: c.period, status: "completed", due_date: c.due, completed_date: completed,
      overall_rating: e.id === MARCUS ? 4 : Number(weighted({ 1: 3, 2: 10, 3: 50, 4: 28, 5: 9 })),
      goals: JSON.stringify(sample(GOALS, int(2, 3))), strengths: pick(STRENGTHS), improvements: pick(IMPROVEMENTS),
      comments: chance(0.3) ? "Discussed growth plan; follow-up in the next one-on-one." : null,
      created_at: at(addDays(c.due, -45)), updated_at: at(completed),
    });
  }
  if (open) {
    reviews.push({
      employee_id: e.id, reviewer_id: e.manager_id, period: OPEN_CYCLE.period, status: open, due_date: OPEN_CYCLE.due,
      completed_date: null, overall_rating: null, goals: JSON.stringify(sample(GOALS, int(2, 3))),
      strengths: open === "in_progress" ? pick(STRENGTHS) : null, improvements: null, comments: null,
      created_at: "2026-11-01T09:00:00Z", updated_at: open === "in_progress" ? at(randomDate("2026-11-02", AS_OF)) : "2026-11-01T09:00:00Z",
    });
  }
}
reviews.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : byId.get(a.employee_id).no - byId.get(b.employee_id).no));
reviews.forEach((r, i) => (r.id = `REV-${pad(i + 1, 5)}`));

// ---------------------------------------------------------------- Finance

// Names with %, _ and quotes (and decoys that a wrongly escaped LIKE would also match) let search
// tests check that input is bound and matched literally.
const VENDORS = [
  ["Nimbus Cloud Hosting", "cloud"], ["Stratus Data Services", "cloud"], ["Keystone Office Supply", "office"],
  ["Brightline Furniture", "office"], ["Harbor & Finch LLP", "legal"], ["Meridian Legal Partners", "legal"],
  ["Pinnacle Recruiting", "recruiting"], ["TalentBridge Staffing", "recruiting"], ["Lumen Marketing Agency", "marketing"],
  ["Echo Events Co.", "events"], ["Atlas Travel Management", "travel"], ["Cobalt Security Audits", "consulting"],
  ["Northwind Consulting Group", "consulting"], ["Vertex Software Licensing", "software"], ["Signal Analytics SaaS", "software"],
  ["Orbit Telecom", "telecom"], ["Greenleaf Facilities", "facilities"], ["Sparkle Cleaning Services", "facilities"],
  ["Summit Training Institute", "training"], ["Redwood Print & Mail", "office"], ["Clearview Audit Partners", "consulting"],
  ["100% Organic Snacks Co.", "catering"], ["1000 Lakes Catering", "catering"], ["Under_Score Analytics", "software"],
  ["Under-Score Printing", "office"], ["O'Brien & Sons Plumbing", "facilities"],
  ["Little Bobby Tables'); DROP TABLE finance_invoices; -- Consulting", "consulting"],
];
const vendors = VENDORS.map(([name, category], i) => ({
  id: `VEN-${pad(i + 1, 3)}`, name, category,
  email: `billing@${slug(name).slice(0, 24) || "vendor"}.example`, created_at: "2020-01-15T09:00:00Z",
}));
const INVOICE_LINES = {
  cloud: ["Compute and storage usage", "Managed database cluster", "CDN and bandwidth"],
  office: ["Office supplies", "Printer toner and paper", "Desks and chairs for the new floor"],
  legal: ["Contract review retainer", "Trademark filing fees", "Employment law advice"],
  recruiting: ["Placement fee: senior hire", "Job board subscription", "Campus recruiting event"],
  marketing: ["Campaign creative", "Paid search management", "Brand refresh workshop"],
  events: ["Conference booth", "Customer summit venue", "Team offsite logistics"],
  travel: ["Group travel booking fees", "Corporate travel management fee"],
  consulting: ["Security penetration test", "Process improvement engagement", "Quarterly advisory retainer"],
  software: ["Annual license renewal", "Seat expansion", "Analytics platform subscription"],
  telecom: ["Phone and conferencing lines", "Office internet circuit"],
  facilities: ["Office cleaning", "HVAC maintenance", "Plumbing repair, 3rd floor kitchen"],
  training: ["Leadership training cohort", "Certification vouchers"],
  catering: ["All-hands catering", "Weekly snacks delivery"],
};
const CATEGORY_DEPTS = {
  cloud: ["ENG", "ENG", "OPS"], office: ["OPS", "OPS", "HR", "FIN"], legal: ["LEGAL"], recruiting: ["HR"], marketing: ["MKT"],
  events: ["MKT", "SALES", "EXEC"], travel: ["SALES", "EXEC"], consulting: ["FIN", "ENG", "OPS", "EXEC", "LEGAL"],
  software: ["ENG", "SALES", "SUP", "PROD", "FIN"], telecom: ["OPS", "SUP"], facilities: ["OPS"], training: ["HR", "SUP", "ENG"],
  catering: ["HR", "OPS", "EXEC"],
};
const approverFor = (amount, dept) => (amount > 2500000 ? RAJ : dept === "FIN" ? RAJ : pick([BOB, heads[dept].id]));
const invoices = [];
for (let i = 0; i < 420; i++) {
  const v = i < vendors.length ? vendors[i] : pick(vendors);
  const dept = pick(CATEGORY_DEPTS[v.category]);
  // Recent invoices are over-represented so the ones still in approval are not a handful.
  const invoiceDate = chance(0.15) ? randomDate(addDays(AS_OF, -40), AS_OF) : randomDate("2025-01-01", AS_OF);
  const dueDate = addDays(invoiceDate, pick([15, 30, 30, 45, 60]));
  const amount = Math.round(Math.exp(Math.log(200) + rand() * Math.log(400)) * 100);
  const status = dueDate < AS_OF
    ? weighted({ paid: 85, rejected: 6, overdue: 9 })
    : weighted({ pending: 40, approved: 40, paid: 12, rejected: 8 });
  const submitted = minDate(addDays(invoiceDate, int(0, 3)), AS_OF);
  const inv = {
    id: uuid(), vendor_id: v.id, vendor_reference: `${v.name.replace(/[^A-Za-z]/g, "").slice(0, 3).toUpperCase()}-${int(10000, 99999)}`,
    amount_cents: amount, currency: "USD", description: pick(INVOICE_LINES[v.category]), department_id: dept, status,
    invoice_date: invoiceDate, due_date: dueDate, submitted_by: pick(activeIn(dept)).id, submitted_at: at(submitted),
    approved_by: null, approved_at: null, paid_at: null, rejection_reason: null,
  };
  if (status === "rejected") inv.rejection_reason = pick(["Duplicate of an earlier invoice", "No purchase order on file", "Amount does not match the quote"]);
  if (["approved", "paid", "overdue"].includes(status)) {
    inv.approved_by = approverFor(amount, dept);
    inv.approved_at = at(minDate(addDays(submitted, int(1, 7)), AS_OF));
  }
  if (status === "paid") inv.paid_at = at(minDate(addDays(inv.approved_at.slice(0, 10), int(2, 25)), minDate(addDays(dueDate, 5), AS_OF)));
  inv.created_at = inv.submitted_at;
  inv.updated_at = inv.paid_at ?? inv.approved_at ?? inv.submitted_at;
  invoices.push(inv);
}

const EXPENSE_ITEMS = {
  airfare: [["Delta Air Lines", "Flight to customer site"], ["United Airlines", "Conference travel"], ["British Airways", "London office visit"]],
  lodging: [["Marriott", "Hotel, 2 nights"], ["Hilton", "Hotel, 3 nights"], ["Airbnb", "Team offsite lodging"]],
  meals: [["Blue Bottle Coffee", "Coffee with candidate"], ["Chipotle", "Working lunch"], ["Le Bernardin", "Client dinner"]],
  ground_transport: [["Uber", "Airport transfer"], ["Lyft", "Ride to client office"], ["Hertz", "Car rental"]],
  software: [["JetBrains", "IDE license"], ["Figma", "Design seat"], ["Notion", "Team workspace"]],
  supplies: [["Amazon", "USB-C adapters"], ["Staples", "Notebooks and pens"], ["Best Buy", "Headset"]],
  training: [["O'Reilly Media", "Online learning subscription"], ["Coursera", "Certification course"]],
};
const ITEM_RANGES = { airfare: [250, 1400], lodging: [180, 900], meals: [12, 350], ground_transport: [15, 120], software: [10, 250], supplies: [8, 180], training: [30, 600] };
const monthsBetween = (from, to) => {
  const months = [];
  for (let y = +from.slice(0, 4), m = +from.slice(5, 7); `${y}-${pad(m, 2)}` <= to; m === 12 ? (y++, (m = 1)) : m++) months.push(`${y}-${pad(m, 2)}`);
  return months;
};
const MONTHS = monthsBetween("2025-01", AS_OF.slice(0, 7));
const expenseReports = [];
for (const e of employees) {
  const travels = e.department_id === "SALES" || ["ceo", "vp", "director"].includes(e.level);
  // Frank has no finance records (deleting him is the seed's example); Marcus has October's report.
  if (e.id === FRANK || !(e.id === MARCUS || travels || (e.level === "manager" && chance(0.6)) || chance(0.08))) continue;
  for (const month of MONTHS) {
    if (month < e.hire_date.slice(0, 7) || (e.termination_date && month > e.termination_date.slice(0, 7))) continue;
    if (!(e.id === MARCUS && month === "2026-10") && !chance(travels ? 0.3 : 0.15)) continue;
    const age = MONTHS.length - 1 - MONTHS.indexOf(month);
    const status = e.id === MARCUS && month === "2026-10" ? "approved"
      : age >= 3 ? weighted({ reimbursed: 93, rejected: 7 })
      : age === 2 ? weighted({ reimbursed: 60, approved: 25, submitted: 10, rejected: 5 })
      : age === 1 ? weighted({ submitted: 50, approved: 25, draft: 15, reimbursed: 5, rejected: 5 })
      : weighted({ draft: 70, submitted: 30 });
    const lastDay = minDate(addDays(`${month}-01`, 27), AS_OF);
    const items = Array.from({ length: int(1, 5) }, () => {
      const category = travels ? weighted({ airfare: 2, lodging: 3, meals: 5, ground_transport: 4, software: 1, supplies: 1, training: 1 })
        : weighted({ meals: 3, ground_transport: 1, software: 3, supplies: 3, training: 2 });
      const [merchant, description] = pick(EXPENSE_ITEMS[category]);
      const [lo, hi] = ITEM_RANGES[category];
      return { date: randomDate(`${month}-01`, lastDay), category, merchant, description, amount_cents: int(lo * 100, hi * 100) };
    }).sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
    const submitted = status === "draft" ? null : minDate(addDays(lastDay, int(1, 5)), AS_OF);
    const approved = ["approved", "reimbursed"].includes(status) ? minDate(addDays(submitted, int(1, 6)), AS_OF) : null;
    const reimbursed = status === "reimbursed" ? minDate(addDays(approved, int(3, 10)), AS_OF) : null;
    expenseReports.push({
      employee_id: e.id, department_id: e.department_id, month, status, items: JSON.stringify(items),
      total_cents: items.reduce((s, it) => s + it.amount_cents, 0),
      submitted_at: submitted && at(submitted), approved_by: approved && (e.manager_id ?? RAJ), approved_at: approved && at(approved),
      reimbursed_at: reimbursed && at(reimbursed), notes: status === "rejected" ? "Receipts missing for some items; please resubmit." : null,
      created_at: `${month}-01T09:00:00Z`, updated_at: reimbursed ? at(reimbursed) : approved ? at(approved) : submitted ? at(submitted) : `${month}-01T09:00:00Z`,
    });
  }
}
expenseReports.sort((a, b) => (a.month < b.month ? -1 : a.month > b.month ? 1 : byId.get(a.employee_id).no - byId.get(b.employee_id).no));
for (const r of expenseReports) r.id = uuid();

// Budgets follow the spend finance_budget_summary derives (paid invoices by payment year,
// reimbursed reports by month): FY2025 is closed, FY2026 (the current year) is active, and every
// department has submitted FY2027, which awaits approval (approve_budget).
const spend = {};
for (const inv of invoices.filter((i) => i.status === "paid")) {
  const key = `${inv.department_id}/${inv.paid_at.slice(0, 4)}`;
  spend[key] = (spend[key] ?? 0) + inv.amount_cents;
}
for (const r of expenseReports.filter((r) => r.status === "reimbursed")) {
  const key = `${r.department_id}/${r.month.slice(0, 4)}`;
  spend[key] = (spend[key] ?? 0) + r.total_cents;
}
const roundK = (cents) => Math.max(5000000, Math.round(cents / 100000) * 100000);
const budgets = [];
for (const d of DEPARTMENTS) {
  const approver = d.id === "FIN" ? EVE : RAJ;
  const fy2025 = roundK((spend[`${d.id}/2025`] ?? 0) * (0.9 + rand() * 0.3));
  const fy2026 = roundK((spend[`${d.id}/2026`] ?? 0) * (365 / 324) * (0.95 + rand() * 0.3));
  const fy2027 = roundK(fy2026 * (1.02 + rand() * 0.13));
  const base = { department_id: d.id, submitted_by: heads[d.id].id };
  budgets.push({ ...base, id: uuid(), fiscal_year: 2025, allocated_cents: fy2025, status: "closed",
    submitted_at: at(randomDate("2024-11-01", "2024-11-20")), approved_by: approver, approved_at: at(randomDate("2024-12-01", "2024-12-15")), notes: null });
  budgets.push({ ...base, id: uuid(), fiscal_year: 2026, allocated_cents: fy2026, status: "active",
    submitted_at: at(randomDate("2025-11-01", "2025-11-20")), approved_by: approver, approved_at: at(randomDate("2025-12-01", "2025-12-15")), notes: null });
  budgets.push({ ...base, id: uuid(), fiscal_year: 2027, allocated_cents: fy2027, status: "pending_approval",
    submitted_at: at(randomDate("2026-11-02", "2026-11-16")), approved_by: null, approved_at: null,
    notes: `Requested ${((fy2027 / fy2026 - 1) * 100).toFixed(1)}% over FY2026.` });
}
for (const b of budgets) b.created_at = b.updated_at = b.approved_at ?? b.submitted_at;

// ---------------------------------------------------------------- Sales

const NAME_A = ["Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Hooli", "Vandelay", "Soylent", "Cyberdyne", "Tyrell",
  "Wonka", "Gringotts", "Oscorp", "Massive Dynamic", "Northwind", "Contoso", "Fabrikam", "Blue Harbor", "Silver Pine", "Red Rock",
  "Evergreen", "Ironclad", "Lighthouse", "Polaris", "Quantum", "Riverbend", "Sunbeam", "Tidewater", "Zenith"];
const NAME_B = [["Logistics", "Transportation"], ["Health", "Healthcare"], ["Robotics", "Manufacturing"], ["Foods", "Food & Beverage"],
  ["Analytics", "Technology"], ["Energy", "Energy"], ["Bank", "Financial Services"], ["Retail", "Retail"], ["Media", "Media"],
  ["Insurance", "Insurance"], ["Labs", "Technology"], ["Airlines", "Transportation"]];
const SUFFIX = [", Inc.", " LLC", " Corp.", " Ltd.", " GmbH", " Holdings, Inc."];
const PLACES = [["San Francisco", "CA", "941", "US"], ["New York", "NY", "100", "US"], ["Austin", "TX", "787", "US"], ["Chicago", "IL", "606", "US"],
  ["Seattle", "WA", "981", "US"], ["Boston", "MA", "021", "US"], ["Denver", "CO", "802", "US"], ["Atlanta", "GA", "303", "US"],
  ["Toronto", "ON", "M5V", "CA"], ["London", null, "EC1", "GB"], ["Berlin", null, "101", "DE"], ["Sydney", "NSW", "200", "AU"]];
const STREETS = ["Market St", "Main St", "Broadway", "Oak Ave", "Pine St", "Harbor Blvd", "Innovation Way", "Commerce Dr"];
const TITLES = ["CTO", "VP of Operations", "Head of IT", "Procurement Manager", "Director of Engineering", "CFO", "Operations Lead"];
// Named like the vendors above: literal %, _ and quotes for search tests.
const SPECIAL_CUSTOMERS = [["100% Solar Cooperative", "Energy"], ["Data_Driven Labs", "Technology"], ["O'Malley's Pubs", "Food & Beverage"]];
const usedCustomerNames = new Set();
const customers = [];
const contacts = [];
for (let i = 0; i < 160; i++) {
  let name;
  let industry;
  if (i < SPECIAL_CUSTOMERS.length) [name, industry] = SPECIAL_CUSTOMERS[i];
  else {
    do {
      const [b, ind] = pick(NAME_B);
      name = `${pick(NAME_A)} ${b}`;
      industry = ind;
    } while (usedCustomerNames.has(name));
  }
  usedCustomerNames.add(name);
  const tier = weighted({ enterprise: 20, business: 40, startup: 30, free: 10 });
  const [city, state, zip, country] = pick(PLACES);
  const domain = `${slug(name)}.example`;
  const created = at(randomDate("2019-01-01", "2026-09-30"));
  const c = {
    id: `CUST-${pad(i + 1, 4)}`, name, company: `${name}${pick(SUFFIX)}`, email: `accounts@${domain}`,
    phone: `+1-${pick(["415", "212", "512", "312", "206", "617"])}-555-02${pad(int(0, 99), 2)}`, industry, tier,
    annual_revenue_cents: { enterprise: dollars(500e6, 20e9, 1e6), business: dollars(20e6, 500e6, 1e5), startup: dollars(1e6, 20e6, 1e4), free: dollars(1e5, 2e6, 1e3) }[tier],
    street: `${int(1, 2500)} ${pick(STREETS)}`, city, state, zip: /^\d+$/.test(zip) ? `${zip}${pad(int(0, 99), 2)}` : `${zip} ${int(1, 9)}AB`, country,
    account_owner_id: pick(salesReps).id, created_at: created, updated_at: created,
  };
  customers.push(c);
  for (let k = 0, n = int(1, 3); k < n; k++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    contacts.push({
      id: `CON-${pad(contacts.length + 1, 5)}`, customer_id: c.id, first_name: first, last_name: last,
      email: `${slug(first)}.${slug(last)}${k ? k + 1 : ""}@${domain}`, phone: `+1-555-03${pad(int(0, 99), 2)}`, job_title: pick(TITLES),
      is_primary: k === 0 ? 1 : 0, created_at: created,
    });
  }
}

const PRODUCTS = ["Platform license", "Support renewal", "Seat expansion", "Analytics add-on", "Professional services", "Multi-year renewal", "Pilot"];
const OPEN_STAGES = { PROSPECTING: 10, DISCOVERY: 20, QUALIFICATION: 35, PROPOSAL: 60, NEGOTIATION: 80 };
const DEAL_VALUES = { enterprise: [50000, 750000], business: [10000, 150000], startup: [3000, 40000], free: [1000, 10000] };
const deals = [];
for (let i = 0; i < 460; i++) {
  const c = pick(customers);
  const closed = chance(0.5);
  const stage = closed ? weighted({ CLOSED_WON: 55, CLOSED_LOST: 45 }) : weighted({ PROSPECTING: 1, DISCOVERY: 1, QUALIFICATION: 1, PROPOSAL: 1, NEGOTIATION: 1 });
  // Open deals: a few already slipped, many closing this month (Carol's "closing this month"),
  // the rest over the next three quarters.
  const when = closed ? "closed" : weighted({ slipped: 1, thisMonth: 3, later: 10 });
  const close = when === "closed" ? randomDate("2025-01-01", addDays(AS_OF, -1))
    : when === "slipped" ? randomDate("2026-10-01", addDays(AS_OF, -1))
    : when === "thisMonth" ? randomDate(AS_OF, "2026-11-30") : randomDate("2026-12-01", "2027-09-30");
  const [lo, hi] = DEAL_VALUES[c.tier];
  const created = at(minDate(addDays(close, -int(30, 240)), AS_OF));
  deals.push({
    id: `DEAL-${pad(i + 1, 5)}`, customer_id: c.id, name: `${c.name} - ${pick(PRODUCTS)}`, value_cents: dollars(lo, hi, 100), currency: "USD", stage,
    probability: stage === "CLOSED_WON" ? 100 : stage === "CLOSED_LOST" ? 0 : Math.min(95, Math.max(5, OPEN_STAGES[stage] + int(-5, 5))),
    expected_close_date: close, owner_id: chance(0.8) ? c.account_owner_id : pick(salesReps).id,
    notes: chance(0.3) ? pick(["Champion is the CTO.", "Security review in progress.", "Competing with an in-house build.", "Needs legal sign-off on the DPA."]) : null,
    loss_reason: stage === "CLOSED_LOST" ? pick(["Chose a competitor", "Budget cut", "No decision", "Price", "Timing"]) : null,
    closed_at: closed ? `${close}T17:00:00Z` : null, created_at: created, updated_at: closed ? `${close}T17:00:00Z` : at(minDate(addDays(created.slice(0, 10), int(1, 30)), AS_OF)),
  });
}

// ---------------------------------------------------------------- Support

const ISSUES = [
  { category: "authentication", tags: ["login", "sso"], subject: "Users cannot log in with SSO", description: "Since this morning our users get an 'invalid SAML response' error when signing in through Okta. Password login still works.", resolution: "The customer's identity provider certificate had rotated; uploaded the new certificate and SSO works again." },
  { category: "authentication", tags: ["login", "mfa"], subject: "MFA codes rejected for one user", description: "One of our admins says every authenticator code is rejected as expired.", resolution: "The user's phone clock was 4 minutes off; enabling automatic time fixed the codes." },
  { category: "authentication", tags: ["password", "email"], subject: "Password reset email never arrives", description: "Reset emails are not reaching our staff. We checked spam folders.", resolution: "Their mail server rejected our sender domain; the customer allow-listed it and resets arrive." },
  { category: "billing", tags: ["invoice", "billing"], subject: "Charged twice for the monthly plan", description: "Our card statement shows two charges for this month's subscription.", resolution: "A retried payment created a duplicate charge; refunded the second charge." },
  { category: "billing", tags: ["invoice", "tax"], subject: "VAT number missing from invoice", description: "Our invoices do not show our VAT registration number, which our accountants need.", resolution: "Added the VAT number to the billing profile and reissued the last three invoices." },
  { category: "billing", tags: ["plan", "upgrade"], subject: "Upgrade did not unlock new seats", description: "We upgraded to the business plan but still cannot add more than 10 users.", resolution: "The seat limit cache was stale; refreshed the entitlement and the seats are available." },
  { category: "performance", tags: ["dashboard", "slow"], subject: "Dashboard takes over a minute to load", description: "The main dashboard is extremely slow for accounts with many projects, often timing out.", resolution: "Added an index for the project summary query; load time is now under two seconds." },
  { category: "performance", tags: ["api", "latency"], subject: "API latency spikes every hour", description: "Our monitoring shows p99 latency of several seconds at the top of every hour.", resolution: "An hourly batch job competed for the same database; it now runs on a replica." },
  { category: "integration", tags: ["webhook", "api"], subject: "Webhooks stopped firing", description: "We no longer receive webhook deliveries for new orders; the endpoint is reachable.", resolution: "Webhook deliveries were paused after repeated 500 responses; the customer fixed the endpoint and we re-enabled it." },
  { category: "integration", tags: ["salesforce", "sync"], subject: "Salesforce sync duplicates contacts", description: "Every sync creates duplicate contacts in Salesforce for records with uppercase emails.", resolution: "Email matching is now case-insensitive; a cleanup job merged the duplicates." },
  { category: "integration", tags: ["slack", "notifications"], subject: "Slack notifications go to the wrong channel", description: "Alerts for the finance workspace are posted in the engineering channel.", resolution: "The channel mapping pointed at an archived channel ID; remapped it." },
  { category: "bug", tags: ["export", "csv"], subject: "CSV export cuts off at 10,000 rows", description: "Exporting the full report to CSV silently stops after 10,000 rows.", resolution: "Large exports now stream in pages; the full report downloads." },
  { category: "bug", tags: ["editor", "browser"], subject: "Editor crashes when pasting tables", description: "Pasting a table from a spreadsheet into the editor freezes the browser tab in Firefox.", resolution: "Fixed in release 4.12: pasted tables are converted before rendering." },
  { category: "bug", tags: ["timezone", "reports"], subject: "Scheduled reports arrive a day late", description: "Weekly reports scheduled for Monday arrive on Tuesday for our Sydney office.", resolution: "The scheduler used UTC for the send day; it now uses the account's time zone." },
  { category: "account", tags: ["users", "admin"], subject: "Transfer account ownership", description: "Our account owner has left the company; please transfer ownership to the new IT lead.", resolution: "Verified the request with the billing contact and transferred ownership." },
  { category: "account", tags: ["data", "gdpr"], subject: "Request to delete personal data", description: "A former customer of ours asked us to delete their personal data from your platform.", resolution: "Deleted the records and sent the customer the deletion confirmation." },
  { category: "feature_request", tags: ["api", "feature"], subject: "Request: bulk update endpoint", description: "We would like an API endpoint to update many records in one call instead of one by one.", resolution: "Logged as a feature request; the bulk endpoint is on the roadmap for next quarter." },
  { category: "feature_request", tags: ["reports", "feature"], subject: "Request: custom fields in reports", description: "Please allow custom fields as columns in the reporting module.", resolution: "Shared the workaround of exporting with custom fields; request added to the backlog." },
  { category: "data", tags: ["import", "csv"], subject: "Import fails with encoding error", description: "Uploading our customer list fails with 'invalid byte sequence' for names with accents.", resolution: "The file was Latin-1 encoded; re-saved as UTF-8 and the import succeeded." },
  { category: "data", tags: ["backup", "restore"], subject: "Restore deleted project", description: "A team member deleted a project by mistake yesterday. Can it be restored?", resolution: "Restored the project from the nightly snapshot." },
];
// Fixed tickets for tests: literal %, _ and quotes, an injection attempt stored verbatim, and a
// word ("quarantined") that appears in no other ticket, for FTS5 checks.
const FIXED_TICKETS = [
  { category: "billing", tags: ["discount", "billing"], subject: "Discount code shows 100% off for every plan", description: "Entering the promo code SAVE_100 applies a 100% discount to all plans instead of 10% on the first month. The promo_code field accepts '100%' literally.", status: "in_progress", priority: "critical" },
  { category: "bug", tags: ["export", "quotes"], subject: "Export fails for account named O'Brien & Sons", description: "Exporting the account \"O'Brien & Sons\" returns error 500; accounts without an apostrophe export fine.", status: "resolved", priority: "high", resolution: "Names are now escaped in the export file; O'Brien & Sons exports correctly." },
  { category: "security", tags: ["security", "input"], subject: "Suspicious input '; DROP TABLE support_tickets; -- in contact form", description: "A bot submitted the string '; DROP TABLE support_tickets; -- into the name field of our contact form. Please confirm it was stored verbatim and nothing else happened.", status: "closed", priority: "medium", resolution: "Confirmed: the value was stored as text through bound parameters; no data was affected." },
  { category: "integration", tags: ["email", "attachments"], subject: "Invoice attachments quarantined by mail gateway", description: "Invoices we email to our customers are quarantined by their mail gateway because the PDF attachment is flagged as macro-enabled.", status: "open", priority: "high" },
];
const ticketRows = [];
const contactsOf = (customerId) => contacts.filter((c) => c.customer_id === customerId);
const RESOLUTION_HOURS = { critical: [1, 12], high: [4, 48], medium: [12, 120], low: [24, 240] };
function ticketTimes(status, priority, created) {
  const t = { created_at: created, resolved_at: null, closed_at: null };
  if (status === "resolved" || status === "closed") {
    const [lo, hi] = RESOLUTION_HOURS[priority];
    t.resolved_at = new Date(Date.parse(created) + int(lo, hi) * 3600000).toISOString().replace(/\.\d+Z$/, "Z");
    if (status === "closed") t.closed_at = new Date(Date.parse(t.resolved_at) + int(2, 7) * DAY).toISOString().replace(/\.\d+Z$/, "Z");
  }
  t.updated_at = t.closed_at ?? t.resolved_at ?? (status === "open" ? created : at(minDate(addDays(created.slice(0, 10), int(0, 5)), AS_OF)));
  if (t.updated_at < created) t.updated_at = created;
  return t;
}
for (let i = 0; i < 660; i++) {
  const fixed = FIXED_TICKETS[i];
  const issue = fixed ?? pick(ISSUES);
  const c = fixed ? customers[i] : pick(customers);
  const status = fixed?.status ?? weighted({ open: 15, in_progress: 15, pending: 10, resolved: 25, closed: 35 });
  const priority = fixed?.priority ?? weighted({ low: 30, medium: 40, high: 22, critical: 8 });
  // Closed tickets are old enough to have been resolved and then closed before AS_OF.
  const created = at(["open", "in_progress", "pending"].includes(status) ? randomDate(addDays(AS_OF, -60), AS_OF)
    : randomDate("2025-01-01", addDays(AS_OF, status === "closed" ? -20 : -11)));
  const resolved = status === "resolved" || status === "closed";
  const contact = pick(contactsOf(c.id));
  ticketRows.push({
    ticket_no: i + 1, id: `TKT-${pad(i + 1, 6)}`, subject: issue.subject, description: issue.description, status, priority,
    category: issue.category, tags: JSON.stringify(issue.tags), customer_id: c.id, contact_id: contact.id,
    assigned_to: fixed ? DAN : status === "open" && chance(0.4) ? null : pick(supportStaff).id,
    resolution: resolved ? issue.resolution : null,
    resolution_type: resolved ? (fixed ? "solved" : weighted({ solved: 70, workaround: 12, duplicate: 8, cannot_reproduce: 6, wont_fix: 4 })) : null,
    ...ticketTimes(status, priority, created),
  });
}

const TOPICS = [
  ["Single sign-on", "authentication", ["sso", "saml", "login"], "Single sign-on lets your users sign in with your identity provider (Okta, Azure AD, Google Workspace) instead of a password."],
  ["Multi-factor authentication", "authentication", ["mfa", "security"], "Multi-factor authentication adds a one-time code from an authenticator app to every sign-in."],
  ["Password resets", "authentication", ["password", "email"], "Users can reset their own password from the sign-in page; admins can force a reset for any user."],
  ["Invoices and receipts", "billing", ["invoice", "billing"], "Invoices are issued on the first day of each billing period and are available under Settings, Billing."],
  ["Changing your plan", "billing", ["plan", "upgrade", "billing"], "Plan changes take effect immediately; upgrades are prorated and downgrades apply from the next period."],
  ["Tax and VAT details", "billing", ["tax", "vat", "invoice"], "Add your tax registration number to the billing profile so it appears on every invoice."],
  ["Dashboard performance", "performance", ["dashboard", "performance"], "Dashboards load data for every widget in parallel; very large accounts benefit from saved filters."],
  ["API rate limits", "api", ["api", "rate-limit"], "The API allows 600 requests per minute per token; responses carry the remaining quota in headers."],
  ["Webhooks", "integration", ["webhook", "api"], "Webhooks deliver events to your HTTPS endpoint and are retried with backoff for up to 24 hours."],
  ["Salesforce integration", "integration", ["salesforce", "sync", "crm"], "The Salesforce integration syncs accounts and contacts every 15 minutes in both directions."],
  ["Slack notifications", "integration", ["slack", "notifications"], "Connect Slack to receive alerts in the channels you choose, per project."],
  ["CSV import and export", "data", ["csv", "import", "export"], "Imports accept UTF-8 CSV files up to 50 MB; exports stream the full result set."],
  ["Backups and restores", "data", ["backup", "restore"], "Every account is backed up nightly and snapshots are kept for 30 days."],
  ["User roles and permissions", "account", ["users", "roles", "admin"], "Roles control what each user can see and change; admins manage roles under Settings, Users."],
  ["Account ownership", "account", ["owner", "admin"], "Each account has one owner who controls billing and can transfer ownership to another admin."],
  ["Data retention and deletion", "compliance", ["gdpr", "privacy", "data"], "You can delete personal data on request; deletions propagate to backups within 30 days."],
  ["Scheduled reports", "reports", ["reports", "schedule", "timezone"], "Scheduled reports are sent in the account's time zone to any list of recipients."],
  ["Custom fields", "reports", ["custom-fields", "reports"], "Custom fields can be added to records and used as filters and report columns."],
  ["Browser support", "getting_started", ["browser", "setup"], "The app supports the two latest versions of Chrome, Firefox, Safari and Edge."],
  ["Mobile app", "getting_started", ["mobile", "setup"], "The mobile app offers dashboards, notifications and approvals on iOS and Android."],
  ["Audit log", "compliance", ["audit", "security"], "The audit log records every sign-in and change, and can be exported for your SIEM."],
  ["Email deliverability", "integration", ["email", "deliverability"], "Add our sending domain to your allow list and publish our SPF include to avoid spam filtering."],
  ["Searching records", "getting_started", ["search", "filters"], "Search matches whole words in names and descriptions; use filters to narrow by status or owner."],
  ["Sandbox accounts", "api", ["sandbox", "api", "testing"], "Sandbox accounts mirror production features with test data and no billing."],
];
const KINDS = [
  ["How to set up", (t) => `## Overview\n${t[3]}\n\n## Steps\n1. Open Settings and choose ${t[0]}.\n2. Follow the on-screen instructions and save.\n3. Test the change with a non-admin user before rolling it out.\n\n## Related\nSee the troubleshooting article for ${t[0].toLowerCase()} if something does not work.`],
  ["Troubleshooting", (t) => `## Symptoms\nSomething related to ${t[0].toLowerCase()} does not behave as expected.\n\n## Checks\n- Confirm the feature is enabled for your plan.\n- Review the audit log for recent configuration changes.\n- Try again in a private browser window to rule out cached settings.\n\n## Background\n${t[3]}\n\nIf the problem persists, open a ticket with the time it happened and any error message.`],
  ["FAQ:", (t) => `## Frequently asked questions\n**What is it?** ${t[3]}\n\n**Which plans include it?** Business and enterprise plans; startups can request a trial.\n\n**Who can change it?** Account admins.`],
];
const SPECIAL_ARTICLE = {
  title: "Searching for literal % and _ characters in filters",
  content: "## Why it matters\nIn filters, % and _ are matched literally: searching for 100% finds \"100% Solar Cooperative\" but not \"1000 Lakes\", and Data_Driven does not match DataXDriven.\n\n## Quotes\nNames like O'Malley's Pubs need no escaping; the app binds every value. Even input such as '; DROP TABLE users; -- is stored and searched as plain text.",
  summary: "How % and _ (and quotes) are treated in search filters.", category: "getting_started", tags: ["search", "filters", "special-characters"],
};
const articleAuthors = [...supportStaff, ...activeIn("PROD").slice(0, 5)];
const articles = [];
for (const t of TOPICS) {
  for (const [prefix, body] of KINDS) {
    articles.push({ title: `${prefix} ${t[0].toLowerCase()}`, content: body(t), summary: t[3], category: t[1], tags: t[2] });
  }
}
articles.push(SPECIAL_ARTICLE);
const articleRows = articles.map((a, i) => {
  const status = i === articles.length - 1 ? "published" : weighted({ published: 80, draft: 12, archived: 8 });
  const created = at(randomDate("2023-01-01", "2026-10-31"));
  const views = status === "draft" ? 0 : int(20, 25000);
  return {
    article_no: i + 1, id: `KB-${pad(i + 1, 4)}`, title: a.title, content: a.content, summary: a.summary, category: a.category,
    tags: JSON.stringify(a.tags), author_id: pick(articleAuthors).id, status, view_count: views, helpful_votes: Math.floor(views * rand() * 0.1),
    created_at: created, updated_at: at(randomDate(created.slice(0, 10), AS_OF)),
  };
});

// ---------------------------------------------------------------- output

const header = `-- GENERATED by scripts/domain-data.js (npm run domain-data): do not edit by hand.
-- Sample company for the HR, Finance, Sales and Support tools (issue 4), dated as of ${AS_OF}.
-- Named sample users and what they should see: docs/domain-data.md. Not a migration: loaded by
-- \`npm run dev\`, the tests and \`npm run sample-data\` (docs/deploying.md), after the migrations.
-- ${employees.length} employees, ${reviews.length} reviews, ${invoices.length} invoices, ${expenseReports.length} expense reports,
-- ${budgets.length} budgets, ${customers.length} customers, ${contacts.length} contacts, ${deals.length} deals, ${ticketRows.length} tickets,
-- ${articleRows.length} knowledge articles.
`;
out.push(header);
insert("hr_grade_levels", ["grade", "title", "level", "track", "salary_min_cents", "salary_max_cents", "pto_days"], GRADES, "grade");
insert("hr_departments", ["id", "name", "cost_center", "location", "created_at"], departmentsRows);
// Managers before their reports: foreign keys are checked per statement.
const ordered = [...employees].sort((a, b) => depthOf(a) - depthOf(b) || a.no - b.no);
insert("hr_employees", ["id", "first_name", "last_name", "email", "personal_email", "phone", "ssn", "salary_cents", "job_title",
  "department_id", "manager_id", "grade", "employment_type", "location", "hire_date", "status", "termination_date", "pto_balance",
  "created_at", "updated_at"], ordered);
for (const d of DEPARTMENTS) out.push(`UPDATE hr_departments SET head_employee_id = ${sql(heads[d.id].id)} WHERE id = ${sql(d.id)};\n`);
insert("hr_performance_reviews", ["id", "employee_id", "reviewer_id", "period", "status", "due_date", "completed_date", "overall_rating",
  "goals", "strengths", "improvements", "comments", "created_at", "updated_at"], reviews);
insert("finance_vendors", ["id", "name", "category", "email", "created_at"], vendors);
insert("finance_invoices", ["id", "vendor_id", "vendor_reference", "amount_cents", "currency", "description", "department_id", "status",
  "invoice_date", "due_date", "submitted_by", "submitted_at", "approved_by", "approved_at", "paid_at", "rejection_reason", "created_at",
  "updated_at"], invoices);
insert("finance_expense_reports", ["id", "employee_id", "department_id", "month", "status", "items", "total_cents", "submitted_at",
  "approved_by", "approved_at", "reimbursed_at", "notes", "created_at", "updated_at"], expenseReports);
insert("finance_budgets", ["id", "department_id", "fiscal_year", "allocated_cents", "status", "submitted_by", "submitted_at", "approved_by",
  "approved_at", "notes", "created_at", "updated_at"], budgets);
insert("sales_customers", ["id", "name", "company", "email", "phone", "industry", "tier", "annual_revenue_cents", "street", "city", "state",
  "zip", "country", "account_owner_id", "created_at", "updated_at"], customers);
insert("sales_contacts", ["id", "customer_id", "first_name", "last_name", "email", "phone", "job_title", "is_primary", "created_at"], contacts);
insert("sales_deals", ["id", "customer_id", "name", "value_cents", "currency", "stage", "probability", "expected_close_date", "owner_id",
  "notes", "loss_reason", "closed_at", "created_at", "updated_at"], deals);
insert("support_tickets", ["ticket_no", "id", "subject", "description", "status", "priority", "category", "tags", "customer_id", "contact_id",
  "assigned_to", "resolution", "resolution_type", "created_at", "updated_at", "resolved_at", "closed_at"], ticketRows);
insert("support_knowledge_articles", ["article_no", "id", "title", "content", "summary", "category", "tags", "author_id", "status",
  "view_count", "helpful_votes", "created_at", "updated_at"], articleRows);

// Cached domain reads are keyed by this generation: loading (or removing) the company makes every
// earlier cached read unreachable, as a confirmed write does.
const BUMP = "UPDATE domain_generation SET generation = generation + 1 WHERE id = 1;\n";
out.push(BUMP);

// Reverse order, so nothing still refers to a row when it goes (employees deepest first: a manager
// after their reports). A row of the deployment's own that refers to a sample row without a cascade
// makes the whole file fail and roll back, deleting nothing.
const removal = [`-- GENERATED by scripts/domain-data.js (npm run domain-data): do not edit by hand.
-- Deletes exactly the rows of sample-data/domain.sql, by primary key (npm run sample-data -- --remove).
-- Rows that belong to a deleted sample employee or customer go with it (ON DELETE CASCADE).
`];
for (const { table, key, values } of [...added].reverse()) {
  const keys = [...values].reverse();
  for (let i = 0; i < keys.length; i += 100) {
    removal.push(`DELETE FROM ${table} WHERE ${key} IN (${keys.slice(i, i + 100).map(sql).join(", ")});\n`);
  }
}
removal.push(BUMP);

const args = process.argv.slice(2);
if (args.length && !(args[0] === "--out-dir" && args[1] && args.length === 2)) {
  console.error("usage: node scripts/domain-data.js [--out-dir DIR]");
  process.exit(2);
}
const dir = args[1] ?? join(root, "sample-data");
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, "domain.sql"), out.join("\n"));
writeFileSync(join(dir, "remove-domain.sql"), removal.join(""));
console.log(`wrote ${join(dir, "domain.sql")} and remove-domain.sql (${employees.length} employees, ${ticketRows.length} tickets)`);
