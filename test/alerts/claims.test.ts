// Two replicas on one store fire the same alert: it is delivered once (docs/scaling.md). Each replica is an
// AlertService of its own (its own instance id, its own memory of what it fired) over the same ClickHouse; both see
// the daily budget crossed and a rolling quota at 85 %, and both try to fire. The claim (the alert row inserted with
// the alert id as its deduplication token, then read back) lets exactly one send each alert; the other remembers it
// as fired.

import t from 'tap';
import { BudgetService } from '../../src/accounting/budget.js';
import { AlertService, type Notify } from '../../src/alerts/service.js';
import type { Alert } from '../../src/alerts/types.js';
import { parseConfig } from '../../src/config/load.js';
import { QuotaService } from '../../src/accounting/quota.js';
import { openTestStore } from '../helpers/store-paths.js';
import { migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';

const store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-claims-' });
await migrate(store);

const RESET_AT = Math.ceil((Date.now() + 90_000) / 60_000) * 60_000;
const RESET_TIME = `${new Date(RESET_AT).toISOString().slice(11, 16)}Z`;
const cfg = parseConfig({
  providers: {
    paid: { group: 'paid', format: 'mock', price: { input: 1, output: 1 }, models: { m: { kind: 'llm' } } },
    // A rolling quota (its alerts are once per window length, not per calendar period), 85 % used.
    sub: { group: 'subscription', format: 'mock', quota: { kind: 'rolling_tokens', limit: 1000, window: '5h' }, models: { m: { kind: 'llm' } } },
    // The same, used only by the rolling case below (its usage is inserted there).
    sub2: { group: 'subscription', format: 'mock', quota: { kind: 'rolling_tokens', limit: 1000, window: '5h' }, models: { m: { kind: 'llm' } } },
    // A daily quota that resets at the first whole minute at least 90 s from now (the reset case below).
    sub3: { group: 'subscription', format: 'mock', quota: { kind: 'daily_tokens', limit: 1000, reset_time: RESET_TIME }, models: { m: { kind: 'llm' } } },
  },
  budgets: { daily_usd: 1 },
  alerts: { channels: { dashboard: true } },
}, {});

const now = Date.now();
/** One successful request of `input` tokens on `provider`'s model `m`, `ago` ms ago, costing `cost`. */
const use = (provider: string, group: 'paid' | 'subscription', input: number, cost: number, ago: number) => store.insert('requests', [toRow(makeRecord({
  requestId: uuidv7(now - ago), startedAt: now - ago, endedAt: now - ago + 10, endpoint: 'chat.completions', provider, providerGroup: group,
  model: `${provider}/m`, requestedModel: `${provider}/m`, modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
  usage: { input, cached: null, cacheWrite: null, output: 0, reasoning: null }, usageSource: 'reported',
  cost: { cost, listCost: cost }, latency: { kind: 'unary', totalMs: 10 }, upstreamMs: 9,
}))]);
await use('paid', 'paid', 1000, 1.25, 1000);

/** `tokens` (850 unless said) of the quota's 1,000 used on `provider`, 2 s ago. */
const useSubscription = (provider: string, tokens = 850) => use(provider, 'subscription', tokens, 0, 2000);
await useSubscription('sub');

const sent: { replica: string; alert: Alert }[] = [];
/**
 * A replica; `clock` gives its evaluator a clock of its own (its quota snapshot is then never cached), and with
 * `quotaToo` its quota the same clock.
 */
function replica(name: string, clock?: () => number, quotaToo = false): AlertService {
  const notify: Notify = { notify: (alert) => void sent.push({ replica: name, alert }), test: async () => [], close: async () => undefined };
  const service = new AlertService({
    store, config: () => cfg, quota: new QuotaService(store, () => cfg, clock ? { cacheMs: 0, ...(quotaToo ? { now: clock } : {}) } : {}), budget: new BudgetService(store, () => cfg), notify,
    events: { fired: () => undefined, delivery: () => undefined, error: (err) => t.error(err) },
  }, clock ? { now: clock } : {});
  t.teardown(() => service.close());
  return service;
}

t.test('the same alerts from two replicas at once: each delivered exactly once', async (t) => {
  const a = replica('a');
  const b = replica('b');
  await Promise.all([a.start(60_000), b.start(60_000)]);
  const ids = sent.map((s) => `${s.alert.kind}:${s.alert.threshold}`).sort();
  t.same(ids, ['daily_budget:100', 'daily_budget:80', 'quota_warning:80'], 'the budget\'s 80 % and 100 % alerts and the rolling quota\'s 80 %, once each');
  t.equal(new Set(sent.map((s) => s.alert.id)).size, sent.length, 'no alert id sent twice');
  const [rows] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('alerts')} FINAL`);
  t.equal(Number(rows!.n), 3, 'one row per alert');
  const owners = await store.query<{ claimed_by: string }>(`SELECT DISTINCT claimed_by FROM ${store.t('alerts')} FINAL`);
  t.ok(owners.every((o) => o.claimed_by !== ''), 'each row names the replica that owns it');

  // A third replica (a restart elsewhere) checking later fires nothing: the rows say these alerts were fired.
  await replica('c').start(60_000);
  t.equal(sent.length, 3, 'nothing more sent');
});

t.test('a rolling quota\'s alert fired by one replica in one bucket of the clock is not fired again by another in the next', async (t) => {
  // Both replicas run before the crossing; the first sees it 1 s before a 5 h bucket of the clock ends, the second
  // 1 s after (its own memory holds nothing of the first's alert, and its bucket names another alert).
  const FIVE_H = 5 * 3_600_000;
  const edge = Math.floor(Date.now() / FIVE_H) * FIVE_H;
  const x = replica('x', () => edge - 1000);
  const y = replica('y', () => edge + 1000);
  await Promise.all([x.start(60_000), y.start(60_000)]);
  const ofSub2 = () => sent.filter((s) => s.alert.subject === 'sub2');
  t.equal(ofSub2().length, 0, 'nothing before the crossing');
  await useSubscription('sub2');
  await x.check();
  t.same(ofSub2().map((s) => `${s.replica}:${s.alert.kind}:${s.alert.threshold}`), ['x:quota_warning:80'], 'the first replica fires it');
  await y.check();
  t.equal(ofSub2().length, 1, 'the second, in the next bucket, does not (it reads what the other fired)');
  const [rows] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('alerts')} FINAL WHERE subject = 'sub2'`);
  t.equal(Number(rows!.n), 1, 'one row');
});

t.test('a quota\'s reset after a warning one replica did not see: announced once', async (t) => {
  // Both see the quota at 85 % (the 80 % warning, sent by one, remembered by both); only the first looks again at
  // 95 % (the 90 % warning); then the quota resets and both look: each names the reset by the last warning it knows.
  let clock = Date.now();
  const p = replica('p', () => clock, true);
  const q = replica('q', () => clock, true);
  await Promise.all([p.start(60_000), q.start(60_000)]);
  const ofSub3 = () => sent.filter((s) => s.alert.subject === 'sub3').map((s) => `${s.alert.kind}:${s.alert.threshold ?? ''}`);
  await useSubscription('sub3');
  await p.check();
  await q.check();
  t.same(ofSub3(), ['quota_warning:80'], 'the 80 % warning, once');
  await useSubscription('sub3', 100);
  clock += 1000;
  await p.check();
  t.same(ofSub3(), ['quota_warning:80', 'quota_warning:90'], 'the 90 % warning, seen by the first replica only');
  clock = RESET_AT + 1000;
  await p.check();
  await q.check();
  t.same(ofSub3(), ['quota_warning:80', 'quota_warning:90', 'quota_reset:'], 'the reset, announced once');
});
