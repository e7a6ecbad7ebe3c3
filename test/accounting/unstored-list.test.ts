// The list of calls not stored yet (src/accounting/unstored.ts) keeps each call's columns in typed arrays, a slot a
// call: its sums stay exact to the 10^-12 USD past what a double holds (2^53 units, about 9,007 USD, summed or in one
// call, a negative sum, one past what a double holds as a number at all), a slot freed by a stored row is used again,
// the arrays grow past their first size and shrink once a quarter of their slots or fewer hold a call (a backlog
// drained while traffic goes on), and a provider and model no call uses any more is forgotten.

import t from 'tap';
import fc from 'fast-check';
import { makeRecord, type UsageRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { UnstoredCalls, type Span } from '../../src/accounting/unstored.js';
import { numberUnits, unitsNumber } from '../../src/store/decimal.js';

const units = (usd: number): bigint => numberUnits(usd);

const DAY = Date.UTC(2026, 11, 1);
let n = 0;
function call(o: { cost: number; tokens?: number; model?: string; at?: number }): UsageRecord {
  const at = o.at ?? DAY + 3_600_000 + n++;
  const tokens = o.tokens ?? 10;
  const model = o.model ?? 'p/m';
  return makeRecord({
    kind: 'request', requestId: uuidv7(at), startedAt: at, endedAt: at + 100, endpoint: 'chat.completions', provider: model.split('/')[0]!, providerGroup: 'paid',
    model, requestedModel: model, modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: tokens - 1, cached: null, cacheWrite: null, output: 1, reasoning: null }, usageSource: 'reported', cost: { cost: o.cost, listCost: o.cost },
    latency: { kind: 'unary', totalMs: 100 }, upstreamMs: 90,
  });
}
const spans = new Map<string, Span>([['p', { from: DAY, to: Number.POSITIVE_INFINITY }], ['q', { from: DAY, to: Number.POSITIVE_INFINITY }]]);
const groups = (u: UnstoredCalls) => u.groups(spans, DAY, DAY, DAY).map((g) => ({ model: g.model, rows: g.rows, tokens: g.tokens, cost: g.cost, todayCost: g.todayCost }));

t.test('sums past what a double holds stay exact to the 10^-12 USD', async (t) => {
  const u = new UnstoredCalls();
  // 5,000 calls of 3.000000000001 USD: 15,000.000000005 in all, past 2^53 units, where a double's sum drifts (each
  // addition of an odd number of units rounds to an even one: thousands of units off by the end).
  for (let i = 0; i < 5000; i++) u.add(call({ cost: 3.000000000001 }));
  t.same(u.costSince([DAY]), [15000.000000005], 'summed past 2^53 units');
  t.same(groups(u), [{ model: 'p/m', rows: 5000, tokens: 50_000, cost: 15000.000000005, todayCost: 15000.000000005 }]);
  // One call past 2^53 units on its own, beside a small one.
  const big = new UnstoredCalls();
  big.add(call({ cost: 12345.678901234567 }));
  big.add(call({ cost: 0.000000000001 }));
  t.same(big.costSince([DAY]), [12345.678901234568], 'one call past 2^53 units, and a unit beside it');
});

t.test('a stored call leaves the sums; its slot is used again; the arrays grow, and shrink once mostly empty', async (t) => {
  const u = new UnstoredCalls();
  const calls = Array.from({ length: 3000 }, (_, i) => call({ cost: 0.001, tokens: 2, model: i % 2 === 0 ? 'p/m' : 'q/m' }));
  for (const c of calls) u.add(c);
  t.same(groups(u), [{ model: 'p/m', rows: 1500, tokens: 3000, cost: 1.5, todayCost: 1.5 }, { model: 'q/m', rows: 1500, tokens: 3000, cost: 1.5, todayCost: 1.5 }], 'past the first 1,024 slots');
  u.stored(calls.slice(0, 2000).map((c) => c.requestId));
  t.same(groups(u), [{ model: 'p/m', rows: 500, tokens: 1000, cost: 0.5, todayCost: 0.5 }, { model: 'q/m', rows: 500, tokens: 1000, cost: 0.5, todayCost: 0.5 }], 'the stored ones gone');
  const more = Array.from({ length: 10 }, () => call({ cost: 0.01, tokens: 7 }));
  for (const c of more) u.add(c);
  t.same(groups(u)[0], { model: 'p/m', rows: 510, tokens: 1070, cost: 0.6, todayCost: 0.6 }, 'new calls in freed slots');
  u.stored([...calls, ...more].map((c) => c.requestId));
  t.same(groups(u), [], 'all stored: none left');
  u.add(call({ cost: 0.25, model: 'q/m' }));
  t.same(groups(u), [{ model: 'q/m', rows: 1, tokens: 10, cost: 0.25, todayCost: 0.25 }], 'and the list works again from its first slots');
  t.equal(u.published, 3011, 'every record counted as published');
});

