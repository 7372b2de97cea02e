// The seed's trip-confirmation-comprehensive template as plain string code: what a TypeScript
// developer writes when the template is fixed. Missing values render as empty text, as they do
// in ours.

type Vars = Record<string, unknown>;

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** The value at a dotted path, or undefined. */
function at(vars: Vars, path: string): unknown {
  let v: unknown = vars;
  for (const key of path.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Vars)[key];
  }
  return v;
}

const str = (v: unknown): string => (v === undefined || v === null ? "" : String(v));

/** `YYYY-MM-DD` in one of the template's date formats. */
function date(v: unknown, format: "long" | "day" | "short" | "month"): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(str(v));
  if (!m) return str(v);
  const month = MONTHS[Number(m[2]) - 1] ?? "";
  if (format === "long") return `${month} ${m[3]}, ${m[1]}`;
  if (format === "day") return `${month} ${m[3]}`;
  if (format === "short") return `${month.slice(0, 3)} ${m[3]}`;
  return month;
}

/** `HH:MM` as `h:mm A`. */
function time(v: unknown, fallback = ""): string {
  const m = /^(\d{1,2}):(\d{2})/.exec(str(v));
  if (!m) return v === undefined ? fallback : str(v);
  const h = Number(m[1]);
  return `${h % 12 === 0 ? 12 : h % 12}:${m[2]} ${h >= 12 ? "PM" : "AM"}`;
}

const money = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
const currency = (v: unknown): string => (typeof v === "number" ? money.format(v) : str(v));

/** process_template's built-in agent under the template's own `agent.title` default. */
const AGENT = { name: "Kim Henderson", title: "Senior Travel Consultant", agency: "Somo Travel" };

/** The stored template's default values (migrations/0003_templates.sql), by dotted path. */
const DEFAULTS: Record<string, unknown> = {
  "client.tier": "standard",
  "trip.trip_type": "vacation",
  "trip.travelers.children": 0,
  "pricing.remaining_balance": 0,
  "support.emergency_phone": "+1-800-TRAVEL-1",
};

/** Sets `value` at a dotted path of `vars` unless one is there, copying the objects on the way. */
function withDefault(vars: Vars, path: string, value: unknown): Vars {
  const [head, ...rest] = path.split(".");
  const inner = vars[head];
  if (rest.length === 0) return inner === undefined ? { ...vars, [head]: value } : vars;
  const obj = inner !== null && typeof inner === "object" ? (inner as Vars) : {};
  return { ...vars, [head]: withDefault(obj, rest.join("."), value) };
}

/** Renders the confirmation; `sessionId` and `today` are what process_template adds. Returns the
 * text and the paths that had no value, in order of first use. */
