// Provider-reported quota: the rate-limit state providers send on their answers (docs/quota.md, "Reported by the
// provider"), read from every upstream response the Dispatcher sees (its onResponse observer: nothing is threaded
// through the pipeline) and kept per connection with its source and time. A provider that sends none of these
// headers has no entry, and /api/quota shows its computed quota only.
//
// | family                         | headers (each resource: limit, remaining, reset)                         | reset as          |
// | ------------------------------ | ------------------------------------------------------------------------ | ----------------- |
// | OpenAI (Chat, Responses) and   | x-ratelimit-{limit,remaining,reset}-{requests,tokens}                    | a duration: 6m0s, |
// | OpenAI-compatible vendors      |                                                                          | 1s, 12ms          |
// | Anthropic                      | anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-        | RFC 3339 instant  |
// |                                | {limit,remaining,reset}                                                  |                   |
// | any (a 429 or 503)             | retry-after                                                              | seconds or a date |
//
// Gemini sends no rate-limit headers (its 429 names the quota and a retryDelay in the body only): a Gemini provider
// keeps its computed quota, plus retry-after when a proxy in front of it sends one.

import type { UpstreamResponseEvent } from '../providers/transport.js';

export const REPORTED_RESOURCES = ['requests', 'tokens', 'input_tokens', 'output_tokens'] as const;
export type ReportedResource = (typeof REPORTED_RESOURCES)[number];

export interface ReportedLimit {
  /** The window's limit; null when the provider sent only some of the three. */
  readonly limit: number | null;
  readonly remaining: number | null;
  /** Epoch ms when the window resets, as the provider said; null when not said. */
  readonly resetAt: number | null;
}

export interface ReportedLimits {
  readonly limits: Partial<Record<ReportedResource, ReportedLimit>>;
  /** Epoch ms until which the provider asked not to be called again (retry-after); null when it did not. */
  readonly retryUntil: number | null;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

const first = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/** A limit or remaining count: a non-negative number a double holds exactly (400 digits are not one), else null. */
const count = (s: string | undefined): number | null => {
  if (s === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(s)) return null;
  const n = Number(s);
  return n <= Number.MAX_SAFE_INTEGER ? n : null;
};

/**
 * How far from now a reported instant (a reset, a retry-after) may be and still be read: a year. Providers' windows
 * are a minute to a month; beyond this (`999999999d`, a bare 13-digit count, an RFC 3339 year 200000) the value is
 * taken as not said, so that no figure derived from it (ISO instant, countdown, gauge) is out of range.
 */
export const REPORTED_HORIZON_MS = 366 * 86_400_000;

const withinHorizon = (at: number, now: number): number | null => (Number.isFinite(at) && Math.abs(at - now) <= REPORTED_HORIZON_MS ? at : null);

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A Go-style duration as OpenAI sends it (`1s`, `6m0s`, `12ms`, `1h2m3.5s`) in ms, or null. */
export function durationMs(s: string): number | null {
  const text = s.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(text)) return null;
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}

/**
 * A reset value: a duration from now (OpenAI), an RFC 3339 instant (Anthropic), or bare seconds; null when not said
 * or not within REPORTED_HORIZON_MS of now.
 */
function resetAt(s: string | undefined, now: number): number | null {
  if (s === undefined || s.trim() === '') return null;
  const d = durationMs(s);
  if (d !== null) return withinHorizon(now + d, now);
  if (/^\d+(\.\d+)?$/.test(s.trim())) return withinHorizon(now + Number(s) * 1000, now);
  return withinHorizon(Date.parse(s), now);
}

/** retry-after: seconds, or an HTTP date (RFC 9110 §10.2.3); null when not within REPORTED_HORIZON_MS of now. */
function retryUntil(s: string | undefined, now: number): number | null {
  if (s === undefined) return null;
  if (/^\s*\d+\s*$/.test(s)) return withinHorizon(now + Number(s) * 1000, now);
  return withinHorizon(Date.parse(s), now);
}

