// The quota counts this process's records not stored yet (src/accounting/quota.ts, `published` / `stored`): a snapshot
// adds them to what it read, as its rows will be, exactly once: not when their row is stored, and a read an insert ran
// beside (which may have put them in what was read) is made again once the insert has ended. On the real store, with a
// fixed clock and a write fence the test moves by hand; and through the gateway, whose writer inserts once a minute here.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind, type UsageRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { QuotaService } from '../../src/accounting/quota.js';
import { settledWithin, type WriteFence } from '../../src/store/write-fence.js';
import { countReads, onQueries } from '../helpers/store-reads.js';

const H = 3_600_000;
const M = 60_000;
// Wednesday 2026-03-04 12:00Z; the month began 2026-03-01.
const NOW = Date.UTC(2026, 2, 4, 12);

const provider = (quota: Record<string, unknown>, group = 'subscription') => ({ ...DEMO_PROVIDER, group, quota, models: { m: { kind: 'llm' }, n: { kind: 'llm' } } });
// One gateway (one embedded engine a process), whose writer inserts once a minute: the last test's row waits.
const gw = await startApp(t, {
  storage: { batch: { flush_ms: 60_000 } },
  providers: {
    live: { ...DEMO_PROVIDER, quota: { kind: 'daily_requests', limit: 10 }, models: { m: { kind: 'llm' } } },
    day: provider({ kind: 'daily_tokens', limit: 1000 }, 'paid'),
    reqs: provider({ kind: 'daily_requests', limit: 3, monthly_limit: 5 }, 'free'),
    hours: provider({ kind: 'rolling_hours', limit: 5 }),
    roll: provider({ kind: 'rolling_tokens', limit: 500 }),
  },
});
const store = gw.app.tollgate.store;

let seq = 0;
function record(provider: string, at: number, o: { tokens?: number; ms?: number; model?: string; kind?: RecordKind; cost?: number } = {}): UsageRecord {
  const tokens = o.tokens ?? 100;
  return makeRecord({
    kind: o.kind ?? 'request', requestId: uuidv7(at + seq++), startedAt: at, endedAt: at + (o.ms ?? 1000), endpoint: 'chat.completions', provider,
    providerGroup: 'paid', model: `${provider}/${o.model ?? 'm'}`, requestedModel: 'x', modelKnown: true, apiKeyName: 'k', stream: false,
    status: 'success', httpStatus: 200, errorType: '',
    usage: { input: tokens - Math.min(10, tokens), cached: null, cacheWrite: null, output: Math.min(10, tokens), reasoning: null },
    usageSource: 'reported', cost: { cost: o.cost ?? 0, listCost: o.cost ?? 0 }, latency: { kind: 'unary', totalMs: o.ms ?? 1000 }, upstreamMs: 900,
  });
}

/** A write fence moved by hand, as the batch writer's: `settled` waits until every insert begun has ended. */
function fence(): WriteFence & { begin(): void; end(): void } {
  let started = 0;
  let ended = 0;
  const waiting: (() => void)[] = [];
  const f: WriteFence & { begin(): void; end(): void } = {
    hold: (ms) => settledWithin(f, ms).then(() => () => undefined),
    get insertsStarted() {
      return started;
    },
    get insertsEnded() {
      return ended;
    },
    settled: () => (started === ended ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve))),
    begin: () => void started++,
    end: () => {
      ended++;
      if (started === ended) for (const resolve of waiting.splice(0)) resolve();
    },
  };
  return f;
}

/** Whether `p` has settled, after the event loop has had `ms` to run. */
async function doneWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  await new Promise((r) => setTimeout(r, ms));
  return done;
}

// Stored before: 'day' 100 tokens this morning ($0.5), 'reqs' one call today and one earlier this month.
await store.insert('requests', [
  toRow(record('day', NOW - 2 * H, { tokens: 100, cost: 0.5 })),
  toRow(record('reqs', NOW - 2 * H)),
  toRow(record('reqs', Date.UTC(2026, 2, 2, 5))),
]);

