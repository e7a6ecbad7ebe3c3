// The alert rules (spec "Events", DESIGN.md decision 8), pure: from the quota entries, the budget state, the cost
// history and the alerts already fired, the alerts to fire now. Each alert has a key (kind, subject, threshold,
// window) and fires once per key; the scheduler keeps the keys (in ClickHouse, so a restart fires nothing twice).
//
// | kind               | fires when                                                        | window (once per)            |
// | ------------------ | ----------------------------------------------------------------- | ---------------------------- |
// | quota_warning      | a provider's quota reaches 80 %, and 90 % (alerts.thresholds.quota) | its quota period*          |
// | quota_exhausted    | it reaches 100 % (or its monthly total, for daily_requests)       | its quota period*            |
// | (reported)         | the same two, from a provider's reported rate-limit window        | the clock hour (reported.ts) |
// | quota_reset        | a provider warned or exhausted is back under 10 % (refreshed)    | the warning it follows       |
// | daily_budget       | today's spend reaches 80 %, and 100 %, of budgets.daily_usd       | the local day                |
// | monthly_budget     | the month's spend reaches 50 %, 80 %, 100 % of budgets.monthly_usd | the local month             |
// | cost_anomaly       | today's cost > 2 x the daily average of the previous days (>= 3   | the local day                |
// |                    | (the percentages and the multiple: alerts.thresholds; these are the defaults)                   |
// |                    | days with usage among the last 7; fewer: never)                   |                              |
// | exhaustion_pattern | a provider exhausted in 3 or more separate periods within 7 days  | the ISO week                 |
// | auto_switch        | the daily budget is exceeded with auto_switch on                  | the local day                |
//
// * calendar quotas (daily, monthly): the period's start; rolling quotas: at most once per rolling window length
//   (a crossing less than one window after the last alert of the same key does not fire again).
// Every threshold crossed fires, lowest first: a jump from 70 % to 100 % raises 80 %, 90 % and exhausted.

import type { QuotaEntry } from '../accounting/quota.js';
import { DAY_MS, WEEK_MS, parseWindow } from '../core/windows.js';
import type { BudgetState } from '../accounting/budget.js';
import type { Alert, AlertKind } from './types.js';
import type { AlertThresholds } from '../config/types.js';
import { ALERT_THRESHOLD_DEFAULTS } from '../config/schema.js';
import type { ReportedQuota } from '../accounting/reported-quota.js';
import { reportedQuotaAlerts } from './reported.js';

export interface FiredAlert {
  readonly kind: AlertKind;
  readonly subject: string;
  readonly threshold: number | null;
  readonly window: string;
  readonly firedAt: number;
  readonly id: string;
}

export interface CostHistory {
  /** Billed cost of each previous local day that had usage (up to 7), oldest first. */
  readonly previousDays: readonly { readonly date: string; readonly cost: number }[];
  readonly today: number;
  /** Today's cost per provider, for the anomaly's reason. */
  readonly todayByProvider: readonly { readonly provider: string; readonly cost: number }[];
}

export interface EvaluationInput {
  readonly now: number;
  readonly enabled: ReadonlySet<AlertKind>;
  readonly quota: readonly QuotaEntry[];
  readonly budget: BudgetState;
  readonly costs: CostHistory | null;
  /** Alerts already fired (at least those of the last 8 days). */
  readonly fired: readonly FiredAlert[];
  /** alerts.thresholds (default: the schema's defaults). */
  readonly thresholds?: AlertThresholds;
  /** What providers reported on their responses (alerts/reported.ts); none: computed quota only. */
  readonly reported?: readonly ReportedQuota[];
  /**
   * False when `quota` is short of this gateway's calls not stored yet (inserts ran beside every read made for it: a
   * backlog being written): such figures can only be low, so they tell no reset. Default true.
   */
  readonly quotaComplete?: boolean;
}

/** An alert to fire: the scheduler gives it its id and time. */
export type Candidate = Omit<Alert, 'id' | 'firedAt'>;

/** A warned or exhausted quota counts as refreshed once back under this percentage. */
export const RESET_BELOW = 10;
export const ANOMALY_MIN_DAYS = 3;
export const PATTERN_COUNT = 3;

export const usd = (v: number): string => `$${v.toFixed(v !== 0 && Math.abs(v) < 0.01 ? 4 : 2)}`;

