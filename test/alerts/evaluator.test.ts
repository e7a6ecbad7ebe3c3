// The alert rules, pure: each kind fires at its thresholds, once per window, with the notification text the spec
// asks for; rolling quotas fire once per rolling window; an anomaly needs 3 days of history; the exhaustion
// pattern needs 3 separate exhausted periods within 7 days.

import t from 'tap';
import { evaluate, duration, isoWeek, keyOf, type EvaluationInput, type FiredAlert, type Candidate } from '../../src/alerts/evaluator.js';
import type { BudgetState } from '../../src/accounting/budget.js';
import type { QuotaEntry } from '../../src/accounting/quota.js';
import { ALERT_KINDS, type AlertKind } from '../../src/alerts/types.js';
import { parseConfig } from '../../src/config/load.js';
import { alertId } from '../../src/alerts/service.js';

const NOW = Date.UTC(2026, 10, 21, 12); // Saturday 2026-11-21 12:00Z
const ALL = new Set<AlertKind>([...ALERT_KINDS, 'auto_switch']);

function quota(id: string, used: number, limit: number, o: Partial<QuotaEntry> = {}): QuotaEntry {
  const pct = Number(((used / limit) * 100).toFixed(2));
  return {
    id, name: `Provider ${id}`, group: 'subscription', kind: 'daily_tokens',
    quota: { used, limit, unit: 'tokens', percentage: pct, remaining: Math.max(0, limit - used) },
    reset: { type: 'daily', time: '10:00+08:00', nextReset: '2026-11-22T02:00:00.000Z', countdown_s: 14 * 3600 },
    exhausted: used >= limit, cost: { today: 0, month: 0, currency: 'USD' }, source: { kind: 'computed', computed_used: used }, connection_problem: null,
    ...o,
  } as QuotaEntry;
}

function budget(daySpent: number, monthSpent: number, o: { daily?: number | null; monthly?: number | null; autoSwitch?: boolean } = {}): BudgetState {
  const dl = o.daily === undefined ? 10 : o.daily;
  const ml = o.monthly === undefined ? 100 : o.monthly;
  const pct = (s: number, l: number | null) => (l === null ? null : Number(((s / l) * 100).toFixed(2)));
  return {
    timezone: 'UTC',
    daily: { limit: dl, spent: daySpent, percentage: pct(daySpent, dl), remaining: dl === null ? null : Math.max(0, dl - daySpent), window: '2026-11-21', from: '2026-11-21T00:00:00.000Z', resets_at: '2026-11-22T00:00:00.000Z', resets_in_s: 12 * 3600 },
    monthly: { limit: ml, spent: monthSpent, percentage: pct(monthSpent, ml), remaining: ml === null ? null : Math.max(0, ml - monthSpent), window: '2026-11', from: '2026-11-01T00:00:00.000Z', resets_at: '2026-12-01T00:00:00.000Z', resets_in_s: 9.5 * 86400, projection: Number(((monthSpent / 20.5) * 30).toFixed(12)), days: 30, day_of_month: 21 },
    auto_switch: { enabled: o.autoSwitch ?? false, to: o.autoSwitch ? 'free/llama' : null, active: (o.autoSwitch ?? false) && dl !== null && daySpent >= dl },
    at: NOW,
  };
}

const input = (o: Partial<EvaluationInput>): EvaluationInput => ({ now: NOW, enabled: ALL, quota: [], budget: budget(0, 0), costs: null, fired: [], ...o });
const fired = (cs: readonly Candidate[], at = NOW): FiredAlert[] => cs.map((c, i) => ({ kind: c.kind, subject: c.subject, threshold: c.threshold, window: c.window, firedAt: at, id: `id-${i}-${c.kind}` }));
const kinds = (cs: readonly Candidate[]) => cs.map((c) => `${c.kind}:${c.subject}:${c.threshold ?? ''}`);

t.test('quota thresholds: 80 and 90 %, exhausted, each once per period, with the text the spec asks for', async (t) => {
  t.same(kinds(evaluate(input({ quota: [quota('z', 79, 100)] }))), [], 'under 80 %: nothing');
  const at80 = evaluate(input({ quota: [quota('z', 80, 100)] }));
  t.same(kinds(at80), ['quota_warning:z:80']);
  t.equal(at80[0]!.message, 'Provider z (z) has used 80% of its quota: 80 of 100 tokens, 20 tokens remaining. It resets in 14 h (2026-11-22T02:00:00.000Z).');
  t.same(kinds(evaluate(input({ quota: [quota('z', 85, 100)], fired: fired(at80) }))), [], 'the same threshold in the same period: once');
  const jump = evaluate(input({ quota: [quota('z', 120, 100)], fired: fired(at80) }));
  t.same(kinds(jump), ['quota_warning:z:90', 'quota_exhausted:z:100'], 'a jump raises every threshold crossed');
  t.match(jump[1]!.message, /has used all of its quota: 120 of 100 tokens \(120%\), 0 tokens remaining\. It resets in 14 h/);
  const nextPeriod = quota('z', 85, 100, { reset: { type: 'daily', time: '10:00+08:00', nextReset: '2026-11-23T02:00:00.000Z', countdown_s: 86400 } });
  t.same(kinds(evaluate(input({ quota: [nextPeriod], fired: fired([...at80, ...jump]) }))), ['quota_warning:z:80'], 'a new period: it may fire again');
  t.same(kinds(evaluate(input({ quota: [quota('z', 95, 100)], enabled: new Set<AlertKind>(['daily_budget']) }))), [], 'switched off');
});

