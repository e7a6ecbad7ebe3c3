// A config reload, or a read that fails, right after a batch of this gateway's rows was stored: the routing verdict
// never counts less than the last snapshot did (src/accounting/quota.ts `reconfigured`, the store-down branch of
// `entries`). The stored rows have left the list of calls not stored yet, and the last read did not have them; before,
// the reload's verdict was that read with the list now and the tallies now, so the calls stored in between counted
// nowhere until the next read landed: with a limit of 3 used up, 3 more calls reached the provider, and with the store
// refusing reads, for the whole outage. Now the reload evaluates what the last snapshot counted against the new
// limits, routing adding the calls since. On the real store, with a fixed clock, through QuotaService itself; then
// through a gateway (the review's scenario): what the fake upstream received.

import t from 'tap';
import { request } from 'undici';
import type { Store } from '../../src/store/client.js';
import { startApp, testConfig, DEMO_PROVIDER } from '../helpers/app.js';
import { startFakeOpenAI, fakeProvider } from '../helpers/fake-openai.js';
import { tempDir, type Teardown } from '../helpers/tmp.js';
import { onQueries } from '../helpers/store-reads.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type UsageRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { QuotaService } from '../../src/accounting/quota.js';

const M = 60_000;
const NOW = Date.UTC(2026, 2, 4, 12); // Wednesday 2026-03-04 12:00Z

const lim = await startFakeOpenAI(t);
const spare = await startFakeOpenAI(t);
const dataDir = tempDir(t);
const quota3 = (limit = 3) => ({ ...DEMO_PROVIDER, group: 'free', quota: { kind: 'daily_requests', limit }, models: { m: { kind: 'llm' } } });
const raw = (o: { extra?: boolean; limit?: number } = {}) => ({
  providers: {
    lim: fakeProvider(lim.baseUrl, { group: 'free', models: { m: { kind: 'llm' } }, quota: { kind: 'daily_requests', limit: 3 } }),
    spare: fakeProvider(spare.baseUrl, { models: { m: { kind: 'llm' } } }),
    // Providers QuotaService is driven on by hand below, one a test (the store keeps every test's rows).
    a: quota3(o.limit), b: quota3(o.limit), c: quota3(o.limit),
    ...(o.extra === true ? { other: fakeProvider(spare.baseUrl, { models: { m: { kind: 'llm' } } }) } : {}),
  },
  combos: { back: { strategy: 'fallback', models: ['lim/m', 'spare/m'] } },
});
const gw = await startApp(t, raw(), { dataDir });
const store = gw.app.tollgate.store;
const config = (o: { extra?: boolean; limit?: number } = {}) => testConfig(raw(o), dataDir);

let seq = 0;
const record = (provider: string, at: number): UsageRecord => makeRecord({
  kind: 'request', requestId: uuidv7(at + seq++), startedAt: at, endedAt: at + 1000, endpoint: 'chat.completions', provider,
  providerGroup: 'free', model: `${provider}/m`, requestedModel: 'x', modelKnown: true, apiKeyName: 'k', stream: false,
  status: 'success', httpStatus: 200, errorType: '', usage: { input: 5, cached: null, cacheWrite: null, output: 5, reasoning: null },
  usageSource: 'reported', cost: { cost: 0, listCost: 0 }, latency: { kind: 'unary', totalMs: 1000 }, upstreamMs: 900,
});

/** The store's reads held until `open()` (a read begun at a reload that has not landed yet). */
function holdReads(t: Teardown, s: Store): { open(): void } {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const query = s.query;
  const held = async function (this: Store, ...args: Parameters<Store['query']>) {
    await gate;
    return query.apply(this, args);
  } as Store['query'];
  s.query = held;
  const restore = () => {
    if (s.query === held) s.query = query;
  };
  t.teardown(restore);
  return { open: () => (restore(), open()) };
}

