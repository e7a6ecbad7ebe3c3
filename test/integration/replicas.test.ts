// Two replicas on one ClickHouse (docs/scaling.md): two gateways in this process, each with its own data directory
// (its spool), both on the server path to one ClickHouse server (the test server of test/helpers/clickhouse-http.ts
// in a child process, so no embedded engine is held here). They start (and migrate) at the same moment; each takes
// half the traffic; each then answers /api/usage, /api/quota and /api/budgets with both halves; the daily budget is
// crossed by their combined spend and each budget alert reaches the webhook exactly once. A second pair, with the
// shipped flush interval, shares a keep-alive connection: one ping per window, whichever replica saw the calls.

import t from 'tap';
import { startApp, DEMO_PROVIDER, type TestApp } from '../helpers/app.js';
import { spawnClickHouseHttp } from '../helpers/clickhouse-http.js';
import { receiver } from '../helpers/receivers.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';
import { clearOfDayEdges } from '../helpers/day-edge.js';

const SECRET = 'whsec_replicas';
// The daily budget and the daily_requests quota count one UTC day:
// the whole file (about 20 s) runs inside one day.
await clearOfDayEdges(t, 75_000);
const server = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-chserver-') });
const hook = await receiver(t, SECRET);
// $1 per 1M input tokens, $2 per 1M output: the mock's requests cost a few micro-dollars each, so the budget is tiny.
const raw = {
  storage: { clickhouse_url: server.url, database: 'replicas' },
  providers: {
    demo: { ...DEMO_PROVIDER, quota: { kind: 'daily_requests', limit: 1000 } },
  },
  budgets: { daily_usd: 0.0002 },
  alerts: { channels: { dashboard: true, webhook: { url: hook.url, secret: SECRET } } },
};

const started = Date.now();
const [a, b] = await Promise.all([startApp(t, raw, { dataDir: tempDir(t) }), startApp(t, raw, { dataDir: tempDir(t) })]);
const startMs = Date.now() - started;

async function chat(gw: TestApp, n: number): Promise<string> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', stream: n % 2 === 1, messages: [{ role: 'user', content: `replica request ${n}` }] }),
  });
  await res.text();
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  return res.headers.get('x-request-id')!;
}

t.test('both start at once on one server: every migration applied once', async (t) => {
  const store = a.app.tollgate.store;
  const versions = await store.query<{ version: number }>(`SELECT DISTINCT version FROM ${store.t('schema_migrations')} ORDER BY version`);
  t.same(versions.map((v) => Number(v.version)), MIGRATIONS.map((m) => m.version));
  t.ok(startMs < 60_000, `both replicas ready in ${startMs} ms`);
});

t.test('each replica answers with both replicas\' traffic', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(await chat(i % 2 === 0 ? a : b, i));
  const t0 = Date.now();
  // Within the flush interval (50 ms in tests; 2 s by default) the rows of both are in ClickHouse.
  await Promise.all([a.flush(), b.flush()]);
  const seen = Date.now() - t0;
  const rows = await a.rows();
  t.same(rows.map((r) => r.request_id).sort(), [...ids].sort(), 'one row per request, whichever replica served it');
  for (const [name, gw] of [['a', a], ['b', b]] as const) {
    const usage = (await (await fetch(`${gw.url}/api/usage?period=today`)).json()) as { summary: { requests: number; cost: number } };
    t.equal(usage.summary.requests, 20, `replica ${name}: /api/usage counts both halves`);
  }
  await new Promise((r) => setTimeout(r, 1100)); // past the quota snapshot cache
  const used = await Promise.all([a, b].map(async (gw) => {
    const q = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; quota: { used: number } }[] };
    return q.providers.find((p) => p.id === 'demo')!.quota.used;
  }));
  t.same(used, [20, 20], '/api/quota on each replica counts both halves');
  const spent = await Promise.all([a, b].map(async (gw) => ((await (await fetch(`${gw.url}/api/budgets`)).json()) as { daily: { spent: number } }).daily.spent));
  t.equal(spent[0], spent[1], `/api/budgets agrees on both replicas (${spent[0]} USD)`);
  t.ok(spent[0]! > 0.0002, 'and the combined spend is over the daily budget');
  t.comment(`both replicas saw all 20 rows ${seen} ms after the last request`);
});

