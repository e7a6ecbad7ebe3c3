// The in-process evaluator and the Prometheus alerting rules, on the same scenarios (issue 6): quota and budget
// gauges at chosen values are served to a real Prometheus (Debian's package, on loopback) that evaluates
// alerting-rules/tollgate.rules.yml, and the same values are given to the evaluator. For each scenario the highest
// level that fires must be the same on both sides (the rules use exclusive bands, the evaluator fires every threshold
// crossed once; the highest is what both must agree on). Scenarios over time (reset, anomaly, pattern) are covered
// by each side's own tests: promtool unit tests and test/alerts/evaluator.test.ts.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { evaluate } from '../../src/alerts/evaluator.js';
import type { BudgetState } from '../../src/accounting/budget.js';
import type { QuotaEntry } from '../../src/accounting/quota.js';
import { ALERT_KINDS, type AlertKind } from '../../src/alerts/types.js';
import { listenLoopback } from '../helpers/loopback.js';
import { startPrometheus } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/wait.js';

const RULES = fileURLToPath(new URL('../../alerting-rules/tollgate.rules.yml', import.meta.url));
const NOW = Date.now();

/** The quota scenarios: a provider each, used of 100 tokens, and the highest alert expected. */
const QUOTA: [string, number, string | null][] = [
  ['q79', 79, null], ['q80', 80, 'TollgateQuotaWarning80'], ['q89', 89.9, 'TollgateQuotaWarning80'], ['q90', 90, 'TollgateQuotaWarning90'],
  ['q99', 99.5, 'TollgateQuotaWarning90'], ['q100', 100, 'TollgateQuotaExhausted'], ['q120', 120, 'TollgateQuotaExhausted'],
];
/** The budget scenarios (daily budget $10, monthly $100): spent today, spent this month, the highest alerts. */
const BUDGET: [number, number, string[]][] = [
  [7.99, 49.99, []],
  [8, 50, ['TollgateDailyBudget80', 'TollgateMonthlyBudget50']],
  [9.99, 80, ['TollgateDailyBudget80', 'TollgateMonthlyBudget80']],
  [10, 99.99, ['TollgateDailyBudgetExceeded', 'TollgateMonthlyBudget80']],
  [12.5, 100, ['TollgateDailyBudgetExceeded', 'TollgateMonthlyBudgetExceeded']],
];

/** An evaluator alert as the rule it corresponds to. */
function ruleName(kind: AlertKind, threshold: number | null): string {
  switch (kind) {
    case 'quota_warning':
      return `TollgateQuotaWarning${threshold}`;
    case 'quota_exhausted':
      return 'TollgateQuotaExhausted';
    case 'daily_budget':
      return threshold === 100 ? 'TollgateDailyBudgetExceeded' : `TollgateDailyBudget${threshold}`;
    case 'monthly_budget':
      return threshold === 100 ? 'TollgateMonthlyBudgetExceeded' : `TollgateMonthlyBudget${threshold}`;
    default:
      return kind;
  }
}

function entry(id: string, used: number): QuotaEntry {
  return {
    id, name: id, group: 'subscription', kind: 'daily_tokens',
    quota: { used, limit: 100, unit: 'tokens', percentage: used, remaining: Math.max(0, 100 - used) },
    reset: { type: 'daily', time: '00:00Z', nextReset: new Date(NOW + 3_600_000).toISOString(), countdown_s: 3600 },
    exhausted: used >= 100, cost: { today: 0, month: 0, currency: 'USD' }, source: { kind: 'computed', computed_used: used }, connection_problem: null,
  } as QuotaEntry;
}

function budget(today: number, month: number): BudgetState {
  const w = (limit: number, spent: number, key: string) => ({
    limit, spent, percentage: Number(((spent / limit) * 100).toFixed(2)), remaining: Math.max(0, limit - spent), window: key,
    from: new Date(NOW - 3_600_000).toISOString(), resets_at: new Date(NOW + 3_600_000).toISOString(), resets_in_s: 3600,
  });
  return { timezone: 'UTC', daily: w(10, today, 'd'), monthly: { ...w(100, month, 'm'), projection: month * 2, days: 30, day_of_month: 15 }, auto_switch: { enabled: false, to: null, active: false }, at: NOW };
}

