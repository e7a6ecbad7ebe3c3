// The scrape-time gauges (src/accounting/gauges.ts) read the latest snapshots only: a /metrics scrape makes no
// ClickHouse query, and the quota and spend gauges say what the quota engine's and the budget's latest states say.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { metricValue } from '../helpers/prom.js';
import { countReads } from '../helpers/store-reads.js';

const gw = await startApp(t, {
  providers: { demo: { ...DEMO_PROVIDER, quota: { kind: 'daily_tokens', limit: 10_000 } } },
  budgets: { daily_usd: 5, monthly_usd: 50 },
});
const { store, alerting } = gw.app.tollgate;

t.test('a scrape queries nothing; the gauges show the latest snapshots', async (t) => {
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hello there' }] }),
    });
    t.equal(res.status, 200);
  }
  await gw.flush();
  // The snapshots, as the alert evaluation and /api/quota keep them.
  const budget = await alerting.budget.refresh();
  // /api/quota serves a snapshot up to a second old: past it, the requests are in.
  await new Promise((r) => setTimeout(r, 1100));
  const quota = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; quota: { used: number; limit: number } }[] };
  const demo = quota.providers.find((p) => p.id === 'demo')!;
  t.ok(demo.quota.used > 0 && budget.daily.spent > 0, 'the requests are counted');

  const queries = countReads(t, store);
  let text = '';
  for (let i = 0; i < 5; i++) text = await gw.metrics();
  t.equal(queries.count, 0, 'five scrapes, no query');
  t.equal(metricValue(text, 'tollgate_spend_usd', { window: 'today' }), budget.daily.spent, "the budget's latest spend");
  t.equal(metricValue(text, 'tollgate_quota_used_ratio', { provider: 'demo' }), demo.quota.used / demo.quota.limit, "the quota engine's latest ratio");
});