export function tripConfirmation(input: Vars, { sessionId, today }: { sessionId: string; today: Date }): { text: string; missing: string[] } {
  let vars: Vars = { ...input, agent: { ...AGENT, ...((input.agent as Vars) ?? {}) } };
  for (const [path, value] of Object.entries(DEFAULTS)) vars = withDefault(vars, path, value);
  const missing: string[] = [];
  const v = (path: string) => {
    const value = at(vars, path);
    if (value === undefined && !missing.includes(path)) missing.push(path);
    return str(value);
  };
  const n = (path: string) => Number(at(vars, path) ?? 0);
  const children = n("trip.travelers.children");
  const activities = (at(vars, "activities") as Vars[] | undefined) ?? [];
  const amenities = (at(vars, "hotel.amenities") as unknown[] | undefined) ?? [];
  const specialItems = at(vars, "trip.destination.special_items") as unknown[] | undefined;
  const occasions = at(vars, "trip.special_occasions") as unknown[] | undefined;
  const vip = v("client.tier") === "vip";
  const iso = today.toISOString().slice(0, 10);
  const text = `Subject: Your ${v("trip.destination.city")} Adventure is Confirmed! 🎉

Dear ${v("client.name")},

Fantastic news! Your ${v("trip.trip_type")} to ${v("trip.destination.city")}, ${v("trip.destination.country")} is officially confirmed and ready for an amazing experience!

## 📅 **Trip Summary**

**Traveler${n("trip.travelers.adults") > 1 ? "s" : ""}:** ${v("client.name")}${children > 0 ? ` and ${children} child${children > 1 ? "ren" : ""}` : ""}
**Destination:** ${v("trip.destination.city")}, ${v("trip.destination.country")}
**Departure:** ${date(at(vars, "trip.departure_date"), "long")} at ${time(at(vars, "flight.departure_time"))}
**Return:** ${date(at(vars, "trip.return_date"), "long")} at ${time(at(vars, "flight.return_time"))}
**Duration:** ${v("trip.duration_days")} magical days
**Package:** ${v("booking.package_tier")} Package
**Total Investment:** ${currency(at(vars, "pricing.final_total"))}

## ✈️ **Flight Details**

**Outbound Flight:**
- ${v("flight.outbound.airline")} Flight ${v("flight.outbound.flight_number")}
- Departure: ${date(at(vars, "trip.departure_date"), "short")} at ${v("flight.outbound.departure_time")} from ${v("flight.outbound.departure_airport")}
- Arrival: ${date(at(vars, "trip.departure_date"), "short")} at ${v("flight.outbound.arrival_time")} at ${v("flight.outbound.arrival_airport")}

**Return Flight:**
- ${v("flight.return.airline")} Flight ${v("flight.return.flight_number")}
- Departure: ${date(at(vars, "trip.return_date"), "short")} at ${v("flight.return.departure_time")} from ${v("flight.return.departure_airport")}
- Arrival: ${date(at(vars, "trip.return_date"), "short")} at ${v("flight.return.arrival_time")} at ${v("flight.return.arrival_airport")}

## 🏨 **Accommodation**

**Hotel:** ${v("hotel.name")} (${v("hotel.rating")}⭐)
**Address:** ${v("hotel.address")}
**Check-in:** ${date(at(vars, "trip.departure_date"), "day")} after ${time(at(vars, "hotel.checkin_time"), "3:00 PM")}
**Check-out:** ${date(at(vars, "trip.return_date"), "day")} by ${time(at(vars, "hotel.checkout_time"), "11:00 AM")}
**Room Type:** ${v("hotel.room_type")}
**Special Amenities:** ${amenities.map(str).join(", ")}

## 🎯 **Included Experiences**

${activities.map((a) => `• **${str(a.name)}** - ${str(a.description)} (${str(a.date)})`).join("\n")}

## 💳 **Payment Summary**

- Package Price: ${currency(at(vars, "pricing.package_price"))}
- Additional Services: ${currency(at(vars, "pricing.extras"))}
- Taxes & Fees: ${currency(at(vars, "pricing.taxes"))}
- **Total Paid:** ${currency(at(vars, "pricing.total_paid"))}
- Remaining Balance: ${currency(at(vars, "pricing.remaining_balance"))}${n("pricing.remaining_balance") > 0 ? ` (due ${v("pricing.final_payment_date")})` : ""}

## 📋 **Important Reminders**

${at(vars, "trip.special_requirements") ? `**Special Requirements:** ${v("trip.special_requirements")}\n\n` : ""}**Travel Documents:**
- Passport (valid for 6+ months beyond return date)
- Travel insurance confirmation
${at(vars, "trip.destination.visa_required") ? `- Visa (required for ${v("trip.destination.country")})` : ""}

**What to Pack:**
- Comfortable walking shoes
- Weather-appropriate clothing for ${date(at(vars, "trip.departure_date"), "month")}
${specialItems?.length ? `- ${specialItems.map(str).join("\n- ")}` : ""}

## 📞 **Support & Contact**

${vip ? `**VIP Concierge:** Available 24/7 at ${v("support.vip_phone")}\n` : ""}**Your Travel Consultant:** ${v("agent.name")}
**Phone:** ${v("agent.phone")}
**Email:** ${v("agent.email")}
**Emergency Support:** ${v("support.emergency_phone")}

## 🎉 **Final Notes**

${occasions?.length ? `We're honored to be part of your ${str(occasions[0])} celebration! ` : ""}We've included everything to make this trip unforgettable. Our team has carefully curated each experience to ensure you have the adventure of a lifetime.

${vip ? "As our VIP client, you'll enjoy priority service, exclusive amenities, and dedicated support throughout your journey." : "Thank you for choosing Somo Travel for this special adventure!"}

Safe travels and get ready for an incredible journey!

Warm regards,

${v("agent.name")}
${v("agent.title")}
${v("agent.agency")}
${v("agent.contact_signature")}

---
*This confirmation was generated on ${date(iso, "long")} | Booking Reference: ${v("booking.reference_number")} | Session: ${sessionId || v("session.id")}*`;
  return { text, missing };
}
