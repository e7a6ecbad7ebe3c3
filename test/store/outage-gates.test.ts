// What the budget and quota gates see while ClickHouse is down (docs/recording.md, "Storage down"): the budget is
// the last figure read for its window plus every billed record this process published since and has not stored
// (so a crossing during the outage is still seen); quota keeps the last snapshot (its exhausted flags included) plus
// this process's calls since;
// with nothing read before the outage, both say so instead of guessing. The store is the real embedded engine
// behind a switch that makes its reads fail.

import t from 'tap';
import { BudgetService } from '../../src/accounting/budget.js';
import { parseConfig } from '../../src/config/load.js';
import { QuotaService } from '../../src/accounting/quota.js';
import type { Store } from '../../src/store/client.js';
import { openTestStore } from '../helpers/store-paths.js';
import { migrate } from '../../src/store/migrations.js';
import { REQUEST_COLUMNS, toRow } from '../../src/store/rows.js';
import { makeRecord, type UsageRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { Spool } from '../../src/store/spool.js';
import { BatchWriter } from '../../src/store/writer.js';
import type { RequestRow } from '../../src/store/rows.js';
import { tempDir } from '../helpers/tmp.js';

const real = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-gates-' });
await migrate(real);

let down = false;
/** The real store, whose queries fail while `down`. */
const store = new Proxy(real, {
  get(target, prop) {
    if (prop === 'query' && down) return () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' }));
    const v = Reflect.get(target, prop, target) as unknown;
    return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
  },
}) as Store;

const NOW = Date.now();
let seq = 0;
function record(cost: number, tokens = 100): UsageRecord {
  const startedAt = NOW - 60_000 + seq++;
  return makeRecord({
    requestId: uuidv7(startedAt), startedAt, endedAt: startedAt + 10, endpoint: 'chat.completions', provider: 'day', providerGroup: 'paid',
    model: 'day/m', requestedModel: 'day/m', modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: tokens - 10, cached: null, cacheWrite: null, output: 10, reasoning: null }, usageSource: 'reported',
    cost: { cost, listCost: cost }, latency: { kind: 'unary', totalMs: 10 }, upstreamMs: 9,
  });
}

const cfg = parseConfig({
  providers: { day: { group: 'paid', format: 'mock', price: { input: 1, output: 1 }, quota: { kind: 'daily_tokens', limit: 250 }, models: { m: { kind: 'llm' } } } },
  budgets: { daily_usd: 1 },
}, {});

t.test('budget: the last stored figure plus what this process spent since', async (t) => {
  down = false;
  const budget = new BudgetService(store, () => cfg);
  const stored = record(0.4);
  await real.insert('requests', [toRow(stored)]);
  t.equal((await budget.refresh()).daily.spent, 0.4, 'read from ClickHouse');
  down = true;
  const during = [record(0.35), record(0.3)];
  for (const r of during) budget.published(r);
  const s = await budget.refresh();
  t.equal(s.daily.spent, 1.05, 'the outage does not hide spend: 0.4 stored + 0.65 published since');
  t.ok(budget.dailyExceeded(), 'and the daily budget gate sees the crossing');
  down = false;
  await real.insert('requests', during.map(toRow));
  budget.written(during.map((r) => r.requestId));
  t.equal((await budget.refresh()).daily.spent, 1.05, 'after the outage: the same figure, from ClickHouse');
});

t.test('budget: a batch that lands during its read (its own, or the quota\'s it is given) is counted once (read again after the insert)', async (t) => {
  down = false;
  // The writer's store holds each insert's answer back after the rows have landed: they are in ClickHouse while the
  // writer has not yet reported them written, as when an insert and a read run side by side.
  let landed!: () => void;
  const inStore = new Promise<void>((r) => (landed = r));
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const slow = new Proxy(real, {
    get(target, prop) {
      if (prop === 'insertLines') {
        return async (...a: Parameters<Store['insertLines']>) => {
          await target.insertLines(...a);
          landed();
          await held;
        };
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Store;
  let budget: BudgetService | null = null;
  const spool = new Spool<RequestRow>({ dir: tempDir(t, 'tollgate-gates-spool-'), commitMs: 50, maxBytes: 1 << 20, columns: REQUEST_COLUMNS }, (row) => String(row.request_id));
  const writer = new BatchWriter<RequestRow>(slow, 'requests', spool, { maxRows: 1, flushMs: 10 }, {
    written: (_n, ids) => budget?.written(ids), dropped: () => undefined, error: () => undefined, state: () => undefined,
  });
  t.teardown(() => writer.close());
  budget = new BudgetService(store, () => cfg, { fence: writer });
  const before = (await budget.refresh()).daily.spent;
  const r = record(0.25);
  budget.published(r);
  t.ok(writer.enqueue(toRow(r)));
  await inStore;
  // The budget's own read, made while the insert runs (its row in ClickHouse, not yet reported written), holds the row
  // and cannot tell: it is read again once the insert is over.
  const refreshed = budget.refresh();
  // The quota's read, which sums the budget's windows for the alert evaluator, waits for the insert's end before it
  // reads (src/accounting/quota.ts): its figures then hold the row, which is no longer unconfirmed.
  const quota = new QuotaService(store, () => cfg, { fence: writer });
  const reading = quota.entries();
  setTimeout(release, 300);
  t.equal((await refreshed).daily.spent, Number((before + 0.25).toFixed(12)), 'the new record once, not once stored and once unconfirmed');
  await reading;
  t.equal(quota.spend?.clean, true, "the quota's read began once the insert was over");
  t.equal((await budget.refresh(quota.spend)).daily.spent, Number((before + 0.25).toFixed(12)), 'the budget takes its figures: the record once');
  // Figures a quota read made beside an insert (inserts beside both of its reads: not clean) are not taken, whatever
  // they say: the budget reads for itself.
  const beside = { ...quota.spend!, clean: false, costs: quota.spend!.costs.map(() => 999) };
  t.equal((await budget.refresh(beside)).daily.spent, Number((before + 0.25).toFixed(12)), 'a read beside an insert: not taken, read again');
  t.equal(writer.insertsStarted, writer.insertsEnded, 'the insert is over');
});

t.test('budget: with nothing read before the outage, refresh fails rather than guess zero', async (t) => {
  down = true;
  await t.rejects(new BudgetService(store, () => cfg).refresh());
  down = false;
});

t.test('quota: the last snapshot stands while the store is down', async (t) => {
  down = false;
  let now = NOW;
  const quota = new QuotaService(store, () => cfg, { now: () => now, cacheMs: 1000 });
  await real.insert('requests', [toRow(record(0, 300))]);
  const before = await quota.entries();
  const day = before.find((e) => e.id === 'day')!;
  t.equal(day.exhausted, true, 'the daily token quota is used up');
  down = true;
  now += 5000;
  t.same(await quota.entries(), before, 'the last snapshot is served');
  t.equal(quota.exhausted('day'), true, 'and routing still skips the provider');
  quota.published(record(0, 40));
  now += 5000;
  t.equal((await quota.entries()).find((e) => e.id === 'day')!.quota.used, day.quota.used + 40, "with this process's calls since added (40 tokens)");
  const fresh = new QuotaService(store, () => cfg, { now: () => now });
  await t.rejects(fresh.entries(), { code: 'TOLLGATE_ERR_STORE_UNAVAILABLE', status: 503 }, 'no snapshot yet: a 503, not a guess');
  down = false;
});
