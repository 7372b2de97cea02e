-- Templates (templates toolset): definitions and the record of processings.
CREATE TABLE IF NOT EXISTS template_definitions (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  name             TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 3 AND 50 AND name NOT GLOB '*[^A-Za-z0-9_-]*'),
  title            TEXT NOT NULL,
  category         TEXT NOT NULL,
  content          TEXT NOT NULL,
  variables_schema TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(variables_schema)),
  default_values   TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(default_values)),
  usage_examples   TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(usage_examples)),
  metadata         TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
  version          TEXT NOT NULL DEFAULT '1.0',
  revision         INTEGER NOT NULL DEFAULT 1,
  is_active        INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  updated_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

CREATE TABLE IF NOT EXISTS template_processings (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  template_id        INTEGER NOT NULL REFERENCES template_definitions (id) ON DELETE CASCADE,
  template_revision  INTEGER NOT NULL,
  output_format      TEXT NOT NULL,
  variables_provided TEXT NOT NULL CHECK (json_valid(variables_provided)),
  processed_content  TEXT NOT NULL,
  processing_time_ms REAL NOT NULL,
  session_id         TEXT,
  created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

CREATE INDEX IF NOT EXISTS template_processings_by_template ON template_processings (template_id, created_at);

-- Shipped templates: the seed's trip confirmation (full content) and the templates its examples and
-- the corporate booking chain use.
INSERT INTO template_definitions (name, title, category, content, variables_schema, default_values, usage_examples, metadata, version) VALUES
('trip-confirmation-comprehensive', 'Comprehensive Trip Confirmation Email', 'client-communication', 'Subject: Your {trip.destination.city} Adventure is Confirmed! 🎉

Dear {client.name},

Fantastic news! Your {trip.trip_type} to {trip.destination.city}, {trip.destination.country} is officially confirmed and ready for an amazing experience!

## 📅 **Trip Summary**

**Traveler{trip.travelers.adults > 1 ? ''s'' : ''''}:** {client.name}{trip.travelers.children > 0 ? '' and '' + trip.travelers.children + '' child'' + (trip.travelers.children > 1 ? ''ren'' : '''') : ''''}
**Destination:** {trip.destination.city}, {trip.destination.country}
**Departure:** {trip.departure_date|''MMMM DD, YYYY''} at {flight.departure_time|''h:mm A''}
**Return:** {trip.return_date|''MMMM DD, YYYY''} at {flight.return_time|''h:mm A''}
**Duration:** {trip.duration_days} magical days
**Package:** {booking.package_tier} Package
**Total Investment:** {pricing.final_total|currency}

## ✈️ **Flight Details**

**Outbound Flight:**
- {flight.outbound.airline} Flight {flight.outbound.flight_number}
- Departure: {trip.departure_date|''MMM DD''} at {flight.outbound.departure_time} from {flight.outbound.departure_airport}
- Arrival: {trip.departure_date|''MMM DD''} at {flight.outbound.arrival_time} at {flight.outbound.arrival_airport}

**Return Flight:**
- {flight.return.airline} Flight {flight.return.flight_number}
- Departure: {trip.return_date|''MMM DD''} at {flight.return.departure_time} from {flight.return.departure_airport}
- Arrival: {trip.return_date|''MMM DD''} at {flight.return.arrival_time} at {flight.return.arrival_airport}

## 🏨 **Accommodation**

**Hotel:** {hotel.name} ({hotel.rating}⭐)
**Address:** {hotel.address}
**Check-in:** {trip.departure_date|''MMMM DD''} after {hotel.checkin_time|''3:00 PM''}
**Check-out:** {trip.return_date|''MMMM DD''} by {hotel.checkout_time|''11:00 AM''}
**Room Type:** {hotel.room_type}
**Special Amenities:** {hotel.amenities|join('', '')}

## 🎯 **Included Experiences**

{activities.map(activity => ''• **'' + activity.name + ''** - '' + activity.description + '' ('' + activity.date + '')'').join(''\n'')}

## 💳 **Payment Summary**

- Package Price: {pricing.package_price|currency}
- Additional Services: {pricing.extras|currency}
- Taxes & Fees: {pricing.taxes|currency}
- **Total Paid:** {pricing.total_paid|currency}
- Remaining Balance: {pricing.remaining_balance|currency}{pricing.remaining_balance > 0 ? '' (due '' + pricing.final_payment_date + '')'' : ''''}

## 📋 **Important Reminders**

{trip.special_requirements ? ''**Special Requirements:** '' + trip.special_requirements + ''\n\n'' : ''''}**Travel Documents:**
- Passport (valid for 6+ months beyond return date)
- Travel insurance confirmation
{trip.destination.visa_required ? ''- Visa (required for '' + trip.destination.country + '')'' : ''''}

**What to Pack:**
- Comfortable walking shoes
- Weather-appropriate clothing for {trip.departure_date|''MMMM''}
{trip.destination.special_items ? ''- '' + trip.destination.special_items.join(''\n- '') : ''''}

## 📞 **Support & Contact**

{client.tier == ''vip'' ? ''**VIP Concierge:** Available 24/7 at '' + support.vip_phone + ''\n'' : ''''}**Your Travel Consultant:** {agent.name}
**Phone:** {agent.phone}
**Email:** {agent.email}
**Emergency Support:** {support.emergency_phone}

## 🎉 **Final Notes**

{trip.special_occasions ? ''We\''re honored to be part of your '' + trip.special_occasions[0] + '' celebration! '' : ''''}We''ve included everything to make this trip unforgettable. Our team has carefully curated each experience to ensure you have the adventure of a lifetime.

{client.tier == ''vip'' ? ''As our VIP client, you\''ll enjoy priority service, exclusive amenities, and dedicated support throughout your journey.'' : ''Thank you for choosing Somo Travel for this special adventure!''}

Safe travels and get ready for an incredible journey!

Warm regards,

{agent.name}
{agent.title}
{agent.agency}
{agent.contact_signature}

---
*This confirmation was generated on {current_date|''MMMM DD, YYYY''} | Booking Reference: {booking.reference_number} | Session: {session.id}*', '{"client.name": {"type": "string", "required": true, "description": "Client''s full name"}, "client.tier": {"type": "string", "required": false, "enum": ["standard", "vip", "platinum"], "default": "standard", "description": "Client service tier"}, "trip.destination.city": {"type": "string", "required": true, "description": "Destination city name"}, "trip.destination.country": {"type": "string", "required": true, "description": "Destination country name"}, "trip.trip_type": {"type": "string", "required": false, "enum": ["vacation", "honeymoon", "anniversary", "business", "adventure"], "default": "vacation", "description": "Type of trip"}, "trip.departure_date": {"type": "string", "required": true, "format": "date-iso", "description": "Trip departure date (ISO format)"}, "trip.return_date": {"type": "string", "required": true, "format": "date-iso", "description": "Trip return date (ISO format)"}, "trip.duration_days": {"type": "number", "required": true, "minimum": 1, "description": "Trip duration in days"}, "trip.travelers.adults": {"type": "number", "required": true, "minimum": 1, "description": "Number of adult travelers"}, "trip.travelers.children": {"type": "number", "required": false, "default": 0, "minimum": 0, "description": "Number of child travelers"}, "booking.package_tier": {"type": "string", "required": true, "enum": ["Classic", "Premium", "Luxury"], "description": "Booked package tier"}, "booking.reference_number": {"type": "string", "required": true, "description": "Booking reference number"}, "pricing.final_total": {"type": "number", "required": true, "minimum": 0, "description": "Final total price"}, "pricing.package_price": {"type": "number", "required": true, "minimum": 0, "description": "Base package price"}, "pricing.remaining_balance": {"type": "number", "required": false, "default": 0, "minimum": 0, "description": "Remaining balance due"}, "flight.outbound": {"type": "object", "required": true, "description": "Outbound flight details"}, "flight.return": {"type": "object", "required": true, "description": "Return flight details"}, "hotel.name": {"type": "string", "required": true, "description": "Hotel name"}, "hotel.rating": {"type": "number", "required": true, "minimum": 1, "maximum": 5, "description": "Hotel star rating"}, "activities": {"type": "array", "required": true, "description": "List of included activities"}, "agent.name": {"type": "string", "required": true, "default": "Kim Henderson", "description": "Travel agent name"}, "agent.phone": {"type": "string", "required": true, "format": "phone", "description": "Agent phone number"}, "agent.email": {"type": "string", "required": true, "format": "email", "description": "Agent email address"}}', '{"client.tier": "standard", "trip.trip_type": "vacation", "trip.travelers.children": 0, "pricing.remaining_balance": 0, "agent.name": "Kim Henderson", "agent.title": "Senior Travel Consultant", "agent.agency": "Somo Travel", "support.emergency_phone": "+1-800-TRAVEL-1"}', '[{"name": "Luxury Paris Honeymoon", "description": "VIP client honeymoon confirmation for Paris", "variables": {"client": {"name": "Michael & Sarah Johnson", "tier": "vip"}, "trip": {"destination": {"city": "Paris", "country": "France"}, "trip_type": "honeymoon", "departure_date": "2025-09-15", "return_date": "2025-09-22", "duration_days": 7, "travelers": {"adults": 2, "children": 0}}, "booking": {"package_tier": "Luxury", "reference_number": "BK-20250608-PAR-001"}, "pricing": {"final_total": 14750, "package_price": 12500, "remaining_balance": 0}}, "expected_output": "Professional confirmation email with VIP amenities highlighted"}]', '{"version": "1.0", "author": "Travel Templates Team", "tags": ["confirmation", "email", "client-communication"], "use_cases": ["trip confirmation", "booking confirmation", "travel details"], "compatibility": ["mobile-mode", "interactive-mode"]}', '1.0'),
('client-welcome-email', 'Client Welcome Email', 'email-templates', 'Subject: Welcome aboard, {client.name}! Your {trip.destination.city} journey starts here

Dear {client.name},

Thank you for choosing {agent.agency} for your {trip.trip_type} to {trip.destination.city}, {trip.destination.country}. {client.tier == ''vip'' ? ''As one of our VIP clients, you have a dedicated concierge and priority access throughout your planning. '' : ''''}I am delighted to be planning it with you.

## Your trip at a glance

- **Dates:** {trip.departure_date|''MMMM D''} to {trip.return_date|''MMMM D, YYYY''} ({trip.duration_days} days)
- **Travelers:** {trip.travelers.adults} adult{trip.travelers.adults > 1 ? ''s'' : ''''}{trip.travelers.children > 0 ? '', '' + trip.travelers.children + '' child'' + (trip.travelers.children > 1 ? ''ren'' : '''') : ''''}
- **Budget:** {trip.budget.total|currency(trip.budget.currency)}

## Your three options

| Package | Price |
| --- | --- |
| Classic | {pricing.classic_price|currency(trip.budget.currency)} |
| Premium | {pricing.premium_price|currency(trip.budget.currency)} |
| Luxury | {pricing.luxury_price|currency(trip.budget.currency)} |

I will send the detailed proposal shortly. Reply to this email or call me with any questions.

Warm regards,

{agent.name}
{agent.title}, {agent.agency}
{agent.contact_info}
', '{"client.name": {"type": "string", "required": true, "description": "Client''s full name"}, "client.email": {"type": "string", "format": "email", "description": "Client email"}, "client.tier": {"type": "string", "enum": ["standard", "vip", "platinum"], "default": "standard", "description": "Client service tier"}, "trip.destination.city": {"type": "string", "required": true}, "trip.destination.country": {"type": "string", "required": true}, "trip.departure_date": {"type": "string", "required": true, "format": "date-iso"}, "trip.return_date": {"type": "string", "required": true, "format": "date-iso"}, "trip.duration_days": {"type": "number", "required": true, "minimum": 1}, "trip.travelers.adults": {"type": "number", "required": true, "minimum": 1}, "trip.travelers.children": {"type": "number", "default": 0, "minimum": 0}, "trip.trip_type": {"type": "string", "enum": ["vacation", "honeymoon", "anniversary", "business", "adventure"], "default": "vacation"}, "trip.budget.total": {"type": "number", "required": true, "minimum": 0}, "trip.budget.currency": {"type": "string", "pattern": "^[A-Z]{3}$", "default": "USD"}, "pricing.classic_price": {"type": "number", "required": true, "minimum": 0}, "pricing.premium_price": {"type": "number", "required": true, "minimum": 0}, "pricing.luxury_price": {"type": "number", "required": true, "minimum": 0}}', '{"client.tier": "standard", "trip.trip_type": "vacation", "trip.budget.currency": "USD"}', '[{"name": "VIP honeymoon in Paris", "variables": {"client": {"name": "Sarah Johnson", "email": "sarah.johnson@email.com", "tier": "vip"}, "trip": {"destination": {"city": "Paris", "country": "France"}, "departure_date": "2025-06-15", "return_date": "2025-06-22", "duration_days": 7, "travelers": {"adults": 2, "children": 0}, "trip_type": "honeymoon", "budget": {"total": 8500, "currency": "USD"}}, "pricing": {"classic_price": 6375, "premium_price": 9350, "luxury_price": 14875}}}]', '{"version": "1.0", "author": "mcp-edge", "tags": ["welcome", "email"]}', '1.0'),
('three-tier-proposal', 'Three-Tier Travel Proposal', 'proposals', '# Travel proposal for {client_name}

**Destination:** {destination.city}, {destination.country}  
**Dates:** {travel_dates}  
**Travelers:** {traveler_count}

Prepared by {agent.name}, {agent.title} at {agent.agency}, on {current_date|''MMMM D, YYYY''}.

## Classic — {classic.price|currency}

{classic.description}

**Stay:** {classic.hotels}

{classic.activities.map(a => ''- '' + a).join(''\n'')}

## Premium — {premium.price|currency}

{premium.description}

**Stay:** {premium.hotels}

{premium.activities.map(a => ''- '' + a).join(''\n'')}

## Luxury — {luxury.price|currency}

{luxury.description}

**Stay:** {luxury.hotels}

{luxury.activities.map(a => ''- '' + a).join(''\n'')}

## Next steps

Tell me which option you prefer (or what to change) and I will hold availability for 48 hours while we finalise the details.
', '{"client_name": {"type": "string", "required": true}, "destination.city": {"type": "string", "required": true}, "destination.country": {"type": "string", "required": true}, "travel_dates": {"type": "string", "required": true}, "traveler_count": {"type": "string", "required": true}, "classic.price": {"type": "number", "required": true, "minimum": 0}, "classic.description": {"type": "string", "required": true}, "classic.hotels": {"type": "string", "required": true}, "classic.activities": {"type": "array", "required": true}, "premium.price": {"type": "number", "required": true, "minimum": 0}, "premium.description": {"type": "string", "required": true}, "premium.hotels": {"type": "string", "required": true}, "premium.activities": {"type": "array", "required": true}, "luxury.price": {"type": "number", "required": true, "minimum": 0}, "luxury.description": {"type": "string", "required": true}, "luxury.hotels": {"type": "string", "required": true}, "luxury.activities": {"type": "array", "required": true}}', '{}', '[]', '{"version": "1.0", "author": "mcp-edge", "tags": ["proposal"]}', '1.0'),
('corporate-approval-request', 'Corporate Travel Approval Request', 'internal-docs', 'Subject: Approval needed: {traveler_name} to {destination} ({travel_dates})

Hello,

{traveler_name} needs your approval for business travel to {destination} on {travel_dates}.

- **Estimated cost:** {total_cost|currency}
- **Justification:** {business_justification}

Please approve or decline by replying to this message{approval_deadline ? '' by '' + approval_deadline : ''''}.

Thank you,
{agent.name}, {agent.agency}
', '{"traveler_name": {"type": "string", "required": true}, "manager_email": {"type": "string", "format": "email"}, "destination": {"type": "string", "required": true}, "travel_dates": {"type": "string", "required": true}, "total_cost": {"type": "number", "required": true, "minimum": 0}, "business_justification": {"type": "string", "required": true}}', '{}', '[]', '{"version": "1.0", "author": "mcp-edge", "tags": ["corporate", "approval"]}', '1.0'),
('corporate-booking-summary', 'Corporate Booking Summary', 'internal-docs', '# Booking summary: {traveler_name} ({company_name})

**Compliance:** {compliance_status}  
**Approval:** {approval_required ? ''Pending manager approval'' : ''Pre-approved''}

## Vendor options

{vendor_options}

## Next steps

{approval_required ? ''1. Wait for the manager approval.\n2. Book the selected option within 24 hours of approval.'' : ''1. Book the selected option.\n2. Send the itinerary to the traveler.''}
', '{"company_name": {"type": "string", "required": true}, "traveler_name": {"type": "string", "required": true}, "compliance_status": {"type": "string", "required": true}, "vendor_options": {"type": "string", "required": true}, "approval_required": {"type": "boolean", "default": false}}', '{"approval_required": false}', '[]', '{"version": "1.0", "author": "mcp-edge", "tags": ["corporate", "summary"]}', '1.0');
