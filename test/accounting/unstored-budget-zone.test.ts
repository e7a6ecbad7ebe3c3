// The quota and the budget share one list of the calls not stored yet (src/app.ts). The quota's read forgot the calls
// older than its own earliest window (at most the UTC month), which a budget in a zone east of UTC still counts in its
// local day and month: on the 1st of a month, a call made after local midnight vanished from the budget's spend (its
// alert and the auto-switch) until its row landed, for as long as an outage kept it unwritten.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { QuotaService } from '../../src/accounting/quota.js';
import { BudgetService } from '../../src/accounting/budget.js';
import { UnstoredCalls } from '../../src/accounting/unstored.js';
import { parseConfig } from '../../src/config/load.js';

const NOW = Date.UTC(2026, 2, 1, 0, 30); // 2026-03-01 06:00 in Kolkata
const provider = { ...DEMO_PROVIDER, group: 'paid', models: { m: { kind: 'llm' } } };
const gw = await startApp(t, { providers: { p: provider } });
const store = gw.app.tollgate.store;

t.test("the quota's read does not forget a call the budget's local month still counts", async (t) => {
  const cfg = parseConfig({ providers: { p: provider }, storage: { data_dir: '/tmp/unused' }, budgets: { daily_usd: 1, monthly_usd: 10, timezone: 'Asia/Kolkata' } }, {});
  const unstored = new UnstoredCalls();
  const quota = new QuotaService(store, () => cfg, { now: () => NOW, unstored });
  const budget = new BudgetService(store, () => cfg, { now: () => NOW, unstored });
  const at = Date.UTC(2026, 1, 28, 20); // 2026-03-01 01:30 in Kolkata, still February in UTC
  budget.published(makeRecord({
    kind: 'request', requestId: uuidv7(at), startedAt: at, endedAt: at + 1000, endpoint: 'chat.completions', provider: 'p', providerGroup: 'paid',
    model: 'p/m', requestedModel: 'p/m', modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 90, cached: null, cacheWrite: null, output: 10, reasoning: null }, usageSource: 'reported', cost: { cost: 0.9, listCost: 0.9 },
    latency: { kind: 'unary', totalMs: 1000 }, upstreamMs: 900,
  }));
  let s = await budget.refresh();
  t.match(s, { daily: { spent: 0.9 }, monthly: { spent: 0.9 } }, 'counted before the quota reads');
  const entries = await quota.entries();
  t.ok(Array.isArray(entries), 'the quota read');
  s = await budget.refresh();
  t.match(s, { daily: { spent: 0.9 }, monthly: { spent: 0.9 } }, 'and after: its row is still not stored');
});
