// The quota engine, pure: the seven quota kinds of the spec's table (DESIGN.md decision 6). planQuota() says what
// to sum over which window; the caller sums it from the ClickHouse record; evaluateQuota() turns the sums into the
// quota, reset and exhaustion parts of the provider quota entry. The rules are in docs/quota.md.

import type { ProviderConfig } from '../config/types.js';
import {
  HOUR_MS, anchorReset, lastDailyReset, lastMonday, monthStart, nextAnchorReset, nextDailyReset, nextMonday,
  nextMonthStart, parseResetTime, parseWindow,
} from '../core/windows.js';

export const QUOTA_KINDS = [
  'rolling_hours', 'daily_requests', 'monthly', 'daily_tokens', 'rolling_tokens', 'monthly_tokens', 'unlimited',
] as const;
export type QuotaKind = (typeof QUOTA_KINDS)[number];

/** What a quota counts, and what the caller sums: request durations in hours, total tokens, or requests. */
export const QUOTA_UNITS = ['hours', 'tokens', 'requests'] as const;
export type QuotaUnit = (typeof QUOTA_UNITS)[number];

/** `provider.quota` of the YAML, as validated by the config schema. */
export interface QuotaConfig {
  readonly kind: QuotaKind;
  readonly limit?: number;
  readonly monthly_limit?: number;
  readonly window?: string;
  readonly reset_time?: string;
  readonly anchor_day?: number;
  readonly unit?: QuotaUnit;
  /** A provider usage source merged into the computed figures (quota/source.ts). */
  readonly source?: { readonly url: string; readonly headers: Readonly<Record<string, string>>; readonly refresh_s: number };
}

/**
 * The defaults of each kind, in one place (the schema cannot hold them: they depend on `kind`). A field a kind
 * does not list is ignored for that kind; `unit` is configurable for `monthly` and `unlimited` only, and
 * `unlimited` ignores `limit`. `limit: null` means no limit.
 */
export const QUOTA_DEFAULTS = {
  rolling_hours: { limit: 5, window: '5h', unit: 'hours' },
  daily_requests: { limit: 1000, monthly_limit: 180_000, reset_time: '00:00Z', unit: 'requests' },
  monthly: { limit: null, anchor_day: 1, unit: 'tokens' },
  daily_tokens: { limit: 10_000_000, reset_time: '10:00+08:00', unit: 'tokens' },
  rolling_tokens: { limit: 5_000_000, window: '5h', unit: 'tokens' },
  monthly_tokens: { limit: 10_000_000, anchor_day: 1, unit: 'tokens' },
  unlimited: { limit: null, unit: 'tokens' },
} as const satisfies Record<QuotaKind, { limit: number | null; unit: QuotaUnit } & Partial<Omit<QuotaConfig, 'kind' | 'limit' | 'unit'>>>;

const isKind = (v: unknown): v is QuotaKind => (QUOTA_KINDS as readonly unknown[]).includes(v);
const isUnit = (v: unknown): v is QuotaUnit => (QUOTA_UNITS as readonly unknown[]).includes(v);
const isAmount = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const parses = (parse: (s: string) => unknown) => (v: unknown) => {
  if (typeof v !== 'string') return false;
  try {
    parse(v);
    return true;
  } catch {
    return false;
  }
};

/**
 * A provider's quota config, narrowed and checked (null: the provider has none). Throws a TypeError naming the
 * field when a value is not usable, including what the schema's patterns let through but the engine cannot use
 * ('25:00Z', '0h'): call it when a config is loaded.
 */