t.test('rolling quotas: once per rolling window length', async (t) => {
  const rolling = (used: number) => quota('r', used, 100, { kind: 'rolling_tokens', reset: { type: 'rolling', window: '5h', nextReset: null, countdown_s: null } });
  const first = evaluate(input({ quota: [rolling(81)] }));
  t.same(kinds(first), ['quota_warning:r:80']);
  // Named by its 5 h bucket of the clock, not the instant: replicas evaluating moments apart fire the same alert.
  const FIVE_H = 5 * 3_600_000;
  t.equal(first[0]!.window, `rolling:${new Date(Math.floor(NOW / FIVE_H) * FIVE_H).toISOString()}`, 'the window-length bucket it fires in');
  const later = evaluate(input({ quota: [rolling(81)], now: NOW + 300 }));
  t.equal(alertId(later[0]!), alertId(first[0]!), 'the same alert id 300 ms later (another replica)');
  const at = (ms: number): FiredAlert[] => [{ kind: 'quota_warning', subject: 'r', threshold: 80, window: `rolling:${new Date(ms).toISOString()}`, firedAt: ms, id: 'w' }];
  t.same(kinds(evaluate(input({ quota: [rolling(82)], fired: at(NOW - 4 * 3_600_000) }))), [], 'within 5 h of the last one: the same episode');
  t.same(kinds(evaluate(input({ quota: [rolling(82)], fired: at(NOW - 5 * 3_600_000) }))), ['quota_warning:r:80'], 'a window later: again');
});

t.test('quota reset: back under 10 % after a warning, once per warning', async (t) => {
  // Warnings of one evaluation share an instant: the reset follows the highest, whatever order they are remembered in.
  const jump = fired(evaluate(input({ quota: [quota('z', 95, 100)] })), NOW - 3_600_000);
  const after = (f: FiredAlert[]) => evaluate(input({ quota: [quota('z', 5, 100)], fired: f }))[0]!.window;
  t.equal(after(jump), after([...jump].reverse()), 'the same reset in either order');
  t.equal(after(jump), jump.find((f) => f.threshold === 90)!.id, 'named by the 90 % warning');
  const warned = fired(evaluate(input({ quota: [quota('z', 92, 100)] })), NOW - 3_600_000);
  const back = evaluate(input({ quota: [quota('z', 5, 100, { reset: { type: 'daily', time: '10:00+08:00', nextReset: '2026-11-23T02:00:00.000Z', countdown_s: 86400 } })], fired: warned }));
  t.same(kinds(back), ['quota_reset:z:']);
  t.equal(back[0]!.message, 'Provider z (z) has its quota back: 5 of 100 tokens used (5%), 95 tokens remaining. Next reset in 1 d 0 h.');
  t.same(kinds(evaluate(input({ quota: [quota('z', 5, 100)], fired: [...warned, ...fired(back)] }))), [], 'once');
  t.same(kinds(evaluate(input({ quota: [quota('z', 85, 100)], fired: warned }))), [], 'still high: no reset');
  t.same(kinds(evaluate(input({ quota: [quota('z', 10, 100)], fired: warned }))), [], 'at 10 %: not refreshed yet');
  t.same(kinds(evaluate(input({ quota: [quota('z', 5, 100)], fired: warned, quotaComplete: false }))), [],
    'figures short of the calls not stored yet (inserts beside every read): no reset told from them');
});

t.test('budgets: daily 80/100 %, monthly 50/80/100 % with the projection, auto-switch', async (t) => {
  t.same(kinds(evaluate(input({ budget: budget(7.99, 49.99) }))), []);
  const some = evaluate(input({ budget: budget(8, 50) }));
  t.same(kinds(some), ['daily_budget:daily:80', 'monthly_budget:monthly:50']);
  t.equal(some[0]!.message, 'Spent $8.00 of the $10.00 daily budget (80%), $2.00 remaining. The budget resets in 12 h (2026-11-22T00:00:00.000Z, UTC).');
  t.equal(some[1]!.message, 'Spent $50.00 of the $100.00 monthly budget (50%), $50.00 remaining; at this rate the month ends at $73.17 (projection over 30 days). The budget resets in 9 d 12 h (2026-12-01T00:00:00.000Z).');
  const all = evaluate(input({ budget: budget(10, 100, { autoSwitch: true }), fired: fired(some) }));
  t.same(kinds(all), ['daily_budget:daily:100', 'auto_switch:daily:', 'monthly_budget:monthly:80', 'monthly_budget:monthly:100']);
  t.match(all[1]!.message, /new requests go to free\/llama until the budget resets in 12 h/);
  t.same(kinds(evaluate(input({ budget: budget(10, 100, { daily: null, monthly: null }) }))), [], 'no budgets: no budget alerts');
});

