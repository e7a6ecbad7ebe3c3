// Export, wipe, import (src/api/admin.ts, src/archive, src/store/export.ts): a gateway with an admin key records
// requests of several statuses (chat, streamed and not, an upstream error, an unknown model) and alerts with a
// delivery; its /api/usage, /api/quota and /api/usage/logs are captured and the store exported. A gateway on a fresh
// data directory imports the archive and must answer the same; a second import adds nothing; importing into the
// original store adds nothing. One embedded store is open at a time (chdb binds one per process).
// admin-roundtrip.server.test.ts runs the same with each store a ClickHouse server reached over HTTP.

import t from 'tap';
import { startApp, DEMO_PROVIDER, type TestApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { receiver } from '../helpers/receivers.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';
import { testStorage } from '../helpers/store-paths.js';
import { clearOfDayEdges } from '../helpers/day-edge.js';

const KEY = 'k-admin-roundtrip-0123456789';
const auth = { authorization: `Bearer ${KEY}` };
// The budget's day and the quota's (daily_requests, 00:00 UTC) must not end between the alert and the answers
// compared after the import: the whole file (about 15 s) runs inside one day.
await clearOfDayEdges(t, 75_000);
const up = await startFakeOpenAI(t);
const hook = await receiver(t, 'whsec_roundtrip');
const raw = {
  server: { api_keys: [{ name: 'admin', key: KEY, role: 'admin' }] },
  providers: {
    demo: DEMO_PROVIDER,
    open: fakeProvider(up.baseUrl, { quota: { kind: 'daily_requests', limit: 100 } }),
  },
  // tiny, so the first requests cross it: alert rows and a webhook delivery row
  budgets: { daily_usd: 0.00001 },
  alerts: { channels: { dashboard: true, webhook: { url: hook.url, secret: 'whsec_roundtrip' } } },
};

async function json(gw: TestApp, path: string): Promise<unknown> {
  const res = await fetch(`${gw.url}${path}`, { headers: auth });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * The three answers, without what depends on the moment they are asked or on the process rather than the record:
 * /api/usage's `to` (now) and, in /api/quota, the countdowns (`countdown_s`: seconds to the next reset) and each
 * provider's `cooldown` (the router's in-memory state after failures; a new process starts without it).
 */
async function answers(gw: TestApp): Promise<{ usage: unknown; quota: unknown; logs: unknown }> {
  await gw.flush();
  // /api/quota answers from a snapshot up to a second old (src/accounting/quota.ts): wait for one taken after now
  await new Promise((r) => setTimeout(r, 1500));
  const usage = (await json(gw, '/api/usage?period=month')) as Record<string, unknown>;
  delete usage.to;
  const quota = stripClock(await json(gw, '/api/quota'));
  const logs = await json(gw, '/api/usage/logs?limit=100');
  return { usage, quota, logs };
}

const CLOCK_KEYS = /^(countdown_s|cooldown)$/;
function stripClock(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripClock);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).filter(([k]) => !CLOCK_KEYS.test(k)).map(([k, x]) => [k, stripClock(x)]));
}

