// An alert evaluation under load (src/alerts/service.ts) reads the store once: the quota's read (src/accounting/quota.ts)
// sums every provider's cost today and this month, the budget's day and month in UTC, and the budget takes them
// (SharedSpend) instead of reading for itself; that read takes whole days from the daily rollup alone. Checked on a
// running gateway: the reads an evaluation makes, the tables they name, the figures against the rows.

import t, { type Test } from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { countReads } from '../helpers/store-reads.js';
import { BILLED_KINDS } from '../../src/ledger/record.js';

const gw = await startApp(t, {
  providers: { demo: { ...DEMO_PROVIDER, quota: { kind: 'daily_tokens', limit: 1_000_000, reset_time: '00:00Z' } } },
  budgets: { daily_usd: 1000, monthly_usd: 10_000 },
});
const { store, alerting } = gw.app.tollgate;
// The evaluations counted are the test's own: a record's poke (200 ms to 1 s after it) would otherwise run one during
// a slow flush on a loaded machine and take the new rows first, leaving the counted evaluation nothing to read (seen
// in a CI run beside other work: 0 reads for 1). Pokes firing alerts are tested in test/integration/alerts.test.ts.
alerting.alerts.poke = () => {};

async function requests(t: Test, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: `hello ${i}` }] }),
    });
    t.equal(res.status, 200, 'served');
    await res.arrayBuffer();
  }
  await gw.flush();
}

const storedSpend = async (): Promise<number> => Number((await store.query<{ c: string }>(
  `SELECT toString(sum(cost)) AS c FROM ${store.t('requests')} FINAL WHERE kind IN {k:Array(String)}`, { k: BILLED_KINDS },
))[0]!.c);

t.test('rows stored since the last look: one read, and the budget spends what the rows say', async (t) => {
  await requests(t, 3);
  await alerting.alerts.check(); // the first evaluation also reads the cost history, once a day
  for (const n of [2, 4]) {
    await requests(t, n);
    // Counted from here (no poke runs: above).
    const reads = countReads(t, store);
    const asked: string[] = [];
    const query = store.query;
    store.query = ((sql: string, params?: Record<string, unknown>) => (asked.push(sql), query.call(store, sql, params))) as typeof store.query;
    try {
      await alerting.alerts.check();
    } finally {
      store.query = query;
    }
    t.equal(reads.count, 1, `${n} more requests stored: the evaluation made one read`);
    // The quota's windows (a day's tokens, the month's cost) end now, where the read does: whole days, today's
    // included, from the daily rollup alone, no hourly branch.
    t.same(asked.map((sql) => ['requests', 'usage_hourly', 'usage_daily'].filter((x) => sql.includes(store.t(x)))), [['usage_daily']], 'that read: the daily rollup alone');
    const latest = alerting.budget.latest!;
    const rows = await storedSpend();
    t.ok(rows > 0, 'the requests cost something');
    t.equal(latest.daily.spent, Number(rows.toFixed(12)), "the budget's day: the stored rows' cost");
    t.equal(latest.monthly.spent, Number(rows.toFixed(12)), 'and its month');
    const own = await alerting.budget.refresh();
    t.same([own.daily.spent, own.monthly.spent], [latest.daily.spent, latest.monthly.spent], 'as its own read gives');
    const [tokens] = await store.query<{ n: string }>(
      `SELECT sum(total_tokens) AS n FROM ${store.t('requests')} FINAL WHERE provider = 'demo' AND kind IN {k:Array(String)}`, { k: BILLED_KINDS },
    );
    const quota = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; quota: { used: number } }[] };
    t.equal(quota.providers.find((p) => p.id === 'demo')!.quota.used, Number(tokens!.n), "the day's tokens: the stored rows'");
  }
});
