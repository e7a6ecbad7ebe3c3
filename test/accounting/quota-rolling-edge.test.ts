// A rolling window's edge to the millisecond (src/config/quota-kinds.ts planQuota): the window is (now - window, now],
// so a call at t counts at t + window - 1 ms and not at t + window, the instant the reset names. The same in the
// stored figures (the store's read), in the calls not stored yet (added in memory) and in GET /api/quota.

import t from 'tap';
import Fastify from 'fastify';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type UsageRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { QuotaService } from '../../src/accounting/quota.js';
import { quotaRoutes } from '../../src/api/quota.js';
import type { Teardown } from '../helpers/tmp.js';

const H = 3_600_000;
// Wednesday 2026-03-04 09:17:23.456Z (not on an hour: the window's first hour is a partial one) and 12:17:23.456Z,
// both after this week's Monday.
const STORED_AT = Date.UTC(2026, 2, 4, 9, 17, 23, 456);
const UNSTORED_AT = STORED_AT + 3 * H;
const WINDOW = 5 * H;

const provider = (quota: Record<string, unknown>) => ({ ...DEMO_PROVIDER, group: 'subscription', quota, models: { m: { kind: 'llm' } } });
const gw = await startApp(t, {
  providers: {
    roll: provider({ kind: 'rolling_tokens', limit: 500, window: '5h' }),
    hours: provider({ kind: 'rolling_hours', limit: 5, window: '5h' }),
  },
});
const store = gw.app.tollgate.store;

let seq = 0;
function record(provider: string, at: number): UsageRecord {
  return makeRecord({
    kind: 'request', requestId: uuidv7(at + seq++), startedAt: at, endedAt: at + 0.5 * H, endpoint: 'chat.completions', provider,
    providerGroup: 'paid', model: `${provider}/m`, requestedModel: 'x', modelKnown: true, apiKeyName: 'k', stream: false,
    status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 90, cached: null, cacheWrite: null, output: 10, reasoning: null },
    usageSource: 'reported', cost: { cost: 0, listCost: 0 }, latency: { kind: 'unary', totalMs: 0.5 * H }, upstreamMs: 900,
  });
}

await store.insert('requests', [toRow(record('roll', STORED_AT)), toRow(record('hours', STORED_AT))]);

type Entry = { quota: { used: number }; reset: { nextReset: string | null; countdown_s: number | null } };

/** GET /api/quota at `now`, from a quota service with that clock that was handed `published` (calls not stored yet). */
async function quotaAt(t: Teardown, now: number, published: readonly UsageRecord[] = []): Promise<Record<string, Entry>> {
  const quota = new QuotaService(store, () => gw.holder.current, { now: () => now });
  for (const r of published) quota.published(r);
  const api = Fastify();
  t.teardown(() => api.close());
  await api.register(quotaRoutes, { config: gw.holder, router: gw.app.tollgate.router, quota, now: () => now });
  const res = await api.inject({ method: 'GET', url: '/api/quota' });
  const body = res.json() as { providers: (Entry & { id: string })[] };
  return Object.fromEntries(body.providers.map((p) => [p.id, p]));
}

const iso = (ms: number) => new Date(ms).toISOString();

t.test('a stored call counts until 1 ms before its expiry, and not at the instant the reset names', async (t) => {
  const before = await quotaAt(t, STORED_AT + WINDOW - 1);
  t.same([before.roll!.quota.used, before.roll!.reset.nextReset, before.roll!.reset.countdown_s], [100, iso(STORED_AT + WINDOW), 1], 'rolling_tokens: counted, resets at t + 5h');
  t.same([before.hours!.quota.used, before.hours!.reset.nextReset], [0.5, iso(STORED_AT + WINDOW)], 'rolling_hours: counted, resets at t + 5h');
  const at = await quotaAt(t, STORED_AT + WINDOW);
  t.same([at.roll!.quota.used, at.roll!.reset.nextReset], [0, null], 'rolling_tokens: gone at t + 5h, nothing left to reset');
  t.same([at.hours!.quota.used, at.hours!.reset.nextReset], [0, '2026-03-09T00:00:00.000Z'], 'rolling_hours: gone at t + 5h; the weekly refresh is next');
});

t.test('a call not stored yet, added in memory, leaves the window at the same instant', async (t) => {
  const unstored = [record('roll', UNSTORED_AT), record('hours', UNSTORED_AT)];
  const before = await quotaAt(t, UNSTORED_AT + WINDOW - 1, unstored);
  t.same([before.roll!.quota.used, before.roll!.reset.nextReset], [100, iso(UNSTORED_AT + WINDOW)], 'rolling_tokens: counted, resets at t + 5h');
  t.same([before.hours!.quota.used, before.hours!.reset.nextReset], [0.5, iso(UNSTORED_AT + WINDOW)], 'rolling_hours: counted, resets at t + 5h');
  const at = await quotaAt(t, UNSTORED_AT + WINDOW, unstored);
  t.same([at.roll!.quota.used, at.roll!.reset.nextReset], [0, null], 'rolling_tokens: gone at t + 5h');
  t.same([at.hours!.quota.used, at.hours!.reset.nextReset], [0, '2026-03-09T00:00:00.000Z'], 'rolling_hours: gone at t + 5h');
});