t.test('records published and not stored count once: before their row lands, and after', async (t) => {
  const f = fence();
  const q = new QuotaService(store, () => gw.holder.current, { now: () => NOW, fence: f, cacheMs: 0 });
  const of = async (id: string) => (await q.entries()).find((e) => e.id === id)!;
  t.equal((await of('day')).quota.used, 100, 'the stored rows');
  const a = record('day', NOW - 5 * M, { tokens: 40, cost: 0.25 });
  const yesterday = record('day', NOW - 13 * H, { tokens: 7, cost: 0.125 }); // before today's window (00:00Z), this month
  const combo = record('day', NOW - M, { tokens: 1000, kind: 'combo' }); // a client request's summary, not a call
  const elsewhere = record('nobody', NOW - M, { tokens: 1000 }); // a provider the config does not have
  for (const r of [a, yesterday, combo, elsewhere]) q.published(r);
  let day = await of('day');
  t.equal(day.quota.used, 140, "published: counted in its provider's window at once; the day before and the combo row not");
  t.same(day.cost, { today: 0.75, month: 0.875, currency: 'USD' }, 'its cost today, and the month the day before too');
  // The writer inserts the rows and reports them stored: read from the store now, no longer added.
  f.begin();
  await store.insert('requests', [a, yesterday, combo, elsewhere].map(toRow));
  f.end();
  q.stored([a.requestId, yesterday.requestId, combo.requestId, elsewhere.requestId]);
  day = await of('day');
  t.equal(day.quota.used, 140, 'stored: counted once');
  t.same(day.cost, { today: 0.75, month: 0.875, currency: 'USD' });
});

t.test('a read asked for while an insert runs waits for its end: the row read once, never the stored figures alone', async (t) => {
  const f = fence();
  const q = new QuotaService(store, () => gw.holder.current, { now: () => NOW, fence: f, cacheMs: 0 });
  const used = async () => (await q.entries()).find((e) => e.id === 'day')!.quota.used;
  const base = await used();
  const b = record('day', NOW - 4 * M, { tokens: 60 });
  q.published(b);
  t.equal(await used(), base + 60, 'not stored: added');
  // The insert lands, its `written` event has not come yet: what a read would find holds the row already, and
  // whether it does cannot be told from the read, so the read waits.
  f.begin();
  await store.insert('requests', [toRow(b)]);
  const during = used();
  const c = record('day', NOW - 3 * M, { tokens: 5 });
  q.published(c);
  t.equal(await doneWithin(during, 50), false, 'it waits while the insert runs');
  // The writer's order (src/store/writer.ts): the `written` event, then the insert's end.
  q.stored([b.requestId]);
  f.end();
  t.equal(await during, base + 65, 'then reads: the row once, and the record published meanwhile');
  t.equal(await used(), base + 65);
});

t.test('an insert that begins beside a read: the read is made again once it has ended (a false reset otherwise)', async (t) => {
  const f = fence();
  const q = new QuotaService(store, () => gw.holder.current, { now: () => NOW, fence: f, cacheMs: 0 });
  const used = async (o = {}) => (await q.entries(o)).find((e) => e.id === 'day')!.quota.used;
  const base = await used();
  const d = record('day', NOW - 2 * M, { tokens: 800 });
  q.published(d);
  t.equal(await used({ current: true }), base + 800, 'published: the evaluator sees it (80 % of this quota, say)');
  // The writer's flush begins while the next read's query is under way, and lands after it: that query's figures
  // have no row of it, and the calls not stored cannot be added to them (the insert might have been in them).
  let reads = 0;
  onQueries(t, store, () => {
    if (reads++ > 0) return;
    f.begin();
    setTimeout(() => {
      void store.insert('requests', [toRow(d)]).then(() => {
        q.stored([d.requestId]);
        f.end();
      });
    }, 20);
  });
  q.stored([]); // a change: the next caller reads
  t.equal(await used({ current: true }), base + 800, 'still 800 more: never the stored figures alone (0 % for a moment)');
  t.ok(reads >= 2, `read again once the insert ended (${reads} queries)`);
  t.equal(f.insertsEnded, 1, 'the insert had ended');
});

