// A combo whose every member's provider is out of quota (computed from the record, no upstream failure at all) is a
// 503 TOLLGATE_ERR_NO_MEMBER_AVAILABLE with Retry-After: the seconds until the first member's quota resets, the later
// reset when a provider's day and month are both used up (src/pipeline/combo/attempt.ts, QuotaService.resetsAt).
// Against GET /api/quota's own figures, on the real store.

import t from 'tap';
import { request } from 'undici';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';

const mock = { ...DEMO_PROVIDER, group: 'free', models: { m: { kind: 'llm' } } };
const gw = await startApp(t, {
  providers: {
    day: { ...mock, quota: { kind: 'daily_requests', limit: 1 } },
    // its day resets at noon, its month at midnight: the two never coincide, whatever the date
    both: { ...mock, quota: { kind: 'daily_requests', limit: 1, monthly_limit: 1, reset_time: '12:00Z' } },
  },
  combos: {
    daily: { strategy: 'fallback', models: ['day/m'] },
    monthly: { strategy: 'fallback', models: ['both/m'] },
    either: { strategy: 'fallback', models: ['both/m', 'day/m'] },
  },
});

const chat = async (model: string) => {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.statusCode, retryAfter: res.headers['retry-after'], json: (await res.body.json()) as { error?: { code?: string } } };
};

interface Entry { id: string; exhausted: boolean; reset: { nextReset: string | null }; secondary?: { exhausted: boolean; nextReset: string } }
const quota = async () => ((await (await request(`${gw.url}/api/quota`)).body.json()) as { providers: Entry[] }).providers;

t.test('members out of quota only: the 503 says when the first one resets', async (t) => {
  t.equal((await chat('day/m')).status, 200);
  t.equal((await chat('both/m')).status, 200);
  await gw.flush();
  // wait for the routing snapshot to see both used up (it is recomputed at most every second)
  let entries: Entry[] = [];
  for (let i = 0; i < 50; i++) {
    entries = await quota();
    if (entries.every((e) => e.exhausted) && (await chat('daily')).status === 503) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const day = entries.find((e) => e.id === 'day')!;
  const both = entries.find((e) => e.id === 'both')!;
  t.ok(day.exhausted && both.exhausted && both.secondary?.exhausted, 'both providers used up, the second by its month too');
  const secsTo = (iso: string) => (Date.parse(iso) - Date.now()) / 1000;
  const near = (got: unknown, iso: string, what: string) => {
    const want = secsTo(iso);
    t.ok(typeof got === 'string' && Math.abs(Number(got) - want) <= 3, `${what}: Retry-After ${String(got)} against ${want.toFixed(0)} s to ${iso}`);
  };
  const daily = await chat('daily');
  t.match(daily, { status: 503, json: { error: { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' } } });
  near(daily.retryAfter, day.reset.nextReset!, 'a daily quota');
  const monthly = await chat('monthly');
  t.equal(monthly.status, 503);
  const [dayOfBoth, monthOfBoth] = [both.reset.nextReset!, both.secondary!.nextReset];
  t.not(Date.parse(dayOfBoth), Date.parse(monthOfBoth), 'its day and month reset apart');
  const later = Date.parse(dayOfBoth) > Date.parse(monthOfBoth) ? dayOfBoth : monthOfBoth;
  near(monthly.retryAfter, later, 'day and month used up: the later of the two resets');
  const either = await chat('either');
  t.equal(either.status, 503);
  const first = Date.parse(day.reset.nextReset!) < Date.parse(later) ? day.reset.nextReset! : later;
  near(either.retryAfter, first, 'two members: the first usable again');
});
