// A provider usage source that answers figures JSON cannot hold (`1e400` reads as Infinity), or a reset in the past
// or years away: the figures are an invalid answer (the computed ones stand), such a reset is not taken (the quota's
// own stands), and no quota gauge is ever +Inf or NaN (src/accounting/quota-source.ts, gauges.ts). Before, `1e400`
// gave +Inf and NaN gauges and `exhausted: true` with `limit: null`, and a past reset a countdown of 0 and a combo's
// Retry-After of 1 until the next answer (180 s).

import t from 'tap';
import { request } from 'undici';
import { Metrics } from '../../src/telemetry/metrics.js';
import { watchQuota } from '../../src/accounting/gauges.js';
import type { QuotaService } from '../../src/accounting/quota.js';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { listenLoopback } from '../helpers/loopback.js';

const HOUR = 3_600_000;
const answers: Record<string, () => string> = {
  inf: () => '{"used": 1e400, "limit": 5000000}',
  nan: () => '{"used": 1e400, "limit": 1e400}',
  biglimit: () => '{"used": 10, "limit": 1e400}',
  past: () => '{"used": 10, "limit": 5, "reset": "2001-01-01T00:00:00Z"}',
  far: () => '{"used": 10, "limit": 5, "reset": "9999-01-01T00:00:00Z"}',
  soon: () => JSON.stringify({ used: 10, limit: 5, reset: new Date(Date.now() + 2 * HOUR).toISOString() }),
};
const src = await listenLoopback(t, async (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(answers[req.url!.slice(1)]!());
}, (_e, res) => res.end());
const provider = (name: string) => ({
  ...DEMO_PROVIDER, group: 'subscription', models: { m: { kind: 'llm' } },
  quota: { kind: 'daily_tokens', limit: 5_000_000, source: { url: `http://127.0.0.1:${src.port}/${name}`, headers: {} } },
});
const gw = await startApp(t, {
  providers: Object.fromEntries(Object.keys(answers).map((name) => [name, provider(name)])),
  combos: { cpast: { strategy: 'fallback', models: ['past/m'] }, cfar: { strategy: 'fallback', models: ['far/m'] } },
});

interface Entry { id: string; exhausted: boolean; quota: { used: number; limit: number | null }; reset: { nextReset: string | null; countdown_s: number | null }; source: { kind: string; status?: string } }
const res = await request(`${gw.url}/api/quota`);
t.equal(res.statusCode, 200);
const entries = ((await res.body.json()) as { providers: Entry[] }).providers;
const entry = (id: string) => entries.find((e) => e.id === id)!;
const chat = async (model: string) => {
  const r = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
  await r.body.text();
  return { status: r.statusCode, retryAfter: r.headers['retry-after'] };
};

for (const id of ['inf', 'nan', 'biglimit']) {
  t.test(`${id}: a figure that is not finite makes the answer invalid; the computed figures stand`, async (t) => {
    t.match(entry(id), { exhausted: false, quota: { used: 0, limit: 5_000_000 }, source: { kind: 'computed', status: 'invalid' } });
  });
}

t.test('no quota gauge is +Inf or NaN', async (t) => {
  const lines = (await gw.metrics()).split('\n').filter((l) => l.startsWith('tollgate_quota_'));
  t.ok(lines.length > 0);
  t.same(lines.filter((l) => /NaN|Inf/.test(l)), []);
});

t.test("a reset in the past, or years ahead, is not taken: the quota's own daily reset stands", async (t) => {
  const soon = entry('soon');
  t.match(soon, { exhausted: true, source: { kind: 'provider' } });
  const own = soon.reset.nextReset!;
  const ahead = Date.parse(own) - Date.now();
  t.ok(ahead > 1.5 * HOUR && ahead < 2.5 * HOUR, `a reset 2 hours ahead is taken (${own})`);
  for (const id of ['past', 'far']) {
    const e = entry(id);
    t.match(e, { exhausted: true, quota: { used: 10, limit: 5 }, source: { kind: 'provider', status: 'ok' } }, `${id}: the source's figures`);
    const next = Date.parse(e.reset.nextReset!);
    t.ok(next > Date.now() && next - Date.now() <= 24 * HOUR, `${id}: resets at the daily reset (${e.reset.nextReset})`);
    t.ok(e.reset.countdown_s! > 0);
  }
  for (const combo of ['cpast', 'cfar']) {
    const r = await chat(combo);
    const want = (Date.parse(entry(combo.slice(1)).reset.nextReset!) - Date.now()) / 1000;
    t.equal(r.status, 503);
    t.ok(Math.abs(Number(r.retryAfter) - want) <= 3, `${combo}: Retry-After ${String(r.retryAfter)} against ${want.toFixed(0)} s to the daily reset`);
  }
});

t.test('the gauges export no series for a figure that is not finite, whatever the entry holds', async (t) => {
  const metrics = new Metrics(() => ({ rows: 0, bytes: 0, oldestMs: null, up: true }), { processMetrics: false });
  const bad = { id: 'bad', quota: { used: Number.POSITIVE_INFINITY, limit: 5, unit: 'tokens', remaining: Number.NaN }, reset: { countdown_s: Number.POSITIVE_INFINITY } };
  const good = { id: 'good', quota: { used: 1, limit: 4, unit: 'tokens', remaining: 3 }, reset: { countdown_s: 60 } };
  watchQuota(metrics, { latest: [bad, good] } as unknown as QuotaService);
  const lines = (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('tollgate_quota_'));
  t.same(lines.filter((l) => l.includes('bad')), [], 'no series for the provider whose figures are not finite');
  t.same(lines.filter((l) => l.includes('good')).length, 3);
});