t.test('inserts beside both reads: the stored figures, marked not complete (the evaluator tells no reset from them)', async (t) => {
  const f = fence();
  const q = new QuotaService(store, () => gw.holder.current, { now: () => NOW, fence: f, cacheMs: 0 });
  const first = await q.entries({ current: true });
  t.equal(q.complete(first), true, 'a read no insert ran beside: complete');
  const base = first.find((e) => e.id === 'day')!.quota.used;
  const e = record('day', NOW - M, { tokens: 30 });
  q.published(e);
  // A backlog being written: an insert begins while each of the two reads' queries runs, and ends right after it.
  let beside = 2;
  const backlog = onQueries(t, store, () => {
    if (beside-- <= 0) return;
    f.begin();
    return () => f.end();
  });
  q.stored([]);
  const short = await q.entries({ current: true });
  t.equal(short.find((x) => x.id === 'day')!.quota.used, base, 'the stored figures alone, short of the call not stored');
  t.equal(q.complete(short), false, 'and said to be');
  backlog.restore();
  q.stored([]);
  const again = await q.entries({ current: true });
  t.equal(again.find((x) => x.id === 'day')!.quota.used, base + 30, 'no insert beside: the call added');
  t.equal(q.complete(again), true);
  t.equal(q.complete(short), false, 'an earlier result is not the latest snapshot');
});

t.test('an insert that does not end (a store in trouble) holds a read up for the wait at most: the stored figures, incomplete', async (t) => {
  const f = fence();
  const q = new QuotaService(store, () => gw.holder.current, { now: () => NOW, fence: f, cacheMs: 0, settleWaitMs: 100 });
  const base = (await q.entries()).find((e) => e.id === 'day')!.quota.used;
  q.published(record('day', NOW - M, { tokens: 12 }));
  f.begin(); // and never ends
  const started = Date.now();
  const got = await q.entries({ current: true });
  const waited = Date.now() - started;
  t.ok(waited >= 150 && waited < 5000, `two waits of 100 ms, not the insert's end (${waited} ms)`);
  t.equal(got.find((e) => e.id === 'day')!.quota.used, base, 'the stored figures');
  t.equal(q.complete(got), false, 'marked incomplete');
});

t.test('each kind of quota counts them as their rows: requests, the month, hours by model, rolling windows', async (t) => {
  const q = new QuotaService(store, () => gw.holder.current, { now: () => NOW, fence: fence(), cacheMs: 0 });
  const get = async () => Object.fromEntries((await q.entries()).map((e) => [e.id, e]));
  let e = await get();
  t.same([e.reqs!.quota.used, e.reqs!.secondary?.used], [1, 2], 'stored: one call today, two this month');
  const roll0 = e.roll!.quota.used;
  q.published(record('reqs', NOW - M, { kind: 'attempt' }));
  q.published(record('hours', NOW - 10 * M, { ms: 30 * M, model: 'n' }));
  q.published(record('hours', NOW - 20 * M, { ms: 6 * M, model: 'm' }));
  q.published(record('roll', NOW - 5 * H - 1, { tokens: 999 })); // one millisecond before the 5 h window
  q.published(record('roll', NOW - 2 * H, { tokens: 30 }));
  e = await get();
  t.same([e.reqs!.quota.used, e.reqs!.secondary?.used], [2, 3], 'an attempt is a call: today and this month');
  t.same(e.hours!.models, [{ model: 'hours/m', used: 0.1 }, { model: 'hours/n', used: 0.5 }], 'hours by model');
  t.equal(e.hours!.quota.used, 0.6);
  t.equal(e.roll!.quota.used, roll0 + 30, 'the rolling window from its first millisecond');
  t.equal(e.roll!.reset.nextReset, new Date(NOW - 2 * H + 5 * H).toISOString(), 'its oldest counted usage sets the reset');
});

