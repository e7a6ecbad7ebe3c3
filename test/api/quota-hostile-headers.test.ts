// GET /api/quota after hostile upstream headers, end to end: fake OpenAI upstreams on real sockets answer a 429 with a
// Retry-After of 3,170 years, 400 digits, a date in 2099, and rate-limit headers whose resets are 999999999 days or a
// 13-digit count away. /api/quota answers 200 with sane values every time, each cooldown ends within max_s (the
// combo's 503 Retry-After and the gauge too), and no metric sample is +Inf or NaN. Then the views alone: an instant no
// Date holds is rendered null, not a 500.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { metricValue } from '../helpers/prom.js';
import { cooldownView, reportedView } from '../../src/api/quota.js';
import type { Router } from '../../src/routing/router.js';

const MAX_S = 60;
/** Retry-After values a 429 carries, one provider (and one single-member combo) each. */
const HOSTILE: Record<string, Record<string, string>> = {
  years: { 'retry-after': '99999999999' },
  thirteen: { 'retry-after': '9000000000000' },
  digits: { 'retry-after': '9'.repeat(400) },
  date2099: { 'retry-after': 'Wed, 21 Oct 2099 07:28:00 GMT' },
  msinf: { 'retry-after-ms': '1e400' },
};

const [limited, reporting] = await Promise.all([startFakeOpenAI(t), startFakeOpenAI(t)]);
reporting.setResponseHeaders({
  'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '5', 'x-ratelimit-reset-requests': '999999999d',
  'x-ratelimit-limit-tokens': '9'.repeat(400), 'x-ratelimit-remaining-tokens': '7', 'x-ratelimit-reset-tokens': '9999999999999',
  'anthropic-ratelimit-output-tokens-limit': '1000', 'anthropic-ratelimit-output-tokens-remaining': '10',
  'anthropic-ratelimit-output-tokens-reset': '+200000-01-01T00:00:00Z',
});
const providers: Record<string, unknown> = { rl: fakeProvider(reporting.baseUrl, { name: 'Reporting' }) };
const combos: Record<string, unknown> = {};
for (const id of Object.keys(HOSTILE)) {
  providers[id] = fakeProvider(limited.baseUrl, { name: `Limited ${id}` });
  combos[`solo-${id}`] = { strategy: 'fallback', models: [`${id}/gpt-4o`] };
}
const gw = await startApp(t, { providers, combos, routing: { cooldown: { initial_s: 5, max_s: MAX_S, multiplier: 2 } } });

async function chat(model: string): Promise<{ status: number; retryAfter: string | undefined; code: string | undefined }> {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = (await res.body.json()) as { error?: { code?: string } };
  const ra = res.headers['retry-after'];
  return { status: res.statusCode, retryAfter: Array.isArray(ra) ? ra[0] : ra, code: body.error?.code };
}

interface Cooldown { cooling: boolean; until: string | null; remaining_s: number; connections: { until: string | null; remaining_s: number; reason: string | null }[] }
interface Reported { retry_after_s: number | null; observed_at: string | null; limits: Record<string, { limit: number | null; remaining: number | null; percentage: number | null; reset_at: string | null; reset_in_s: number | null }> }
async function quota(): Promise<{ status: number; byId: (id: string) => { cooldown: Cooldown; reported: Reported[] } }> {
  const res = await request(`${gw.url}/api/quota`);
  const body = (await res.body.json()) as { providers?: { id: string; cooldown: Cooldown; reported: Reported[] }[] };
  return { status: res.statusCode, byId: (id) => body.providers!.find((p) => p.id === id)! };
}

/** Samples whose value is not a finite number (a histogram's le="+Inf" label is not a value). */
const notFinite = (text: string) => text.split('\n').filter((l) => / (?:[+-]Inf|NaN)$/.test(l));

