// Event templates for the console: the demo stadium's layout, a theatre with lettered
// rows, a standing club. Each returns an event spec as POST /v1/events takes it.

const tier = (key, name, price) => ({ key, name, price });

function stadium() {
  const sections = [{ key: 'FLOOR', name: 'Standing floor', tier: 'FLOOR', quality: 0, rows: [], ga_capacity: 10000 }];
  for (const [level, [prefix, rows, seats, tierKey, quality]] of [['L', 25, 80, 'LOWER', 1], ['U', 30, 70, 'UPPER', 2]].entries()) {
    for (let n = 1; n <= 10; n++) {
      sections.push({
        key: `${prefix}${n}`,
        name: `${level === 0 ? 'Lower' : 'Upper'} stand ${n}`,
        tier: tierKey,
        quality,
        rows: Array.from({ length: rows }, (_, r) => ({ label: String(r + 1), seats, tier: r < 5 && level === 0 ? 'PREMIUM' : null })),
      });
    }
  }
  return {
    tiers: [tier('PREMIUM', 'Premium', 18900), tier('LOWER', 'Lower tier', 9900), tier('UPPER', 'Upper tier', 5900), tier('FLOOR', 'Floor', 7900)],
    sections,
    rate: 2000,
  };
}

function theatre() {
  const letters = 'ABCDEFGHJKLMNOPQRSTU';
  const rows = (n, seats, premium = 0) => Array.from({ length: n }, (_, r) => ({ label: letters[r], seats, tier: r < premium ? 'PREMIUM' : null }));
  return {
    tiers: [tier('PREMIUM', 'Premium stalls', 8500), tier('STALLS', 'Stalls', 6500), tier('CIRCLE', 'Dress circle', 4500), tier('BALCONY', 'Balcony', 2900)],
    sections: [
      { key: 'STALLS', name: 'Stalls', tier: 'STALLS', quality: 0, rows: rows(20, 30, 3) },
      { key: 'CIRCLE', name: 'Dress circle', tier: 'CIRCLE', quality: 1, rows: rows(10, 28) },
      { key: 'BALCONY', name: 'Balcony', tier: 'BALCONY', quality: 2, rows: rows(8, 24) },
    ],
    rate: 50,
  };
}

function club() {
  return {
    tiers: [tier('GA', 'General admission', 2500)],
    sections: [{ key: 'FLOOR', name: 'Dance floor', tier: 'GA', quality: 0, rows: [], ga_capacity: 800 }],
    rate: 20,
  };
}

export const TEMPLATES = {
  stadium: { label: 'Stadium (the demo layout: 41,000 seats in 20 stands and a 10,000 standing floor)', build: stadium },
  theatre: { label: 'Theatre (stalls, dress circle and balcony in lettered rows: 1,072 seats)', build: theatre },
  club: { label: 'Club (800 standing, one price)', build: club },
};

/** The spec for a template and the operator's answers. */
export function specFrom(key, { name, venue, opensAt, rate, maxPerBuyer, currency = 'EUR' }) {
  const t = TEMPLATES[key].build();
  return {
    name,
    venue: venue || null,
    opens_at: opensAt ?? null,
    currency,
    tiers: t.tiers,
    sections: t.sections,
    sale: {
      max_tickets_per_buyer: maxPerBuyer,
      hold_ttl_s: 480,
      payment_grace_s: 120,
      admission_rate_per_s: rate ?? t.rate,
    },
  };
}

/** The template's own admission rate, for the form's default. */
export function defaultRate(key) {
  return TEMPLATES[key].build().rate;
}
