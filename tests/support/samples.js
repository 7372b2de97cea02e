// Sample variables shared by tests and benchmarks.

/** Variables for the seed's trip-confirmation-comprehensive template (every construct it uses). */
export const tripVars = {
  client: { name: "Sarah Johnson", tier: "vip" },
  trip: {
    trip_type: "anniversary", duration_days: 7,
    destination: { city: "Paris", country: "France", visa_required: false },
    travelers: { adults: 2, children: 0 }, departure_date: "2025-06-15", return_date: "2025-06-22",
  },
  flight: {
    departure_time: "09:30", return_time: "17:45",
    outbound: { airline: "Air France", flight_number: "AF 7", departure_time: "9:30 AM", departure_airport: "JFK", arrival_time: "10:45 PM", arrival_airport: "CDG" },
    return: { airline: "Air France", flight_number: "AF 8", departure_time: "5:45 PM", departure_airport: "CDG", arrival_time: "8:10 PM", arrival_airport: "JFK" },
  },
  booking: { package_tier: "Premium", reference_number: "SOMO-2025-0615" },
  pricing: { final_total: 14750, package_price: 12500, extras: 1250, taxes: 1000, total_paid: 14750, remaining_balance: 0 },
  hotel: { name: "Le Meurice", rating: 5, address: "228 Rue de Rivoli", room_type: "Deluxe", amenities: ["Spa"] },
  activities: [{ name: "Louvre", description: "Private tour", date: "June 16" }],
  agent: { phone: "+1 555 0123", email: "kim@somotravel.example" },
  support: { vip_phone: "+1 555 0100" },
};