t.test('cost anomaly: above 2x the average of the previous days, never with fewer than 3 days of history', async (t) => {
  const costs = (days: number[], today: number) => ({
    previousDays: days.map((c, i) => ({ date: `2026-11-${String(14 + i).padStart(2, '0')}`, cost: c })),
    today, todayByProvider: [{ provider: 'openai', cost: today * 0.75 }, { provider: 'anthropic', cost: today * 0.25 }],
  });
  t.same(kinds(evaluate(input({ costs: costs([1, 1], 10) }))), [], 'two days of history: no alarm');
  t.same(kinds(evaluate(input({ costs: costs([1, 1, 1], 2) }))), [], 'exactly 2x: not above');
  const a = evaluate(input({ costs: costs([1, 2, 3], 5) }));
  t.same(kinds(a), ['cost_anomaly:cost:200']);
  t.equal(a[0]!.message, "Today's cost $5.00 is 2.5x the daily average of $2.00 over the previous 3 days with usage. Reason: openai accounts for 75% of today's cost ($3.75).");
  t.same(kinds(evaluate(input({ costs: costs([0, 0, 1, 1], 9) }))), [], 'days without usage are not history');
});

t.test('exhaustion pattern: 3 separate exhausted periods within 7 days, once per week', async (t) => {
  const ex = (window: string, daysAgo: number, subject = 'z'): FiredAlert => ({ kind: 'quota_exhausted', subject, threshold: 100, window, firedAt: NOW - daysAgo * 86_400_000, id: `x-${window}` });
  const patterns = (cs: Candidate[]) => kinds(cs).filter((k) => k.startsWith('exhaustion'));
  t.same(patterns(evaluate(input({ quota: [quota('z', 1, 100)], fired: [ex('a', 1), ex('b', 2)] }))), []);
  t.same(patterns(evaluate(input({ quota: [quota('z', 1, 100)], fired: [ex('a', 1), ex('a', 1.5), ex('b', 2), ex('c', 8)] }))), [], 'the same period twice, one too old');
  const p = evaluate(input({ quota: [quota('z', 1, 100)], fired: [ex('a', 1), ex('b', 2), ex('c', 3)] }));
  t.same(kinds(p).filter((k) => k.startsWith('exhaustion')), ['exhaustion_pattern:z:']);
  t.equal(p.find((c) => c.kind === 'exhaustion_pattern')!.window, isoWeek(NOW));
  t.match(p.find((c) => c.kind === 'exhaustion_pattern')!.message, /ran out of quota in 3 separate periods in the last 7 days/);
});

t.test('helpers: durations, ISO weeks, keys', async (t) => {
  t.same([duration(0), duration(59), duration(3600), duration(12000), duration(90000), duration(null)], ['now', '1 min', '1 h', '3 h 20 min', '1 d 1 h', 'an unknown time']);
  t.same([isoWeek(Date.UTC(2026, 0, 1)), isoWeek(Date.UTC(2026, 10, 21)), isoWeek(Date.UTC(2027, 0, 3))], ['2026-W01', '2026-W47', '2026-W53']);
  t.not(keyOf({ kind: 'a', subject: 'b', threshold: 80, window: 'w' }), keyOf({ kind: 'a', subject: 'b', threshold: 90, window: 'w' }));
});

t.test('alerts.thresholds: other percentages and another anomaly multiple fire instead of the defaults', async (t) => {
  const thresholds = { quota: [50, 95], daily: [25, 60], monthly: [90], anomaly_multiple: 1.5 };
  const q = evaluate(input({ thresholds, quota: [quota('p', 60, 100)] }));
  t.same(kinds(q), ['quota_warning:p:50'], 'the quota warns at 50 %, not at 80 %');
  t.same(kinds(evaluate(input({ thresholds, budget: budget(6, 89) }))), ['daily_budget:daily:25', 'daily_budget:daily:60'], 'daily at 25 and 60 %; monthly not before 90 %');
  t.same(kinds(evaluate(input({ thresholds, budget: budget(0, 90) }))), ['monthly_budget:monthly:90']);
  const costs = { previousDays: [1, 1, 1].map((c, i) => ({ date: `2026-11-1${i}`, cost: c })), today: 1.6, todayByProvider: [] };
  t.same(kinds(evaluate(input({ thresholds, costs }))), ['cost_anomaly:cost:150'], '1.6 is above 1.5x the average');
  t.same(kinds(evaluate(input({ costs }))), [], 'the default 2x does not fire at 1.6');
  // The defaults are the schema's: a config without alerts.thresholds evaluates as before.
  t.same(parseConfig({}).alerts.thresholds, { quota: [80, 90], daily: [80, 100], monthly: [50, 80, 100], anomaly_multiple: 2 });
});
