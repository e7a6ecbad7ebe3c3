// Sums of money the gateway adds itself (per model, per provider, per day, read from the store's exact Decimal sums)
// are made exactly: 9876.54 + 0.2 + 0.5 is 9877.24, not 9877.240000000002 as floats add it. Before, /api/usage's summary and
// /api/quota's cost carried such noise while the store's own sums and /api/usage/cost did not (docs/recording.md:
// "sums agree to the cent and beyond across rows, metrics and the API").

import fc from 'fast-check';
import t from 'tap';
import { startApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import type { Store } from '../../src/store/client.js';
import { MoneySum, decimalUnits, moneyUnits, numberUnits, unitsNumber } from '../../src/store/decimal.js';

/**
 * The pairwise sum the analytics' and the quota's loops made before (`addMoney`): the running total made units again,
 * from its decimal text, at each step.
 */
const pairwise = (xs: readonly number[]): number =>
  xs.reduce((a, b) => (Number.isFinite(a) && Number.isFinite(b) ? unitsNumber(numberUnits(a) + numberUnits(b)) : a + b), 0);

/** A decimal of 12 places (what a Decimal(38, 12) cost column holds), at most `max` units of 10^-12 either way. */
const decimal = (max: bigint) => fc.bigInt({ min: -max, max }).map((u) => {
  const digits = (u < 0n ? -u : u).toString().padStart(13, '0');
  return `${u < 0n ? '-' : ''}${digits.slice(0, -12)}.${digits.slice(-12)}`;
});

/** A request row with the exact cost `cost` (decimal text) in the store, as the store's own sums see it. */
const insertCost = (store: Store, r: { provider: string; model: string; at: number; cost: string }) => store.command(`INSERT INTO ${store.t('requests')}
    (request_id, kind, ts, end_ts, endpoint, provider, provider_group, model, requested_model, api_key_name, status, http_status,
     input_tokens, output_tokens, total_tokens, usage_source, cost, list_cost, price_source)
    VALUES (generateUUIDv4(), 'request', fromUnixTimestamp64Milli(${r.at}), fromUnixTimestamp64Milli(${r.at}), 'chat.completions', '${r.provider}', 'paid',
     '${r.model}', '${r.model}', 'k', 'success', 200, 1, 0, 1, 'reported', toDecimal64('${r.cost}', 12), toDecimal64('${r.cost}', 12), 'config')`);

t.test('MoneySum: exact for amounts of up to 15 significant digits, NaN kept', async (t) => {
  t.equal(0.1 + 0.2, 0.30000000000000004, 'floats');
  t.equal(MoneySum.of([0.1, 0.2]), 0.3);
  t.equal(MoneySum.of([12344.8, 0.5]), 12345.3);
  t.equal(MoneySum.of([12344.8, 0.2, 0.3]), 12345.3);
  t.equal(MoneySum.of([3e-7, 1.5e-10, 0.1, 0.2]), 0.30000030015, 'exponent forms read');
  t.equal(numberUnits(-1.25e-10), -125n);
  t.equal(numberUnits(1e21), 10n ** 33n);
  t.ok(Number.isNaN(MoneySum.of([1, NaN])), 'a sum not read stays NaN');
  t.ok(Number.isNaN(new MoneySum().addUnits(moneyUnits(NaN)).addUnits(5n).value), 'units not read: NaN');
  t.equal(new MoneySum().addSmallUnits(Number.MAX_SAFE_INTEGER).addSmallUnits(Number.MAX_SAFE_INTEGER).addUnits(10n ** 30n).value, unitsNumber(2n * BigInt(Number.MAX_SAFE_INTEGER) + 10n ** 30n), 'past 2^53 units: carried into a bigint');
  let float = 0;
  const exact = new MoneySum();
  for (let i = 0; i < 10_000; i++) {
    float += 0.0000003;
    exact.add(0.0000003);
  }
  t.not(float, 0.003, '10,000 tiny floats drift');
  t.equal(exact.value, 0.003, 'the exact sum does not');
});

t.test('/api/usage and /api/quota add the models\' exact sums exactly', async (t) => {
  const gw = await startApp(t, {
    providers: {
      p: { name: 'p', group: 'paid', format: 'mock', price: { input: 1, output: 2 }, mock: { chunks: 1, latency_ms: 0, chunk_delay_ms: 0 }, models: { a: { kind: 'llm' }, b: { kind: 'llm' }, c: { kind: 'llm' } } },
    },
  });
  const store = gw.app.tollgate.store;
  const at = Date.now() - 60_000;
  const insert = (model: string, cost: string) => insertCost(store, { provider: 'p', model, at, cost });
  await insert('p/a', '9876.54');
  await insert('p/b', '0.2');
  await insert('p/c', '0.5');
  const [stored] = await store.query<{ c: string }>(`SELECT toString(sum(cost)) AS c FROM ${store.t('requests')} FINAL`);
  t.equal(stored!.c, '9877.24');
  const usage = (await (await fetch(`${gw.url}/api/usage?period=today`)).json()) as { summary: { cost: number } };
  t.equal(usage.summary.cost, 9877.24, "/api/usage's summary (floats: 9877.240000000002)");
  // The snapshot is kept up to a second: read until it holds the rows inserted above.
  let cost: { today: number; month: number } | undefined;
  await waitFor(async () => {
    const quota = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; cost: { today: number; month: number } }[] };
    cost = quota.providers.find((p) => p.id === 'p')?.cost;
    return (cost?.today ?? 0) > 9_000;
  }, 10_000);
  t.match(cost, { today: 9877.24, month: 9877.24 }, "/api/quota's cost");
});

