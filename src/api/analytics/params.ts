// Query-string parsing for the analytics routes: every parameter is checked here, and every bad one is a 400 in the
// one error shape (TOLLGATE_ERR_INVALID_QUERY, or TOLLGATE_ERR_INVALID_PERIOD for `period`) naming the parameter.
// Also the small shared pieces of every report: row kinds, rounding, the filters echo.

import { TollgateError } from '../../core/errors.js';
import type { Filters } from '../../store/aggregate.js';
import { BILLED_KINDS, USAGE_KINDS, type RecordKind } from '../../ledger/record.js';
import { timeZoneAsNamed } from '../../core/tz.js';


/** Client requests: a direct request or a combo request, once each. */
export const CLIENT_KINDS: readonly RecordKind[] = ['request', 'combo'];
/** Upstream calls (their tokens and cost); `include_keepalive=true` adds the keep-alive pings. */
export const usageKinds = (keepalive: boolean): readonly RecordKind[] => (keepalive ? BILLED_KINDS : USAGE_KINDS);
/** Both at once, for one read that is then split by `kind`. */
export const reportKinds = (keepalive: boolean): readonly RecordKind[] => [...new Set([...CLIENT_KINDS, ...usageKinds(keepalive)])];

/** Money: USD rounded to 12 decimals (the store's precision). */
export const money = (usd: number): number => Number(usd.toFixed(12));
/** Percentages: rounded to 2 decimals. */
export const pct = (part: number, whole: number): number => (whole === 0 ? 0 : Number(((part / whole) * 100).toFixed(2)));
export const iso = (ms: number): string => new Date(ms).toISOString();

export function invalid(param: string, message: string): TollgateError {
  return new TollgateError('TOLLGATE_ERR_INVALID_QUERY', message, { param });
}

const show = (s: string): string => JSON.stringify(s.length > 50 ? `${s.slice(0, 50)}…` : s);

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const MONTH = /^(\d{4})-(\d{2})$/;
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** Epoch ms of a valid calendar date (UTC midnight), or null. */
export function parseDate(s: string): number | null {
  const m = DATE.exec(s);
  if (m === null) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  return y >= 1970 && back.getUTCFullYear() === y && back.getUTCMonth() === mo - 1 && back.getUTCDate() === d ? ms : null;
}

/** Epoch ms of the 1st of a valid `YYYY-MM` (UTC), or null. */
export function parseMonth(s: string): number | null {
  const m = MONTH.exec(s);
  if (m === null) return null;
  const [y, mo] = [Number(m[1]), Number(m[2])];
  return y >= 1970 && mo >= 1 && mo <= 12 ? Date.UTC(y, mo - 1, 1) : null;
}

/** Epoch ms of an ISO 8601 date (`YYYY-MM-DD`, UTC midnight) or date-time with `Z` or an offset, or null. */
export function parseInstant(s: string): number | null {
  const m = INSTANT.exec(s);
  if (m === null) return null;
  const day = parseDate(`${m[1]}-${m[2]}-${m[3]}`);
  if (day === null) return null;
  if (m[4] === undefined) return day;
  const [h, mi, sec] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  if (h > 23 || mi > 59 || sec > 59) return null;
  const ms = Date.parse(s);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * The gateway key as a query parameter (`?key=`, as Gemini clients send it on every route; src/gate/keys.ts): the
 * gate has read it before any route runs, so every route takes it and ignores it. Never a report's parameter.
 */
const GATE_KEY_PARAM = 'key';

/**
 * One route's query string, read parameter by parameter. Unknown parameters and repeated ones are refused, so a typo
 * (`?provder=x`) is a 400 rather than an unfiltered answer; `key` (the gateway key) is taken and never read. An empty
 * value counts as absent.
 */
export class QueryReader {
  readonly #q: Record<string, unknown>;

  constructor(raw: unknown, allowed: readonly string[]) {
    const q = { ...((raw ?? {}) as Record<string, unknown>) };
    delete q[GATE_KEY_PARAM];
    this.#q = q;
    for (const k of Object.keys(q)) {
      if (!allowed.includes(k)) throw invalid(k, `unknown query parameter ${show(k)}; accepted: ${allowed.join(', ')}`);
    }
  }

  /** The raw string value, or undefined when absent or empty. */
  string(name: string, max = 256): string | undefined {
    const v = this.#q[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw invalid(name, `query parameter '${name}' must be given once`);
    if (v === '') return undefined;
    if (v.length > max || /[\u0000-\u001f\u007f]/.test(v)) throw invalid(name, `query parameter '${name}' must be at most ${max} printable characters`);
    return v;
  }

  oneOf<T extends string>(name: string, values: readonly T[]): T | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    if (!(values as readonly string[]).includes(v)) throw invalid(name, `'${name}' must be one of ${values.join(', ')}; got ${show(v)}`);
    return v as T;
  }

  int(name: string, min: number, max: number): number | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const n = /^\d{1,9}$/.test(v) ? Number(v) : NaN;
    if (!(n >= min && n <= max)) throw invalid(name, `'${name}' must be an integer from ${min} to ${max}; got ${show(v)}`);
    return n;
  }

  bool(name: string): boolean {
    const v = this.oneOf(name, ['true', 'false'] as const);
    return v === 'true';
  }

  instant(name: string): number | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const ms = parseInstant(v);
    if (ms === null) throw invalid(name, `'${name}' must be an ISO 8601 date (YYYY-MM-DD) or date-time with Z or an offset; got ${show(v)}`);
    return ms;
  }

  date(name: string): number | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const ms = parseDate(v);
    if (ms === null) throw invalid(name, `'${name}' must be a calendar date YYYY-MM-DD (1970 or later); got ${show(v)}`);
    return ms;
  }

  /** An IANA zone name, echoed as the client named it (timeZoneAsNamed); the store hands ClickHouse its canonical name. */
  timeZone(name: string): string | undefined {
    const v = this.string(name, 64);
    if (v === undefined) return undefined;
    const tz = timeZoneAsNamed(v);
    if (tz === null) throw invalid(name, `'${name}' must be an IANA time zone name such as Europe/Paris; got ${show(v)}`);
    return tz;
  }

  /** The `provider`, `model`, `combo` and `api_key` filters. */
  filters(): Filters {
    const f: { provider?: string; model?: string; combo?: string; apiKey?: string } = {};
    const provider = this.string('provider');
    const model = this.string('model');
    const combo = this.string('combo');
    const apiKey = this.string('api_key');
    if (provider !== undefined) f.provider = provider;
    if (model !== undefined) f.model = model;
    if (combo !== undefined) f.combo = combo;
    if (apiKey !== undefined) f.apiKey = apiKey;
    return f;
  }
}

export const FILTER_PARAMS = ['provider', 'model', 'combo', 'api_key'] as const;

/** The filters as the response echoes them (query-parameter names; only the ones applied). */
export function filtersEcho(f: Filters): Record<string, string> {
  const out: Record<string, string> = {};
  if (f.provider !== undefined) out.provider = f.provider;
  if (f.model !== undefined) out.model = f.model;
  if (f.combo !== undefined) out.combo = f.combo;
  if (f.apiKey !== undefined) out.api_key = f.apiKey;
  return out;
}