t.test('a budget alert both replicas see is delivered once', async (t) => {
  // Each replica's evaluator runs on its own (a timer, and a check after each of its own records).
  await Promise.all([chat(a, 100), chat(b, 101)]);
  await waitFor(() => hook.got.length >= 2, 20_000);
  await new Promise((r) => setTimeout(r, 2000)); // time for a second delivery, were there one
  const kinds = hook.got.map((g) => {
    const alert = JSON.parse(g.body) as { kind: string; threshold: number };
    return `${alert.kind}:${alert.threshold}`;
  });
  t.same(kinds.sort(), ['daily_budget:100', 'daily_budget:80'], 'the 80 % and 100 % alerts, once each');
  t.ok(hook.got.every((g) => g.signed), 'signed');
  const store = a.app.tollgate.store;
  const owners = await store.query<{ claimed_by: string }>(`SELECT DISTINCT claimed_by FROM ${store.t('alerts')} FINAL WHERE kind = 'daily_budget'`);
  t.ok(owners.length >= 1 && owners.every((o) => o.claimed_by !== ''), `claimed by ${owners.length} replica(s)`);
});

t.test('keep-alive: one ping per window, whichever replicas saw the traffic', async (t) => {
  // A pair of its own, with the shipped flush interval (2 s): a ping reaches ClickHouse about two seconds after it is
  // sent, so the other replica decides before it can read it (with the tests' 50 ms it reads it, and the case
  // passed with claims keyed by each replica's own idea of the window: both pinged in production).
  // A subscription provider with keep-alive pings on a 2 s window; the fake records when each ping arrived.
  const up = await startFakeOpenAI(t);
  const pingTimes: number[] = [];
  const seen = up.received.push.bind(up.received);
  up.received.push = (...r) => {
    for (const x of r) if (x.body.max_tokens === 1) pingTimes.push(Date.now());
    return seen(...r);
  };
  const keepRaw = {
    storage: { clickhouse_url: server.url, database: 'replicas_keep', batch: { flush_ms: 2000 } },
    providers: { keep: fakeProvider(up.baseUrl, { group: 'subscription', keepalive: { enabled: true, window: '2s' }, models: { 'gpt-4o': { kind: 'llm' } } }) },
  };
  const [c, d] = await Promise.all([startApp(t, keepRaw, { dataDir: tempDir(t) }), startApp(t, keepRaw, { dataDir: tempDir(t) })]);
  const keep = async (gw: TestApp) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'keep/gpt-4o', messages: [{ role: 'user', content: 'open the window' }] }),
    });
    await res.text();
    t.equal(res.status, 200);
  };
  // Both replicas see a call, 300 ms apart: each has its own idea of the window, and each would ping at its end.
  await keep(c);
  await new Promise((r) => setTimeout(r, 300));
  await keep(d);
  await new Promise((r) => setTimeout(r, 6500));
  const gaps = pingTimes.slice(1).map((at, i) => at - pingTimes[i]!);
  t.ok(pingTimes.length >= 2 && pingTimes.length <= 4, `${pingTimes.length} pings in about three 2 s windows`);
  t.ok(gaps.every((g) => g >= 1500), `never two pings in one window (gaps ${gaps.join(', ')} ms)`);
  const store = c.app.tollgate.store;
  const [claims] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('claims')} WHERE key LIKE 'ping:keep#%'`);
  t.ok(Number(claims!.n) >= 1, `${claims!.n} windows claimed in the store`);
});