t.test('one exact sum against the pairwise one the loops made: the same to the last digit while the running totals stay under 1,000 USD, exact past it', async (t) => {
  // Up to 10 USD each, 40 at most: every running total has 15 significant digits or fewer, which a double gives back.
  fc.assert(fc.property(fc.array(decimal(10n ** 13n), { maxLength: 40 }), (texts) => {
    const xs = texts.map(Number);
    return MoneySum.of(xs) === pairwise(xs);
  }), { numRuns: 2000 });
  // Any size: the sum is the number nearest to the exact sum of the amounts (the pairwise one drifts past 1,000 USD).
  fc.assert(fc.property(fc.array(decimal(10n ** 17n), { maxLength: 40 }), (texts) => {
    const xs = texts.map(Number);
    return MoneySum.of(xs) === unitsNumber(xs.reduce((s, x) => s + numberUnits(x), 0n));
  }), { numRuns: 2000 });
  const drift = [4374.980926500023, 4374.966458269658, 0.000000000001];
  t.equal(pairwise(drift), 8749.94738476968, 'pairwise: the first total (…681) comes back as …68, and the last 10^-12 goes on it');
  t.equal(MoneySum.of(drift), unitsNumber(decimalUnits('8749.947384769682')), 'the exact sum, …682, made a number once');
});

t.test('/api/usage/cost and /api/usage/projection add their providers exactly past 1,000 USD', async (t) => {
  const gw = await startApp(t, {
    providers: Object.fromEntries(['p', 'q', 'r'].map((id) => [id, {
      name: id, group: 'paid', format: 'mock', price: { input: 1, output: 2 }, mock: { chunks: 1, latency_ms: 0, chunk_delay_ms: 0 }, models: { m: { kind: 'llm' } },
    }])),
  });
  const store = gw.app.tollgate.store;
  // Two full days ago (in the projection's last 7 full days), at noon UTC.
  const day = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 2 * 86_400_000;
  const at = day + 12 * 3_600_000;
  const insert = (provider: string, cost: string) => insertCost(store, { provider, model: `${provider}/m`, at, cost });
  await insert('p', '4374.980926500023');
  await insert('q', '4374.966458269658');
  await insert('r', '0.000000000001');
  const exact = unitsNumber(decimalUnits('8749.947384769682'));
  const date = new Date(day).toISOString().slice(0, 10);
  const cost = (await (await fetch(`${gw.url}/api/usage/cost?period=day&date=${date}`)).json()) as { totals: { cost: number; list_cost: number } };
  t.same([cost.totals.cost, cost.totals.list_cost], [exact, exact], 'the day\'s totals over three providers (pairwise: 8749.94738476968)');
  const projection = (await (await fetch(`${gw.url}/api/usage/projection`)).json()) as { totals: { cost: number }; daily: { date: string; cost: number }[] };
  t.equal(projection.totals.cost, exact, 'the projection\'s total');
  t.equal(projection.daily.find((d) => d.date === date)?.cost, exact, 'and its day');
});