t.test('`current` figures hold every record published, added to the cached read; others come from the cache', async (t) => {
  const now = NOW;
  const f = fence();
  const q = new QuotaService(store, () => gw.holder.current, { now: () => now, fence: f });
  const day = async (o = {}) => (await q.entries(o)).find((e) => e.id === 'day')!.quota.used;
  const base = await day();
  const reads = countReads(t, store);
  q.published(record('day', NOW - 2 * M, { tokens: 3 }));
  t.equal(await day(), base, "a plain caller gets the cache's second");
  t.equal(await day({ current: true }), base + 3, 'the alert evaluator gets figures with the record');
  t.equal(reads.count, 0, 'added to the cached read: no read of the store');
  t.equal(await day(), base + 3, 'which is the cache from then on');
  // An insert running: a `current` caller waits for its end and reads again, with every record published so far.
  f.begin();
  q.stored([]);
  const during = day({ current: true });
  q.published(record('day', NOW - M, { tokens: 4 }));
  reads.reset();
  t.equal(await doneWithin(during, 50), false, 'an insert running: the caller waits');
  t.equal(reads.count, 0, 'no read while it runs');
  f.end();
  q.stored([]);
  t.equal(await during, base + 7, 'the insert over: read again, both added');
  t.ok(reads.count > 0, 'and it was read again');
});

t.test('calls that start after the read count in the figures made from it (current figures; the store down)', async (t) => {
  // The evaluator asks for current figures after each request; within the cache they are the last read's with the
  // calls published since added. A window that ends now was cut at the read's own instant, and a call that began
  // after it counted nowhere: the evaluator saw 0 % while /api/quota, read again, saw 87 %.
  let now = NOW;
  const q = new QuotaService(store, () => gw.holder.current, { now: () => now, fence: fence(), cacheMs: 60_000, staleMs: 60_000 });
  const used = async (o = {}) => (await q.entries(o)).find((e) => e.id === 'day')!.quota.used;
  const reads = countReads(t, store);
  const base = await used();
  t.equal(reads.count, 1, 'one read');
  now = NOW + 2_000;
  q.published(record('day', NOW + 1_000, { tokens: 30 })); // began after the read's instant
  t.equal(await used({ current: true }), base + 30, 'current figures: the call counted, from the same read');
  t.equal(reads.count, 1, 'no second read');
  // The store down: the next read fails and the snapshot stands, with the calls since added.
  now = NOW + 120_000;
  q.published(record('day', NOW + 100_000, { tokens: 9 }));
  const down = onQueries(t, store, () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
  });
  t.equal(await used(), base + 39, 'the store down: both calls on the last figures');
  down.restore();
});

t.test('a routing look at a snapshot older than the cache starts a new one (an idle replica routed on 15 s old figures)', async (t) => {
  let now = NOW;
  const q = new QuotaService(store, () => gw.holder.current, { now: () => now, fence: fence(), cacheMs: 1000 });
  await q.entries();
  const reads = countReads(t, store);
  now = NOW + 500;
  q.exhausted('day');
  t.equal(reads.count, 0, 'a fresh snapshot: no read');
  now = NOW + 1500;
  const was = q.exhausted('day');
  await new Promise((r) => setImmediate(r)); // the read goes out once no insert runs (none here): a turn later
  const begun = reads.count;
  t.ok(begun > 0, `a new one begun (${begun} reads)`);
  q.exhausted('day');
  t.equal(reads.count, begun, 'one at a time');
  const fresh = await q.entries();
  t.equal(was, fresh.find((e) => e.id === 'day')!.exhausted, 'the look answered from the last snapshot (nothing changed since)');
  now = NOW + 2000;
  q.exhausted('day');
  t.equal(reads.count, begun, 'the new snapshot is fresh: no read');
});

t.test('through the gateway: /api/quota shows a request whose row is not stored yet', async (t) => {
  await gw.app.tollgate.storeReady;
  const used = async () => ((await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; quota: { used: number } }[] }).providers.find((p) => p.id === 'live')!.quota.used;
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'live/m', messages: [{ role: 'user', content: 'hi' }] }) });
  t.equal(res.status, 200);
  await res.text();
  t.equal(gw.app.tollgate.writer.depth, 1, 'its row waits in the spool (a minute between inserts)');
  // The snapshot is cached for a second: the first read after the request may be the one before it.
  let seen = await used();
  for (let i = 0; i < 30 && seen === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    seen = await used();
  }
  t.equal(seen, 1, 'counted before its insert');
  const s2 = gw.app.tollgate.store;
  t.same(await s2.query<{ n: string }>(`SELECT toString(count()) AS n FROM ${s2.t('requests')} WHERE provider = 'live'`), [{ n: '0' }], 'and its row is still not in the store');
});