t.test("a 429's hostile Retry-After: the cooldown ends within max_s, and /api/quota answers 200", async (t) => {
  for (const [id, headers] of Object.entries(HOSTILE)) {
    limited.next({ kind: 'error', status: 429, body: { error: { message: 'slow down', type: 'rate_limit_exceeded' } }, headers });
    const first = await chat(`solo-${id}`);
    t.equal(first.status, 429, `${id}: the only member's 429 is relayed as it came`);
    const t0 = Date.now();
    const second = await chat(`solo-${id}`);
    t.same([second.status, second.code], [503, 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE'], `${id}: the member is cooling`);
    const wait = Number(second.retryAfter);
    const expected = id === 'digits' || id === 'msinf' ? 5 : MAX_S; // not finite: ignored, the first exponential wait
    t.ok(wait >= expected - 2 && wait <= expected, `${id}: the 503's Retry-After is ${wait}, expected about ${expected}`);

    const q = await quota();
    t.equal(q.status, 200, `${id}: /api/quota answers`);
    const cd = q.byId(id).cooldown;
    t.equal(cd.cooling, true);
    const until = Date.parse(cd.until!);
    t.ok(until > t0 && until <= t0 + MAX_S * 1000, `${id}: until ${cd.until} within max_s`);
    t.ok(cd.remaining_s > 0 && cd.remaining_s <= expected, `${id}: remaining_s ${cd.remaining_s}`);
    t.equal(cd.connections[0]!.reason, '429');
    t.equal(q.byId(id).reported[0]?.retry_after_s ?? null, null, `${id}: a retry-after beyond a year is not shown as reported`);

    const gauge = metricValue(await gw.metrics(), 'tollgate_provider_cooldown_seconds', { provider: id });
    t.ok(gauge > 0 && gauge <= expected, `${id}: the cooldown gauge reads ${gauge}`);
  }
  t.same(notFinite(await gw.metrics()), [], 'no metric sample is +Inf or NaN');
});

t.test('rate-limit resets beyond a year and a 400-digit limit: reported as not said, /api/quota answers 200', async (t) => {
  t.equal((await chat('rl/gpt-4o')).status, 200);
  const q = await quota();
  t.equal(q.status, 200);
  const [r] = q.byId('rl').reported;
  t.ok(r!.observed_at !== null && Math.abs(Date.parse(r!.observed_at) - Date.now()) < 60_000);
  t.same(r!.limits.requests, { limit: 100, remaining: 5, percentage: 95, reset_at: null, reset_in_s: null }, 'x-ratelimit-reset-requests: 999999999d');
  t.same(r!.limits.tokens, { limit: null, remaining: 7, percentage: null, reset_at: null, reset_in_s: null }, '400-digit limit, 13-digit reset');
  t.same(r!.limits.output_tokens, { limit: 1000, remaining: 10, percentage: 99, reset_at: null, reset_in_s: null }, 'RFC 3339 in year 200000');

  const text = await gw.metrics();
  t.same(notFinite(text), [], 'no metric sample is +Inf or NaN');
  t.equal(metricValue(text, 'tollgate_provider_reported_used_ratio', { provider: 'rl', resource: 'requests' }), 0.95);
  t.notMatch(text, /tollgate_provider_reported_reset_seconds\{provider="rl"/, 'no reset series');

  reporting.setResponseHeaders({});
  t.equal((await chat('rl/gpt-4o')).status, 200);
  t.equal((await quota()).status, 200, 'still 200 after a later answer without the headers');
});

t.test('the views render an instant no Date holds as null instead of throwing', async (t) => {
  const now = Date.UTC(2026, 10, 26);
  const view = reportedView({
    provider: 'p', connection: 'default', source: 'headers', observedAt: 9e15, retryUntil: null,
    limits: { requests: { limit: 10, remaining: 1, resetAt: 8.64e15 + 1 } },
  }, now);
  t.equal(view.observed_at, null);
  t.match(view.limits, { requests: { limit: 10, remaining: 1, reset_at: null } });
  const state = { failures: 1, until: 1e300, reason: '429' };
  const router = { provider: () => ({ providerId: 'p', cooling: true, until: state.until, connections: [{ name: 'default', state }] }) } as unknown as Router;
  const cd = cooldownView(router, 'p', now);
  t.equal(cd.until, null);
  t.equal(cd.connections[0]!.until, null);
});