/** The highest evaluator alert per subject. */
function evaluatorHighest(quota: QuotaEntry[], b: BudgetState): Map<string, string> {
  const order = (name: string) => ['TollgateQuotaWarning80', 'TollgateQuotaWarning90', 'TollgateQuotaExhausted', 'TollgateDailyBudget80', 'TollgateDailyBudgetExceeded', 'TollgateMonthlyBudget50', 'TollgateMonthlyBudget80', 'TollgateMonthlyBudgetExceeded'].indexOf(name);
  const out = new Map<string, string>();
  const all = evaluate({ now: NOW, enabled: new Set<AlertKind>([...ALERT_KINDS]), quota, budget: b, costs: null, fired: [] });
  for (const c of all) {
    const name = ruleName(c.kind, c.threshold);
    const prev = out.get(c.subject);
    if (prev === undefined || order(name) > order(prev)) out.set(c.subject, name);
  }
  return out;
}

// What the metrics page serves now.
let page = '';
const metrics = await listenLoopback(
  t,
  async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(page);
  },
  (_err, res) => res.end(),
);

function render(today: number, month: number): string {
  const lines = ['# TYPE tollgate_quota_used_ratio gauge'];
  for (const [id, used] of QUOTA) lines.push(`tollgate_quota_used_ratio{provider="${id}"} ${used / 100}`);
  lines.push('# TYPE tollgate_quota_remaining gauge');
  for (const [id, used] of QUOTA) lines.push(`tollgate_quota_remaining{provider="${id}",unit="tokens"} ${Math.max(0, 100 - used)}`);
  lines.push('# TYPE tollgate_quota_reset_seconds gauge');
  for (const [id] of QUOTA) lines.push(`tollgate_quota_reset_seconds{provider="${id}"} 3600`);
  lines.push('# TYPE tollgate_spend_usd gauge', `tollgate_spend_usd{window="today"} ${today}`, `tollgate_spend_usd{window="month"} ${month}`);
  lines.push('# TYPE tollgate_budget_limit_usd gauge', 'tollgate_budget_limit_usd{window="daily"} 10', 'tollgate_budget_limit_usd{window="monthly"} 100');
  return `${lines.join('\n')}\n`;
}

page = render(0, 0);
const prom = await startPrometheus(t, { targets: [`127.0.0.1:${metrics.port}`], ruleFiles: [RULES] });

/** The highest firing rule per subject (provider, or daily/monthly for the budgets). */
async function prometheusHighest(): Promise<Map<string, string>> {
  const firing = await prom.firing();
  const out = new Map<string, string>();
  for (const a of firing) {
    const subject = a.labels.provider ?? (a.alertname.includes('Daily') ? 'daily' : a.alertname.includes('Monthly') ? 'monthly' : '');
    if (subject) out.set(subject, a.alertname); // bands: at most one per subject
  }
  return out;
}

t.test('quota thresholds: the evaluator and the rules agree', async (t) => {
  page = render(0, 0);
  const ev = evaluatorHighest(QUOTA.map(([id, used]) => entry(id, used)), budget(0, 0));
  const want = new Map(QUOTA.filter(([, , name]) => name !== null).map(([id, , name]) => [id, name!]));
  t.same(Object.fromEntries(ev), Object.fromEntries(want), 'the evaluator, as the table says');
  let got = new Map<string, string>();
  await waitFor(async () => {
    got = await prometheusHighest();
    return [...want].every(([id, name]) => got.get(id) === name);
  }, 20_000).catch(() => undefined);
  for (const [id, , name] of QUOTA) t.equal(got.get(id) ?? null, name, `${id}: Prometheus fires ${name ?? 'nothing'}`);
});

for (const [today, month, names] of BUDGET) {
  t.test(`budgets: $${today} of $10 today, $${month} of $100 this month`, async (t) => {
    page = render(today, month);
    const ev = evaluatorHighest([], budget(today, month));
    t.same([...ev.values()].sort(), [...names].sort(), 'the evaluator');
    // Prometheus has scraped these numbers, then evaluated the rules on them at least twice.
    await waitFor(async () => {
      const r = await prom.api<{ result: { value: [number, string] }[] }>('query', { query: 'tollgate_spend_usd{window="month"}' });
      return Number(r.result[0]?.value[1]) === month;
    }, 20_000);
    await new Promise((r) => setTimeout(r, 2500));
    const m = await prometheusHighest();
    t.equal([m.get('daily'), m.get('monthly')].filter(Boolean).sort().join(','), names.slice().sort().join(','), 'Prometheus, on the same numbers');
  });
}