/** Each resource's three header names, per family, built once (a response is read on every upstream answer). */
interface Family {
  readonly resource: ReportedResource;
  readonly limit: string;
  readonly remaining: string;
  readonly reset: string;
  /** Anthropic's are read only when the limit or the remaining count is there. */
  readonly needsCount: boolean;
}
const FAMILIES: readonly Family[] = [
  ...(['requests', 'tokens'] as const).map((r) => ({
    resource: r, limit: `x-ratelimit-limit-${r}`, remaining: `x-ratelimit-remaining-${r}`, reset: `x-ratelimit-reset-${r}`, needsCount: false,
  })),
  ...([['requests', 'requests'], ['tokens', 'tokens'], ['input_tokens', 'input-tokens'], ['output_tokens', 'output-tokens']] as const).map(([r, name]) => ({
    resource: r, limit: `anthropic-ratelimit-${name}-limit`, remaining: `anthropic-ratelimit-${name}-remaining`, reset: `anthropic-ratelimit-${name}-reset`, needsCount: true,
  })),
];

/** Could these headers report anything? One pass over the names, no lookups (most answers carry none of them). */
function mayReport(h: Headers): boolean {
  for (const name in h) {
    const c = name.charCodeAt(0);
    if ((c === 0x78 /* x */ && name.startsWith('x-ratelimit-')) || (c === 0x61 /* a */ && name.startsWith('anthropic-ratelimit-')) || name === 'retry-after') return true;
  }
  return false;
}

/** What one response's headers report (both families are read whatever the format: proxies pass either). */
export function parseReportedLimits(h: Headers, now: number): ReportedLimits | null {
  if (!mayReport(h)) return null;
  const limits: Partial<Record<ReportedResource, ReportedLimit>> = {};
  for (const f of FAMILIES) {
    const limit = first(h, f.limit);
    const remaining = first(h, f.remaining);
    if (f.needsCount && limit === undefined && remaining === undefined) continue;
    const entry = { limit: count(limit), remaining: count(remaining), resetAt: resetAt(first(h, f.reset), now) };
    if (entry.limit !== null || entry.remaining !== null) limits[f.resource] = entry;
  }
  const retry = retryUntil(first(h, 'retry-after'), now);
  return Object.keys(limits).length === 0 && retry === null ? null : { limits, retryUntil: retry };
}

export interface ReportedQuota {
  readonly provider: string;
  /** The connection's name (`default`, a key's name, `oauth`). */
  readonly connection: string;
  /** Where it came from: the response headers. */
  readonly source: 'headers';
  /** Epoch ms of the response it was last read from. */
  readonly observedAt: number;
  readonly limits: Partial<Record<ReportedResource, ReportedLimit>>;
  readonly retryUntil: number | null;
}

/** The latest reported state per connection. Keys come from the config's connections, so the map is bounded. */
export class ReportedQuotaStore {
  readonly #byConnection = new Map<string, ReportedQuota>();
  readonly #now: () => number;

  constructor(opts: { now?: () => number } = {}) {
    this.#now = opts.now ?? Date.now;
  }

  /** Fold one upstream response in; a response without any of the headers changes nothing. */
  observe(e: UpstreamResponseEvent): void {
    const at = this.#now();
    const parsed = parseReportedLimits(e.headers, at);
    if (parsed === null) return;
    const before = this.#byConnection.get(e.connectionId);
    this.#byConnection.set(e.connectionId, Object.freeze({
      provider: e.providerId,
      connection: e.connection,
      source: 'headers',
      observedAt: at,
      // Resources not in this response keep what an earlier one said (a 429 may carry retry-after only).
      limits: Object.freeze({ ...(before?.limits ?? {}), ...parsed.limits }),
      retryUntil: parsed.retryUntil ?? (before !== undefined && before.retryUntil !== null && before.retryUntil > at ? before.retryUntil : null),
    }));
  }

  /** Every connection's state, for providers still configured. */
  all(configured: (providerId: string) => boolean = () => true): ReportedQuota[] {
    return [...this.#byConnection.values()].filter((r) => configured(r.provider));
  }

  forProvider(providerId: string): ReportedQuota[] {
    return this.all((p) => p === providerId);
  }
}

/** The used share of a reported window (0..1), or null when the limit or remaining is not known. */
export function usedRatio(l: ReportedLimit): number | null {
  if (l.limit === null || l.remaining === null || l.limit <= 0) return null;
  return Math.min(1, Math.max(0, (l.limit - l.remaining) / l.limit));
}