export function quotaConfigOf(provider: Pick<ProviderConfig, 'quota'>): QuotaConfig | null {
  const q = provider.quota;
  if (q === undefined) return null;
  const check = (field: keyof QuotaConfig, ok: (v: unknown) => boolean, want: string, required = false) => {
    const v = q[field];
    if ((v !== undefined || required) && !ok(v)) {
      throw new TypeError(`quota.${field}: expected ${want}, got ${JSON.stringify(v) ?? 'nothing'}`);
    }
  };
  check('kind', isKind, QUOTA_KINDS.join(' | '), true);
  check('limit', isAmount, 'a number >= 0');
  check('monthly_limit', isAmount, 'a number >= 0');
  check('window', parses(parseWindow), "a window longer than zero such as '5h'");
  check('reset_time', parses(parseResetTime), "HH:MM (00:00-23:59) followed by Z or an offset within ±14:00");
  check('anchor_day', (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 31, 'an integer 1-31');
  check('unit', isUnit, QUOTA_UNITS.join(' | '));
  return q as unknown as QuotaConfig;
}

export type ResetType = 'rolling' | 'daily' | 'monthly' | 'none';

/** What to sum, over [from, to), and how the result resets. */
export interface QuotaPlan {
  readonly kind: QuotaKind;
  /** The quantity to sum: 'hours' = request durations in hours, 'tokens' = total tokens, 'requests' = a count. */
  readonly unit: QuotaUnit;
  readonly limit: number | null;
  /** Usage with a timestamp in [from, to) counts. */
  readonly from: number;
  readonly to: number;
  readonly reset: { readonly type: ResetType; readonly window?: string; readonly time?: string };
  /**
   * Calendar kinds: the next reset. Rolling kinds: the latest it can be (next Monday for rolling_hours, null for
   * rolling_tokens); evaluateQuota() takes the earlier of this and the expiry of the oldest counted usage.
   */
  readonly nextReset: number | null;
  /** Rolling kinds: usage stops counting this long after its timestamp, and the caller must sum `oldest`. */
  readonly rollingMs: number | null;
  /** daily_requests: the monthly total, summed over its own [from, to). */
  readonly secondary?: {
    readonly period: 'month';
    readonly limit: number;
    readonly from: number;
    readonly to: number;
    readonly nextReset: number;
  };
}

/** The caller's sums over the plan's windows, in the plan's unit. */
export interface QuotaSums {
  readonly used: number;
  /** Rolling kinds: epoch ms of the oldest counted usage in [from, to); null when there is none. */
  readonly oldest: number | null;
  /** Required when the plan has a secondary: the sum over the secondary window. */
  readonly secondaryUsed?: number;
}

export interface QuotaFigures {
  readonly used: number;
  readonly limit: number | null;
  readonly unit: QuotaUnit;
  /** used / limit x 100, rounded to 2 decimals, not capped at 100; null without a limit. */
  readonly percentage: number | null;
  /** max(0, limit - used); null without a limit. */
  readonly remaining: number | null;
}

export interface QuotaEvaluation {
  readonly quota: QuotaFigures;
  readonly reset: {
    readonly type: ResetType;
    readonly window?: string;
    readonly time?: string;
    /** ISO 8601 UTC ('Z'); null when nothing is due to reset. */
    readonly nextReset: string | null;
    /** Whole seconds until nextReset, rounded up, never negative; null with nextReset. */
    readonly countdown_s: number | null;
  };
  /** used >= limit, or (daily_requests) the monthly total >= monthly_limit. */
  readonly exhausted: boolean;
  readonly secondary?: QuotaFigures & {
    readonly period: 'month';
    readonly limit: number;
    readonly nextReset: string;
    readonly countdown_s: number;
    readonly exhausted: boolean;
  };
}

/**
 * A rolling window's first counted millisecond: usage at `t` counts while now < t + window, and stops counting at
 * t + window, the instant `evaluateQuota` names as its reset (it counted there too before: the reset came 1 ms early).
 */
const rollingFrom = (now: number, rollingMs: number): number => now - rollingMs + 1;

/** Says what to sum for `q` at `now`, and over which window. */
export function planQuota(q: QuotaConfig, now: number): QuotaPlan {
  switch (q.kind) {
    case 'rolling_hours': {
      const d = QUOTA_DEFAULTS.rolling_hours;
      const window = q.window ?? d.window;
      const rollingMs = parseWindow(window);
      // The weekly refresh: usage before the last Monday 00:00 UTC never counts. A rolling window is (now - window, now]:
      // a call exactly `window` old has left it, at the instant its expiry (the reset evaluateQuota gives) names.
      const from = Math.max(rollingFrom(now, rollingMs), lastMonday(now));
      return {
        kind: q.kind, unit: d.unit, limit: q.limit ?? d.limit, from, to: now,
        reset: { type: 'rolling', window }, nextReset: nextMonday(now), rollingMs,
      };
    }
    case 'rolling_tokens': {
      const d = QUOTA_DEFAULTS.rolling_tokens;
      const window = q.window ?? d.window;
      const rollingMs = parseWindow(window);
      return {
        kind: q.kind, unit: d.unit, limit: q.limit ?? d.limit, from: rollingFrom(now, rollingMs), to: now,
        reset: { type: 'rolling', window }, nextReset: null, rollingMs,
      };
    }
    case 'daily_requests':
    case 'daily_tokens': {
      const d = QUOTA_DEFAULTS[q.kind];
      const time = q.reset_time ?? d.reset_time;
      const plan: QuotaPlan = {
        kind: q.kind, unit: d.unit, limit: q.limit ?? d.limit, from: lastDailyReset(now, time), to: now,
        reset: { type: 'daily', time }, nextReset: nextDailyReset(now, time), rollingMs: null,
      };
      if (q.kind === 'daily_tokens') return plan;
      const m = QUOTA_DEFAULTS.daily_requests;
      return {
        ...plan,
        secondary: {
          period: 'month', limit: q.monthly_limit ?? m.monthly_limit, from: monthStart(now), to: now,
          nextReset: nextMonthStart(now),
        },
      };
    }
    case 'monthly':
    case 'monthly_tokens': {
      const d = QUOTA_DEFAULTS[q.kind];
      const day = q.anchor_day ?? d.anchor_day;
      return {
        kind: q.kind, unit: q.kind === 'monthly' ? (q.unit ?? d.unit) : d.unit, limit: q.limit ?? d.limit,
        from: anchorReset(now, day), to: now, reset: { type: 'monthly' }, nextReset: nextAnchorReset(now, day),
        rollingMs: null,
      };
    }
    case 'unlimited': {
      // No limit and no reset; `used` is shown for the calendar month.
      return {
        kind: q.kind, unit: q.unit ?? QUOTA_DEFAULTS.unlimited.unit, limit: null, from: monthStart(now),
        to: now, reset: { type: 'none' }, nextReset: null, rollingMs: null,
      };
    }
  }
}

const round = (x: number, decimals: number): number => {
  const f = 10 ** decimals;
  return Math.round(x * f) / f;
};

/** Hours are sums of durations: shown to 4 decimals (0.36 s). Tokens and requests are shown as given. */
const tidy = (x: number, unit: QuotaUnit): number => (unit === 'hours' ? round(x, 4) : x);

function figures(used: number, limit: number | null, unit: QuotaUnit): QuotaFigures {
  if (limit === null) return { used: tidy(used, unit), limit, unit, percentage: null, remaining: null };
  return {
    used: tidy(used, unit),
    limit,
    unit,
    // A zero limit is used up from the start: 100 %, not a division by zero.
    percentage: limit > 0 ? round((used / limit) * 100, 2) : 100,
    remaining: tidy(Math.max(0, limit - used), unit),
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();
const countdown = (at: number, now: number): number => Math.max(0, Math.ceil((at - now) / 1000));

/** The quota, reset and exhaustion parts of the provider quota entry, from the sums over `plan`'s windows. */
export function evaluateQuota(plan: QuotaPlan, sums: QuotaSums, now: number): QuotaEvaluation {
  let next = plan.nextReset;
  if (plan.rollingMs !== null && sums.oldest !== null) {
    const expiry = sums.oldest + plan.rollingMs;
    next = next === null ? expiry : Math.min(next, expiry);
  }
  const quota = figures(sums.used, plan.limit, plan.unit);
  const exhausted = plan.limit !== null && sums.used >= plan.limit;
  const evaluation: QuotaEvaluation = {
    quota,
    reset: {
      ...plan.reset,
      nextReset: next === null ? null : iso(next),
      countdown_s: next === null ? null : countdown(next, now),
    },
    exhausted,
  };
  const s = plan.secondary;
  if (s === undefined) return evaluation;
  if (sums.secondaryUsed === undefined) {
    throw new TypeError(`quota ${plan.kind}: the plan has a monthly total, but secondaryUsed was not given`);
  }
  const secondaryExhausted = sums.secondaryUsed >= s.limit;
  return {
    ...evaluation,
    exhausted: exhausted || secondaryExhausted,
    secondary: {
      period: s.period,
      ...figures(sums.secondaryUsed, s.limit, plan.unit),
      limit: s.limit,
      nextReset: iso(s.nextReset),
      countdown_s: countdown(s.nextReset, now),
      exhausted: secondaryExhausted,
    },
  };
}

/** A sum of request durations in milliseconds as the hours `QuotaSums.used` takes for the 'hours' unit. */
export const msToHours = (ms: number): number => ms / HOUR_MS;

/**
 * For a used-up quota: epoch ms when it resets (the later reset when a daily_requests quota's day and month are both
 * used up); null when no reset is known.
 */
export function exhaustedUntil(e: QuotaEvaluation): number | null {
  const month = e.secondary?.exhausted === true ? e.secondary.nextReset : null;
  const own = e.quota.limit !== null && e.quota.used >= e.quota.limit;
  const at = [own || month === null ? e.reset.nextReset : null, month].map((r) => (r === null ? Number.NaN : Date.parse(r))).filter(Number.isFinite);
  return at.length === 0 ? null : Math.max(...at);
}

/** Whether two plans sum the same calls (a read for one holds the other's figures): only a limit differs. */
export function sameWindows(a: QuotaPlan, b: QuotaPlan): boolean {
  return a.unit === b.unit && a.from === b.from && a.to === b.to && a.rollingMs === b.rollingMs && a.secondary?.from === b.secondary?.from && a.secondary?.to === b.secondary?.to;
}