async function exportArchive(gw: TestApp): Promise<Buffer> {
  const token = ((await (await fetch(`${gw.url}/api/admin/reauth`, { method: 'POST', headers: auth })).json()) as { token: string }).token;
  const res = await fetch(`${gw.url}/api/admin/export`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`export: ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

async function importArchive(gw: TestApp, archive: Buffer): Promise<{ imported: Record<string, number>; skipped: Record<string, number> }> {
  const token = ((await (await fetch(`${gw.url}/api/admin/reauth`, { method: 'POST', headers: auth })).json()) as { token: string }).token;
  const res = await fetch(`${gw.url}/api/admin/import`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/gzip' }, body: archive });
  if (res.status !== 200) throw new Error(`import: ${res.status} ${await res.text()}`);
  return (await res.json()) as { imported: Record<string, number>; skipped: Record<string, number> };
}

async function counts(gw: TestApp): Promise<Record<string, number>> {
  const s = gw.app.tollgate.store;
  const out: Record<string, number> = {};
  for (const table of ['requests', 'alerts', 'alert_deliveries', 'usage_hourly']) {
    const q = table === 'usage_hourly' ? `SELECT sum(rows) AS n FROM ${s.t(table)}` : `SELECT count() AS n FROM ${s.t(table)}`;
    out[table] = Number((await s.query<{ n: string }>(q))[0]!.n);
  }
  return out;
}

const chat = (gw: TestApp, model: string, stream: boolean) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hello' }] }),
  }).then(async (r) => ({ status: r.status, body: await r.text() }));

const originalDir = tempDir(t);
// The original store and its data directory; on the server path, a ClickHouse server of its own.
const originalStorage = (await testStorage(t)).storage;
const on = (storage: object) => ({ ...raw, storage });
let archive: Buffer;
let before: Awaited<ReturnType<typeof answers>>;
let originalCounts: Record<string, number>;

t.test('the original gateway: requests of every status, alerts, then an export', async (t) => {
  const gw = await startApp(t, on(originalStorage), { dataDir: originalDir });
  const statuses: number[] = [];
  for (const stream of [false, true, false]) statuses.push((await chat(gw, 'demo/echo-1', stream)).status);
  statuses.push((await chat(gw, 'open/gpt-4o', true)).status);
  up.next({ kind: 'error', status: 500, body: { error: { message: 'upstream broke' } } });
  statuses.push((await chat(gw, 'open/gpt-4o', false)).status);
  statuses.push((await chat(gw, 'demo/no-such-model', false)).status);
  t.same(statuses.slice(0, 4), [200, 200, 200, 200], 'chat, streamed and not');
  t.ok(statuses[4]! >= 500, `the upstream error fails the request (${statuses[4]})`);
  t.equal(statuses[5], 404, 'an unknown model');
  await gw.flush();
  await waitFor(async () => (await counts(gw)).alert_deliveries > 0, 10_000);
  const rows = await gw.rows();
  t.ok(new Set(rows.map((r) => r.status)).size >= 2, `rows of several statuses: ${[...new Set(rows.map((r) => r.status))].join(', ')}`);
  before = await answers(gw);
  t.match(JSON.stringify(before.logs), /"failure"/, 'the logs hold the failed request');
  archive = await exportArchive(gw);
  originalCounts = await counts(gw);
  t.ok(originalCounts.requests >= 6 && originalCounts.alerts > 0 && originalCounts.alert_deliveries > 0, JSON.stringify(originalCounts));
  t.equal(originalCounts.usage_hourly, originalCounts.requests, 'the rollup counts every request once');
  await gw.close();
});

t.test('a fresh store imports the archive and answers exactly as before; a second import adds nothing', async (t) => {
  const gw = await startApp(t, on((await testStorage(t)).storage), { dataDir: tempDir(t) });
  t.same(await counts(gw), { requests: 0, alerts: 0, alert_deliveries: 0, usage_hourly: 0 }, 'wiped: a new data directory');
  const first = await importArchive(gw, archive);
  t.same(first.imported, { requests: originalCounts.requests, alerts: originalCounts.alerts, alert_deliveries: originalCounts.alert_deliveries });
  t.same(first.skipped, { requests: 0, alerts: 0, alert_deliveries: 0 });
  const after = await answers(gw);
  t.same(after.usage, before.usage, '/api/usage?period=month');
  t.same(after.quota, before.quota, '/api/quota');
  t.same(after.logs, before.logs, '/api/usage/logs');
  const imported = await counts(gw);
  t.equal(imported.requests, originalCounts.requests);
  t.equal(imported.usage_hourly, originalCounts.requests, 'the view filled the rollup from the imported rows exactly once');

  const second = await importArchive(gw, archive);
  t.same(second.imported, { requests: 0, alerts: 0, alert_deliveries: 0 }, 'the same archive again: nothing imported');
  t.same(second.skipped, { requests: originalCounts.requests, alerts: originalCounts.alerts, alert_deliveries: originalCounts.alert_deliveries }, 'everything skipped');
  const again = await answers(gw);
  t.same(again, after, 'every answer unchanged');
  t.equal((await counts(gw)).usage_hourly, originalCounts.requests, 'the rollup unchanged');
  await gw.close();
});

t.test('importing into the store the archive came from duplicates nothing', async (t) => {
  const gw = await startApp(t, on(originalStorage), { dataDir: originalDir });
  const result = await importArchive(gw, archive);
  t.same(result.imported, { requests: 0, alerts: 0, alert_deliveries: 0 });
  const now = await counts(gw);
  t.equal(now.requests, originalCounts.requests);
  t.equal(now.usage_hourly, originalCounts.requests);
  t.equal(now.alert_deliveries, originalCounts.alert_deliveries);
  const same = await answers(gw);
  t.same(same, before, 'every answer as before');
  await gw.close();
});
