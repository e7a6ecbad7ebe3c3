// An alert whose claim landed but whose owner could not be read back (the store failed that one read: a load
// balancer's 503, a blip) is sent by the next evaluation: the alert counts as fired only once its owner is known
// (src/alerts/service.ts, #fire). Before, it was remembered as fired before the read, so the failed read lost it for
// good: the row named this replica, and no channel ever received it (found by a review of several replicas).

import t from 'tap';
import { BudgetService } from '../../src/accounting/budget.js';
import { QuotaService } from '../../src/accounting/quota.js';
import { AlertService, type Notify } from '../../src/alerts/service.js';
import type { Alert } from '../../src/alerts/types.js';
import { parseConfig } from '../../src/config/load.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import type { Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { openTestStore } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-claim-read-' });
await migrate(store);
const cfg = parseConfig({
  providers: { paid: { group: 'paid', format: 'mock', price: { input: 1, output: 1 }, models: { m: { kind: 'llm' } } } },
  budgets: { daily_usd: 1 },
  alerts: { channels: { dashboard: true } },
}, {});
const now = Date.now();
await store.insert('requests', [toRow(makeRecord({
  requestId: uuidv7(now - 1000), startedAt: now - 1000, endedAt: now - 990, endpoint: 'chat.completions', provider: 'paid', providerGroup: 'paid',
  model: 'paid/m', requestedModel: 'paid/m', modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
  usage: { input: 900_000, cached: null, cacheWrite: null, output: 0, reasoning: null }, usageSource: 'reported',
  cost: { cost: 0.9, listCost: 0.9 }, latency: { kind: 'unary', totalMs: 10 }, upstreamMs: 9,
}))]);

// The store, but its first read of an alert's owner fails.
let failOwnerReads = 1;
const flaky = new Proxy(store, {
  get(target, prop, receiver) {
    if (prop === 'query') {
      return (sql: string, params?: Record<string, unknown>) => {
        if (failOwnerReads > 0 && sql.includes('SELECT claimed_by')) {
          failOwnerReads--;
          return Promise.reject(new Error('503 Service Unavailable'));
        }
        return target.query(sql, params);
      };
    }
    const v = Reflect.get(target, prop, receiver) as unknown;
    return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
  },
}) as Store;

t.test('a failed read of the owner leaves the alert to the next evaluation', async (t) => {
  const sent: Alert[] = [];
  const errors: unknown[] = [];
  const notify: Notify = { notify: (a) => void sent.push(a), test: async () => [], close: async () => undefined };
  const service = new AlertService({
    store: flaky, config: () => cfg, quota: new QuotaService(flaky, () => cfg), budget: new BudgetService(flaky, () => cfg), notify,
    events: { fired: () => undefined, delivery: () => undefined, error: (err) => void errors.push(err) },
  });
  t.teardown(() => service.close());
  await service.start(60_000);
  t.equal(failOwnerReads, 0, 'the owner read failed once');
  t.equal(errors.length, 1, 'the evaluation reported the failure');
  t.same(sent.map((a) => `${a.kind}:${a.threshold}`), [], 'nothing sent yet');
  await service.check();
  t.same(sent.map((a) => `${a.kind}:${a.threshold}`), ['daily_budget:80'], 'the next evaluation sends the 80 % alert');
  await service.check();
  t.equal(sent.length, 1, 'once');
  const [rows] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('alerts')} FINAL WHERE kind = 'daily_budget'`);
  t.equal(Number(rows!.n), 1, 'one alert row: the retried claim was the same');
});