t.test('the same id again replaces its call; one older than every window is forgotten', async (t) => {
  const u = new UnstoredCalls();
  const c = call({ cost: 1 });
  u.add(c);
  u.add({ ...c, cost: { cost: 2, listCost: 2 } });
  t.same(u.costSince([DAY]), [2], 'one call, its last figures');
  u.add(call({ cost: 5, at: DAY - 30 * 86_400_000 }));
  t.same(u.costSince([0]), [7], 'the old one counts until a read forgets it');
  u.groups(spans, DAY, DAY, DAY);
  t.same(u.costSince([0]), [2], 'forgotten by the read: older than every window by more than a day');
});

t.test('costs no double holds: a sum of them exact, negative ones too; one past 1e296 USD does not break the reads', async (t) => {
  const u = new UnstoredCalls();
  u.add(call({ cost: 1e20 }));
  u.add(call({ cost: 0.000000000001 }));
  t.same(u.costSince([DAY]), [Number('100000000000000000000.000000000001')], '1e20 USD and a unit');
  const huge = new UnstoredCalls();
  huge.add(call({ cost: 1e297 }));
  t.same(huge.costSince([DAY]), [1e297], 'read, not a RangeError');
  t.same(groups(huge).map((g) => g.cost), [1e297]);
  const negative = new UnstoredCalls();
  negative.add(call({ cost: -20000 }));
  for (let i = 0; i < 3; i++) negative.add(call({ cost: -0.000000000001 }));
  t.same(negative.costSince([DAY]), [-20000.000000000003], 'a negative sum past -2^53 units, exact');
});

t.test('a backlog drained while calls keep coming: the arrays shrink, reads walk the calls held, the figures stay right', async (t) => {
  const u = new UnstoredCalls();
  const backlog = Array.from({ length: 100_000 }, () => call({ cost: 0.000001, tokens: 3 }));
  for (const c of backlog) u.add(c);
  t.equal(u.footprint.slots, 131_072, 'grown to hold the backlog');
  let pending: UsageRecord[] = [];
  for (let i = 0; i < backlog.length; i += 1000) {
    // Each insert takes 1,000 of the backlog and the calls of the last batch; 50 more come while it runs.
    u.stored([...backlog.slice(i, i + 1000), ...pending].map((c) => c.requestId));
    pending = Array.from({ length: 50 }, () => call({ cost: 0.000002, tokens: 5 }));
    for (const c of pending) u.add(c);
  }
  t.same(u.footprint, { calls: 50, slots: 1024, keys: 1 }, 'the list never empty, its arrays back to their first size');
  t.same(groups(u), [{ model: 'p/m', rows: 50, tokens: 250, cost: 0.0001, todayCost: 0.0001 }], 'the 50 calls held');
});

t.test('a provider and model no call uses any more is forgotten: a client naming a new model each call grows nothing', async (t) => {
  const u = new UnstoredCalls();
  for (let i = 0; i < 5000; i += 100) {
    const batch = Array.from({ length: 100 }, (_, j) => call({ cost: 0.001, model: `p/model-${i + j}` }));
    for (const c of batch) u.add(c);
    t.equal(u.footprint.keys, 100, `${i}: one key a model held`);
    u.stored(batch.map((c) => c.requestId));
  }
  t.same(u.footprint, { calls: 0, slots: 1024, keys: 0 }, 'none kept once stored');
  const c = call({ cost: 1, model: 'q/m' });
  u.add(c);
  u.add({ ...c, model: 'q/other' });
  t.same(u.footprint.keys, 1, 'a call given again under another model lets go of the first');
  t.same(groups(u).map((g) => g.model), ['q/other']);
});