/** "3 h 20 min", "45 min", "2 d 4 h", "now". */
export function duration(s: number | null): string {
  if (s === null) return 'an unknown time';
  if (s <= 0) return 'now';
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.ceil((s % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return m === 60 ? `${h + 1} h` : m === 0 ? `${h} h` : `${h} h ${m} min`;
  return `${Math.max(1, m)} min`;
}

const num = (v: number): string => (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toLocaleString('en-US', { maximumFractionDigits: 4 }));

/** The key an alert fires once for. */
export const keyOf = (a: { kind: string; subject: string; threshold: number | null; window: string }): string =>
  `${a.kind}\u0000${a.subject}\u0000${a.threshold ?? ''}\u0000${a.window}`;

/** The ISO week of an instant, `2026-W47`. */
export function isoWeek(ms: number): string {
  const d = new Date(ms);
  const day = (d.getUTCDay() + 6) % 7;
  const thursday = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day + 3));
  // The week's Thursday decides its year; week 1 is the one whose Thursday falls in January 1-7.
  const week = 1 + Math.floor((thursday.getTime() - Date.UTC(thursday.getUTCFullYear(), 0, 1)) / WEEK_MS);
  return `${thursday.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;
}

export function evaluate(input: EvaluationInput): Candidate[] {
  const out: Candidate[] = [];
  const fired = new Set(input.fired.map(keyOf));
  const add = (c: Candidate) => {
    if (!input.enabled.has(c.kind) || fired.has(keyOf(c))) return;
    fired.add(keyOf(c));
    out.push(c);
  };
  const thresholds = input.thresholds ?? ALERT_THRESHOLD_DEFAULTS;
  for (const e of input.quota) quotaAlerts(e, input, thresholds, add);
  reportedQuotaAlerts(input.reported ?? [], { now: input.now, thresholds: thresholds.quota }, add);
  budgetAlerts(input, thresholds, add);
  if (input.costs) anomaly(input.costs, input.budget, thresholds.anomaly_multiple, add);
  pattern(input, add);
  return out;
}

/** The prefix of a rolling quota alert's window. */
export const ROLLING_WINDOW = 'rolling:';

/**
 * The window key of a quota alert: the calendar period's start, or for a rolling quota the window-length bucket of
 * the clock it fires in (buckets from the epoch), so that replicas evaluating moments apart name the same alert and
 * its claim lets one of them send it (docs/scaling.md; it was the firing instant, and each replica sent its own).
 */
function quotaWindow(e: QuotaEntry, kind: AlertKind, threshold: number, input: EvaluationInput): string | null {
  if (e.reset.type !== 'rolling') {
    // The period began at the last reset: nextReset minus the period is not known for every kind, so the period is
    // named by its next reset instant (the same all period long).
    return e.reset.nextReset ?? 'none';
  }
  const span = parseWindow(e.reset.window ?? '5h');
  const last = input.fired.filter((f) => f.kind === kind && f.subject === e.id && f.threshold === threshold).reduce((m, f) => Math.max(m, f.firedAt), 0);
  if (input.now - last < span) return null; // fired within one window length: the same episode
  return `${ROLLING_WINDOW}${new Date(Math.floor(input.now / span) * span).toISOString()}`;
}

const ascending = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);

/**
 * Whether `a` fired after `b`; alerts of one evaluation (a jump past 80 and 90 %) share an instant and are ordered by
 * threshold, then id, so that every replica, whatever order its memory holds them in, names the same last one.
 */
function laterThan(a: FiredAlert, b: FiredAlert): boolean {
  if (a.firedAt !== b.firedAt) return a.firedAt > b.firedAt;
  if ((a.threshold ?? 0) !== (b.threshold ?? 0)) return (a.threshold ?? 0) > (b.threshold ?? 0);
  return a.id > b.id;
}

function quotaAlerts(e: QuotaEntry, input: EvaluationInput, thresholds: AlertThresholds, add: (c: Candidate) => void): void {
  const q = e.quota;
  const pct = q.percentage;
  const monthlyOut = e.secondary?.exhausted === true;
  const base = {
    provider: e.id, name: e.name, used: q.used, limit: q.limit, unit: q.unit, percentage: pct, remaining: q.remaining,
    next_reset: e.reset.nextReset, reset_in_s: e.reset.countdown_s,
  };
  const resetText = `It resets in ${duration(e.reset.countdown_s)}${e.reset.nextReset ? ` (${e.reset.nextReset})` : ''}.`;
  if (pct !== null && q.limit !== null) {
    for (const threshold of ascending(thresholds.quota)) {
      if (pct < threshold) continue;
      const window = quotaWindow(e, 'quota_warning', threshold, input);
      if (window === null) continue;
      add({
        kind: 'quota_warning', severity: 'warning', subject: e.id, threshold, window,
        title: `Quota warning: ${e.name} at ${pct}%`,
        message: `${e.name} (${e.id}) has used ${pct}% of its quota: ${num(q.used)} of ${num(q.limit)} ${q.unit}, ${num(q.remaining ?? 0)} ${q.unit} remaining. ${resetText}`,
        data: { ...base, threshold },
      });
    }
  }
  if (e.exhausted) {
    const window = quotaWindow(e, 'quota_exhausted', 100, input);
    const sec = e.secondary;
    if (window !== null) {
      add({
        kind: 'quota_exhausted', severity: 'critical', subject: e.id, threshold: 100, window: monthlyOut && sec ? `month:${sec.nextReset}` : window,
        title: `Quota exhausted: ${e.name}`,
        message: monthlyOut && sec
          ? `${e.name} (${e.id}) has used its monthly total: ${num(sec.used)} of ${num(sec.limit)} ${sec.unit} (${sec.percentage}%), 0 remaining. It resets in ${duration(sec.countdown_s)} (${sec.nextReset}).`
          : `${e.name} (${e.id}) has used all of its quota: ${num(q.used)} of ${num(q.limit ?? 0)} ${q.unit} (${pct}%), 0 ${q.unit} remaining. ${resetText}`,
        data: { ...base, threshold: 100 },
      });
    }
  }
  // Back under 10 % after a warning or exhaustion: the quota refreshed (once per warning/exhaustion it follows). The
  // same level as the Prometheus rule TollgateQuotaReset; a rolling quota that only drains a little does not count.
  const last = input.fired
    .filter((f) => f.subject === e.id && (f.kind === 'quota_warning' || f.kind === 'quota_exhausted'))
    .reduce<FiredAlert | null>((m, f) => (m === null || laterThan(f, m) ? f : m), null);
  if (last !== null && input.quotaComplete !== false && !e.exhausted && (pct === null || pct < RESET_BELOW) && input.now - last.firedAt < 35 * DAY_MS) {
    add({
      kind: 'quota_reset', severity: 'info', subject: e.id, threshold: null, window: last.id,
      title: `Quota reset: ${e.name}`,
      message: `${e.name} (${e.id}) has its quota back: ${num(q.used)}${q.limit !== null ? ` of ${num(q.limit)}` : ''} ${q.unit} used${pct !== null ? ` (${pct}%)` : ''}${q.remaining !== null ? `, ${num(q.remaining)} ${q.unit} remaining` : ''}. Next reset in ${duration(e.reset.countdown_s)}.`,
      data: { ...base, after: last.kind },
    });
  }
}

function budgetAlerts(input: EvaluationInput, thresholds: AlertThresholds, add: (c: Candidate) => void): void {
  const { daily, monthly, auto_switch } = input.budget;
  if (daily.limit !== null && daily.percentage !== null) {
    for (const threshold of ascending(thresholds.daily)) {
      if (daily.percentage < threshold) continue;
      add({
        kind: 'daily_budget', severity: threshold >= 100 ? 'critical' : 'warning', subject: 'daily', threshold, window: daily.window,
        title: threshold >= 100 ? `Daily budget exceeded: ${usd(daily.spent)} of ${usd(daily.limit)}` : `Daily budget at ${daily.percentage}%`,
        message: `Spent ${usd(daily.spent)} of the ${usd(daily.limit)} daily budget (${daily.percentage}%), ${usd(daily.remaining ?? 0)} remaining. The budget resets in ${duration(daily.resets_in_s)} (${daily.resets_at}, ${input.budget.timezone}).`,
        data: { budget: 'daily', spent: daily.spent, limit: daily.limit, percentage: daily.percentage, remaining: daily.remaining, resets_at: daily.resets_at, reset_in_s: daily.resets_in_s, threshold },
      });
    }
    if (auto_switch.active && auto_switch.to) {
      add({
        kind: 'auto_switch', severity: 'warning', subject: 'daily', threshold: null, window: daily.window,
        title: `Auto-switch to ${auto_switch.to}`,
        message: `The daily budget is exceeded (${usd(daily.spent)} of ${usd(daily.limit)}): new requests go to ${auto_switch.to} until the budget resets in ${duration(daily.resets_in_s)} (${daily.resets_at}).`,
        data: { budget: 'daily', spent: daily.spent, limit: daily.limit, to: auto_switch.to, resets_at: daily.resets_at },
      });
    }
  }
  if (monthly.limit !== null && monthly.percentage !== null) {
    for (const threshold of ascending(thresholds.monthly)) {
      if (monthly.percentage < threshold) continue;
      add({
        kind: 'monthly_budget', severity: threshold >= 100 ? 'critical' : 'warning', subject: 'monthly', threshold, window: monthly.window,
        title: threshold >= 100 ? `Monthly budget exceeded: ${usd(monthly.spent)} of ${usd(monthly.limit)}` : `Monthly budget at ${monthly.percentage}%`,
        message: `Spent ${usd(monthly.spent)} of the ${usd(monthly.limit)} monthly budget (${monthly.percentage}%), ${usd(monthly.remaining ?? 0)} remaining; at this rate the month ends at ${usd(monthly.projection)} (projection over ${monthly.days} days). The budget resets in ${duration(monthly.resets_in_s)} (${monthly.resets_at}).`,
        data: { budget: 'monthly', spent: monthly.spent, limit: monthly.limit, percentage: monthly.percentage, remaining: monthly.remaining, projection: monthly.projection, resets_at: monthly.resets_at, reset_in_s: monthly.resets_in_s, threshold },
      });
    }
  }
}

function anomaly(c: CostHistory, budget: BudgetState, multipleOver: number, add: (c: Candidate) => void): void {
  const days = c.previousDays.filter((d) => d.cost > 0);
  if (days.length < ANOMALY_MIN_DAYS) return; // too little history to call anything unusual
  const average = days.reduce((s, d) => s + d.cost, 0) / days.length;
  if (average <= 0 || c.today <= multipleOver * average) return;
  const multiple = Number((c.today / average).toFixed(2));
  const top = [...c.todayByProvider].sort((a, b) => b.cost - a.cost)[0];
  const share = top && c.today > 0 ? Math.round((top.cost / c.today) * 100) : 0;
  const reason = top ? `${top.provider} accounts for ${share}% of today's cost (${usd(top.cost)})` : 'no single provider stands out';
  add({
    kind: 'cost_anomaly', severity: 'warning', subject: 'cost', threshold: Math.round(multipleOver * 100), window: budget.daily.window,
    title: `Cost anomaly: today ${usd(c.today)} is ${multiple}x the daily average`,
    message: `Today's cost ${usd(c.today)} is ${multiple}x the daily average of ${usd(average)} over the previous ${days.length} days with usage. Reason: ${reason}.`,
    data: { today: c.today, average: Number(average.toFixed(12)), multiple, days: days.length, reason, top_provider: top?.provider ?? null, top_share: share },
  });
}

