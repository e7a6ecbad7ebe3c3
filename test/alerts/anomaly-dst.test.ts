// cost_anomaly compares today with the average of the previous 7 local days with usage (docs/alerts.md). Those days
// were read from 7 x 24 h before today's start: after a spring-forward day (23 hours) that reached an hour into an
// 8th day, which counted as a day with usage and lowered the average, so a normal day fired a false anomaly.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { QuotaService } from '../../src/accounting/quota.js';
import { BudgetService } from '../../src/accounting/budget.js';
import { AlertService, type Notify } from '../../src/alerts/service.js';
import { parseConfig } from '../../src/config/load.js';
import { dayBounds } from '../../src/core/tz.js';
import type { Alert } from '../../src/alerts/types.js';

const H = 3_600_000;
const TZ = 'America/New_York'; // DST began on 2026-03-08: a 23-hour day
const NOW = Date.UTC(2026, 2, 10, 20); // 2026-03-10 16:00 EDT
const provider = { ...DEMO_PROVIDER, group: 'paid', models: { m: { kind: 'llm' } } };
const gw = await startApp(t, { providers: { p: provider } });
const store = gw.app.tollgate.store;

let seq = 0;
const row = (at: number, cost: number) => toRow(makeRecord({
  kind: 'request', requestId: uuidv7(at + seq++), startedAt: at, endedAt: at + 1000, endpoint: 'chat.completions', provider: 'p', providerGroup: 'paid',
  model: 'p/m', requestedModel: 'p/m', modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
  usage: { input: 90, cached: null, cacheWrite: null, output: 10, reasoning: null }, usageSource: 'reported', cost: { cost, listCost: cost },
  latency: { kind: 'unary', totalMs: 1000 }, upstreamMs: 900,
}));

t.test('the 7 previous local days, a spring-forward day among them: no false anomaly', async (t) => {
  // $1 a local day, spread over its hours, from 03-01 to 03-09; today $1.95 so far (under 2 x the $1.00 average).
  const rows = [];
  for (let d = 1; d <= 9; d++) {
    const { from, to } = dayBounds(Date.UTC(2026, 2, d, 17), TZ);
    const n = Math.round((to - from) / H);
    for (let at = from; at < to; at += H) rows.push(row(at + 300_000, 1 / n));
  }
  const today = dayBounds(NOW, TZ);
  rows.push(row(today.from + H, 1.95));
  await store.insert('requests', rows, 'anomaly-dst');
  const cfg = parseConfig({ providers: { p: provider }, storage: { data_dir: '/tmp/unused' }, budgets: { timezone: TZ } }, {});
  const sent: Alert[] = [];
  const notify: Notify = { notify: (a) => void sent.push(a), test: async () => [], close: async () => undefined };
  /** One evaluation at NOW by a fresh service (its first, at start). */
  const evaluate = async () => {
    const svc = new AlertService({
      store, config: () => cfg, quota: new QuotaService(store, () => cfg, { now: () => NOW }), budget: new BudgetService(store, () => cfg, { now: () => NOW }), notify,
      events: { fired: () => undefined, delivery: () => undefined, error: (e) => t.fail(String(e)) },
    }, { now: () => NOW });
    t.teardown(() => svc.close());
    await svc.start(600_000);
  };
  await evaluate();
  t.same(sent.filter((a) => a.kind === 'cost_anomaly').map((a) => a.message), [], 'no cost_anomaly: $1.95 is under twice the $1.00 average');

  // The same evaluation with today at $2.05: over twice the average, it fires, naming 7 days.
  await store.insert('requests', [row(today.from + 2 * H, 0.1)], 'anomaly-dst-2');
  await evaluate();
  const fired = sent.filter((a) => a.kind === 'cost_anomaly');
  t.equal(fired.length, 1, 'fires over twice the average');
  t.match(fired[0]?.message, /over the previous 7 days/);
});