/** A snapshot (nothing of `provider` yet), then 3 calls published, stored, and reported stored: 3 of 3 used. */
async function threeStored(t: Teardown, provider: string, cfg: { current: ReturnType<typeof config> }, now = () => NOW) {
  const q = new QuotaService(store, () => cfg.current, { now, cacheMs: 60_000, staleMs: 60_000 });
  const before = (await q.entries()).find((e) => e.id === provider)!;
  const calls = [3, 2, 1].map((i) => record(provider, NOW - i * M));
  for (const r of calls) q.published(r);
  await store.insert('requests', calls.map(toRow));
  q.stored(calls.map((r) => r.requestId));
  return { q, before };
}

t.test('a reload right after a batch was stored, before the new read lands: still 3 of 3', async (t) => {
  const cfg = { current: config() };
  const { q, before } = await threeStored(t, 'a', cfg);
  t.equal(before.quota.used, 0, 'the snapshot had none of them');
  t.equal(q.exhausted('a'), true, 'stored: 3 of 3 (the calls since the snapshot)');
  const reads = holdReads(t, store);
  cfg.current = config({ extra: true }); // an unrelated change: another provider added
  q.reconfigured();
  await new Promise((r) => setImmediate(r));
  t.equal(q.exhausted('a'), true, 'reloaded: still 3 of 3 (was 0: the calls stored since the read counted nowhere)');
  cfg.current = config({ extra: true, limit: 4 });
  q.reconfigured();
  await new Promise((r) => setImmediate(r));
  t.equal(q.exhausted('a'), false, 'a limit raised to 4: 3 of 4');
  const release = q.reserve('a');
  t.equal(q.exhausted('a'), true, 'and one in flight: 4 of 4');
  release();
  reads.open();
  t.match((await q.entries()).find((e) => e.id === 'a'), { exhausted: false, quota: { used: 3, limit: 4 } }, 'the new read: 3 stored');
});

t.test('a reload with the store refusing reads: 3 of 3 for the whole outage', async (t) => {
  const cfg = { current: config() };
  const { q } = await threeStored(t, 'b', cfg);
  const down = onQueries(t, store, () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
  });
  cfg.current = config({ extra: true });
  q.reconfigured();
  await q.entries().catch(() => undefined); // the read begun at the reload fails
  t.equal(q.exhausted('b'), true, 'still 3 of 3 once the read failed');
  await q.entries().catch(() => undefined);
  t.equal(q.exhausted('b'), true, 'and after the next failed read');
  cfg.current = config({ extra: true, limit: 4 });
  q.reconfigured();
  await q.entries().catch(() => undefined);
  t.equal(q.exhausted('b'), false, 'a limit raised to 4 during the outage: 3 of 4');
  q.published(record('b', NOW - 30_000));
  t.equal(q.exhausted('b'), true, 'a call since: 4 of 4');
  down.restore();
});

t.test('no reload, the store refusing reads after a batch was stored: 3 of 3', async (t) => {
  let now = NOW;
  const cfg = { current: config() };
  const { q } = await threeStored(t, 'c', cfg, () => now);
  t.equal(q.exhausted('c'), true);
  const down = onQueries(t, store, () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
  });
  now = NOW + 120_000; // the snapshot is old: the next look reads, and the read fails
  const entries = await q.entries();
  t.equal(entries.find((e) => e.id === 'c')!.quota.used, 0, "the last snapshot's figures stand (the read has none of the 3)");
  t.equal(q.exhausted('c'), true, 'routing: 3 of 3 (was 0: the snapshot rebuilt from the read and the list now)');
  down.restore();
});

t.test("the review's scenario through the gateway: a reload right after a flush sends no 4th call", async (t) => {
  const chat = async () => {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'back', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.body.text();
    return res.statusCode;
  };
  for (let i = 0; i < 3; i++) t.equal(await chat(), 200);
  t.equal(lim.received.length, 3, 'lim took its 3');
  await gw.flush(); // the 3 rows stored: off the list of calls not stored yet
  gw.holder.replace(config({ extra: true }));
  const statuses = await Promise.all(Array.from({ length: 5 }, () => chat()));
  t.same(statuses, [200, 200, 200, 200, 200]);
  t.equal(lim.received.length, 3, `lim received no 4th request (${lim.received.length} in all)`);
  t.equal(spare.received.length, 5, 'the 5 went to the spare');
  t.equal((await gw.rows("provider = 'lim' AND kind = 'attempt'")).length, 3);
});