function pattern(input: EvaluationInput, add: (c: Candidate) => void): void {
  const since = input.now - WEEK_MS;
  const byProvider = new Map<string, FiredAlert[]>();
  for (const f of input.fired) {
    if (f.kind !== 'quota_exhausted' || f.firedAt < since) continue;
    byProvider.set(f.subject, [...(byProvider.get(f.subject) ?? []), f]);
  }
  const names = new Map(input.quota.map((e) => [e.id, e.name]));
  for (const [provider, list] of byProvider) {
    const windows = new Set(list.map((f) => f.window));
    if (windows.size < PATTERN_COUNT) continue;
    const dates = [...list].sort((a, b) => a.firedAt - b.firedAt).map((f) => new Date(f.firedAt).toISOString().slice(0, 16).replace('T', ' '));
    const name = names.get(provider) ?? provider;
    add({
      kind: 'exhaustion_pattern', severity: 'warning', subject: provider, threshold: null, window: isoWeek(input.now),
      title: `Exhaustion pattern: ${name} exhausted ${windows.size} times in 7 days`,
      message: `${name} (${provider}) ran out of quota in ${windows.size} separate periods in the last 7 days (${dates.join(', ')} UTC). Consider a higher tier, a fallback combo that starts elsewhere, or moving traffic to another provider.`,
      data: { provider, count: windows.size, first: dates[0] ?? null, last: dates.at(-1) ?? null },
    });
  }
}