t.test('against a plain model, on random operations: every figure exact (fast-check)', async (t) => {
  // The model: a Map of the calls held, costs as bigint units, summed exactly; the list must give the same groups and
  // the same costs after any sequence of adds (new ids, ids again under another model), stores and reads.
  const ids = Array.from({ length: 40 }, (_, i) => uuidv7(DAY + i));
  const models = ['p/a', 'p/b', 'q/a', 'q/c'];
  const op = fc.oneof(
    fc.record({ kind: fc.constant('add' as const), id: fc.nat(39), model: fc.constantFrom(...models), at: fc.integer({ min: -40, max: 40 }), cost: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 20_000, noNaN: true }), fc.constantFrom(1e-12, 4503.599627370497, 9007.199254740993, 1e20)), tokens: fc.nat(10_000) }),
    fc.record({ kind: fc.constant('store' as const), which: fc.array(fc.nat(39), { maxLength: 30 }) }),
    fc.record({ kind: fc.constant('bulk' as const), n: fc.integer({ min: 1000, max: 3000 }) }),
    fc.record({ kind: fc.constant('read' as const) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const u = new UnstoredCalls();
      const model = new Map<string, { model: string; at: number; cost: bigint; tokens: number }>();
      let bulk = 0;
      for (const o of ops) {
        if (o.kind === 'add') {
          const at = DAY + 3_600_000 + o.at * 60_000;
          const rec = { ...call({ cost: o.cost, tokens: o.tokens, model: o.model, at }), requestId: ids[o.id]! };
          u.add(rec);
          model.set(rec.requestId, { model: o.model, at, cost: units(o.cost), tokens: rec.totalTokens });
        } else if (o.kind === 'store') {
          const gone = o.which.map((i) => ids[i]!);
          u.stored(gone);
          for (const id of gone) model.delete(id);
        } else if (o.kind === 'bulk') {
          // Many calls, then all but a few stored: the arrays grow and compact around the calls held.
          const many = Array.from({ length: o.n }, (_, i) => ({ ...call({ cost: 0.5, model: 'q/c' }), requestId: `bulk-${bulk}-${i}` }));
          bulk++;
          for (const c of many) u.add(c);
          for (const c of many.slice(0, 3)) model.set(c.requestId, { model: 'q/c', at: c.startedAt, cost: units(0.5), tokens: c.totalTokens });
          u.stored(many.slice(3).map((c) => c.requestId));
        } else {
          u.groups(spans, DAY, DAY, DAY);
        }
      }
      const want = new Map<string, { rows: number; tokens: number; cost: bigint }>();
      for (const c of model.values()) {
        const g = want.get(c.model) ?? { rows: 0, tokens: 0, cost: 0n };
        want.set(c.model, { rows: g.rows + 1, tokens: g.tokens + c.tokens, cost: g.cost + c.cost });
      }
      const got = new Map(u.groups(spans, DAY, DAY, DAY).map((g) => [g.model, { rows: g.rows, tokens: g.tokens, cost: g.cost }]));
      const asNumbers = new Map([...want].map(([k, g]) => [k, { rows: g.rows, tokens: g.tokens, cost: unitsNumber(g.cost) }]));
      if (JSON.stringify([...got].sort()) !== JSON.stringify([...asNumbers].sort())) throw new Error(`groups ${JSON.stringify([...got])} against ${JSON.stringify([...asNumbers])}`);
      const all = [...model.values()].reduce((n, c) => n + c.cost, 0n);
      const since = [...model.values()].filter((c) => c.at >= DAY + 3_600_000).reduce((n, c) => n + c.cost, 0n);
      const costs = u.costSince([0, DAY + 3_600_000]);
      if (costs[0] !== unitsNumber(all) || costs[1] !== unitsNumber(since)) throw new Error(`costSince ${costs} against ${unitsNumber(all)}, ${unitsNumber(since)}`);
      if (u.footprint.calls !== model.size || u.footprint.keys > models.length) throw new Error(`footprint ${JSON.stringify(u.footprint)} holding ${model.size}`);
    }),
    { numRuns: 200 },
  );
  t.pass('200 random sequences agree with the model');
});

t.test("a leftover row's cost read from its Decimal text; other text as a number, or 0", async (t) => {
  const u = new UnstoredCalls();
  const row = (id: string, cost: unknown) => ({ request_id: id, kind: 'request', provider: 'p', model: 'p/m', ts: DAY + 3_600_000, total_tokens: 5, cost, duration_ms: 10 }) as unknown as Parameters<UnstoredCalls['addRow']>[0];
  for (const [i, cost] of (['0.000006000000', '1e-7', 'abc', 0.25, null, '-0.5', '+2'] as unknown[]).entries()) u.addRow(row(`r${i}`, cost));
  t.same(u.costSince([DAY]), [0.000006 + 0.0000001 + 0.25 - 0.5 + 2], 'each read as it says, the damaged one as 0');
  t.equal(u.published, 7);
});
