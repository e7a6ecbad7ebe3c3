// Sums over any time window, fast at any table size: the whole UTC days inside [from, to) (and the current day of a
// window that ends now) come from the daily rollup (usage_daily), the other whole hours from the hourly rollup
// (usage_hourly; both kept by materialized views), the partial hours at either edge from the raw rows (each request
// once), in one query. Every endpoint that reports usage, cost or quota reads through here, so they agree to the cent.

import { localTime, parseTimeZone } from '../core/tz.js';
import type { RecordKind } from '../ledger/record.js';
import type { Store } from './client.js';
import { unpricedSql } from './rollup-sql.js';
import { DAY_MS, HOUR_MS } from '../core/windows.js';

/**
 * What results can be grouped by. `hour` and `day` are in `tz` (an IANA name; UTC by default); `hour_epoch` is the
 * instant the row's hour starts (Unix seconds): its UTC hour, which is its hour in `tz` too unless the zone is off the
 * whole hour (+05:30), where it is the start of its hour in `tz`.
 */
export const DIMS = ['provider', 'provider_group', 'model', 'combo', 'api_key_name', 'kind', 'status', 'hour', 'day', 'hour_epoch'] as const;
export type Dim = (typeof DIMS)[number];

export interface Filters {
  readonly provider?: string;
  readonly model?: string;
  readonly combo?: string;
  readonly apiKey?: string;
  readonly status?: string;
  /** Row kinds to include (default: all). See usage/record.ts for which kinds count what. */
  readonly kinds?: readonly RecordKind[];
}

export interface AggregateQuery {
  readonly from: number;
  readonly to: number;
  readonly by?: readonly Dim[];
  readonly filters?: Filters;
  readonly tz?: string;
  /** `to` is the real present: no row starts later, so the current hour may come from the rollup whole. */
  readonly openEnd?: boolean;
  /**
   * The sums to read (default: all). A read of fewer columns is planned and run faster by the engine (about a quarter
   * for the overview's four); the fields not read are NaN in the result, so a use of one shows (as null in JSON).
   */
  readonly sums?: readonly SumField[];
}

export interface Sums {
  readonly rows: number;
  readonly input: number;
  readonly cached: number;
  readonly cacheWrite: number;
  readonly output: number;
  readonly reasoning: number;
  readonly tokens: number;
  /** USD, summed exactly in ClickHouse (Decimal) and returned as a number. */
  readonly cost: number;
  readonly listCost: number;
  readonly durationMs: number;
  /** Epoch ms of the oldest row counted; null when none. */
  readonly oldest: number | null;
  /** Rows of unknown cost (a paid model with no price anywhere that spent tokens; docs/catalog.md). */
  readonly unpriced: number;
  /** Rows whose request went out upstream (`dispatched`): the calls a request quota counts (docs/quota.md). */
  readonly dispatched: number;
}

export type Group = Sums & { readonly [K in Dim]?: string };


const DIM_SQL: Record<Dim, string> = {
  provider: 'provider', provider_group: 'provider_group', model: 'model', combo: 'combo', api_key_name: 'api_key_name',
  kind: 'kind', status: 'status',
  hour: `toString(toStartOfHour(hour, {tz:String}))`,
  day: `toString(toDate(hour, {tz:String}))`,
  /** The UTC hour as Unix seconds: cheaper than formatting when the caller only compares instants. */
  hour_epoch: 'toUnixTimestamp(hour)',
};

/** The dimensions that are columns of the rollups and of the raw rows alike. */
const PLAIN_DIMS: readonly Dim[] = ['provider', 'provider_group', 'model', 'combo', 'api_key_name', 'kind', 'status'];

/** A field of Sums, as a read can ask for it. */
export type SumField = keyof Sums;

/**
 * Each sum: its rollup column, its outer aggregate, the expression giving the column from a raw row, and the raw
 * columns that expression reads.
 */
const SUM_SQL: Record<SumField, { readonly column: string; readonly outer: string; readonly raw: string; readonly reads: string }> = {
  rows: { column: 'rows', outer: 'sum(rows) AS rows', raw: 'toUInt64(1) AS rows', reads: '' },
  input: { column: 'input_tokens', outer: 'sum(input_tokens) AS input', raw: 'ifNull(input_tokens, 0) AS input_tokens', reads: 'input_tokens' },
  cached: { column: 'cached_tokens', outer: 'sum(cached_tokens) AS cached', raw: 'ifNull(cached_tokens, 0) AS cached_tokens', reads: 'cached_tokens' },
  cacheWrite: {
    column: 'cache_write_tokens', outer: 'sum(cache_write_tokens) AS cache_write', raw: 'ifNull(cache_write_tokens, 0) AS cache_write_tokens', reads: 'cache_write_tokens',
  },
  output: { column: 'output_tokens', outer: 'sum(output_tokens) AS output', raw: 'ifNull(output_tokens, 0) AS output_tokens', reads: 'output_tokens' },
  reasoning: { column: 'reasoning_tokens', outer: 'sum(reasoning_tokens) AS reasoning', raw: 'ifNull(reasoning_tokens, 0) AS reasoning_tokens', reads: 'reasoning_tokens' },
  tokens: { column: 'total_tokens', outer: 'sum(total_tokens) AS tokens', raw: 'total_tokens', reads: 'total_tokens' },
  cost: { column: 'cost', outer: 'toString(sum(cost)) AS cost', raw: 'toDecimal128(cost, 12) AS cost', reads: 'cost' },
  listCost: { column: 'list_cost', outer: 'toString(sum(list_cost)) AS list_cost', raw: 'toDecimal128(list_cost, 12) AS list_cost', reads: 'list_cost' },
  durationMs: { column: 'duration_ms', outer: 'sum(duration_ms) AS duration_ms', raw: 'duration_ms', reads: 'duration_ms' },
  oldest: { column: 'min_ts', outer: 'toUnixTimestamp64Milli(min(min_ts)) AS oldest', raw: 'ts AS min_ts', reads: '' },
  unpriced: { column: 'unpriced_rows', outer: 'sum(unpriced_rows) AS unpriced', raw: `toUInt64(${unpricedSql()}) AS unpriced_rows`, reads: 'provider_group, price_source, total_tokens' },
  dispatched: { column: 'dispatched_rows', outer: 'sum(dispatched_rows) AS dispatched', raw: 'toUInt64(dispatched) AS dispatched_rows', reads: 'dispatched' },
};
const ALL_SUMS = Object.keys(SUM_SQL) as SumField[];

/** What a read of rowsOf returns besides `hour`: plain dimensions and sums. */
interface Columns {
  readonly dims: readonly Dim[];
  readonly sums: readonly SumField[];
  /** The hour of a raw row (default: its UTC hour). */
  readonly rawHour?: string;
}

export function filterSql(f: Filters): string {
  const parts: string[] = [];
  if (f.provider !== undefined) parts.push('provider = {f_provider:String}');
  if (f.model !== undefined) parts.push('model = {f_model:String}');
  if (f.combo !== undefined) parts.push('combo = {f_combo:String}');
  if (f.apiKey !== undefined) parts.push('api_key_name = {f_key:String}');
  if (f.status !== undefined) parts.push('status = {f_status:String}');
  if (f.kinds !== undefined) parts.push('kind IN {f_kinds:Array(String)}');
  return parts.length === 0 ? '1' : parts.join(' AND ');
}

export interface RawGroup {
  [k: string]: string | number | null;
}

export const num = (v: unknown): number => Number(v ?? 0);

/**
 * The raw rows matching `where`, each request once (a retried insert is the same row twice). Only `columns` are read
 * (every further column of every part read costs the engine time). Two forms with the same rows:
 * - LIMIT 1 BY request_id (the default): the deduplication runs on the matching rows only, through a hash of their
 *   ids; the cheaper form for an hour or less, and for a filter that matches few of the rows read.
 * - `broad`: FINAL, which merges the parts' rows in their sort order (toStartOfHour(ts), request_id) instead of
 *   hashing every id; at 10M rows, the 165,634 rows of a local day so far summed by hour took 11.7 ms through FINAL
 *   against 43.2 through LIMIT 1 BY (docs/benchmarks.md, "Raw rows over hours: FINAL").
 */
export function deduped(store: Store, where: string, columns: string, broad = false): string {
  return broad
    ? `(SELECT ${columns} FROM ${store.t('requests')} FINAL WHERE ${where})`
    : `(SELECT ${columns} FROM ${store.t('requests')} WHERE ${where} LIMIT 1 BY request_id)`;
}

/** Raw ranges longer than this (in all) are read through FINAL (`deduped`, `broad`). */
const BROAD_RAW_MS = 2 * HOUR_MS;

interface Bounds {
  readonly from: number;
  readonly a: number;
  readonly c: number;
  readonly d: number;
  readonly b: number;
  readonly to: number;
}

/** A source of a read: a rollup's rows, or the raw rows (each request once), with the condition it is read with. */
interface Source {
  readonly table: 'usage_daily' | 'usage_hourly' | 'requests';
  readonly where: string;
  /** Raw rows: deduplicated through FINAL (`deduped`). */
  readonly broad: boolean;
}

/**
 * The sources of a read of [from, to) split as `split` splits it: the daily rollup for the whole days [c, d), the
 * hourly rollup for the other whole hours [a, c) and [d, b), the raw rows for [from, a) and [b, to). A source whose
 * ranges are empty is left out (each one read costs the engine ~10 ms even when it reads nothing); when all are, the
 * raw rows' (empty) ranges stand for the read. Parameters: from, a, c, d, b, to (epoch ms), and those of `where`.
 */
function sourcesOf(where: string, s: Bounds): Source[] {
  const at = (p: string) => `fromUnixTimestamp64Milli({${p}:Int64}, 'UTC')`;
  const raw: Source = {
    table: 'requests', where: `((ts >= ${at('from')} AND ts < ${at('a')}) OR (ts >= ${at('b')} AND ts < ${at('to')})) AND ${where}`,
    broad: s.a - s.from + (s.to - s.b) > BROAD_RAW_MS,
  };
  const out: Source[] = [
    ...(s.c < s.d ? [{ table: 'usage_daily' as const, where: `day >= ${at('c')} AND day < ${at('d')} AND ${where}`, broad: false }] : []),
    ...(s.a < s.c || s.d < s.b
      ? [{ table: 'usage_hourly' as const, where: `((hour >= ${at('a')} AND hour < ${at('c')}) OR (hour >= ${at('d')} AND hour < ${at('b')})) AND ${where}`, broad: false }]
      : []),
    ...(s.from < s.a || s.b < s.to ? [raw] : []),
  ];
  return out.length === 0 ? [raw] : out;
}

/**
 * The rows of every source (`sourcesOf`) in the rollups' columns (a raw row as a one-row group; a day's row has its
 * first hour): what every sum reads, with `hour`, the dimensions and the sums of `cols` only.
 */
export function rowsOf(store: Store, where: string, s: Bounds, cols: Columns): string {
  const dims = cols.dims.map((d) => `, ${d}`).join('');
  const sums = cols.sums.map((f) => SUM_SQL[f].column).join(', ');
  return sourcesOf(where, s).map((src) => src.table === 'requests'
    ? `
      SELECT ${cols.rawHour ?? 'toStartOfHour(ts)'} AS hour${dims}, ${cols.sums.map((f) => SUM_SQL[f].raw).join(', ')}
      FROM ${deduped(store, src.where, rawColumns(cols), src.broad)}`
    : `
      SELECT ${src.table === 'usage_daily' ? 'day AS hour' : 'hour'}${dims}, ${sums}
      FROM ${store.t(src.table)}
      WHERE ${src.where}`).join('\n      UNION ALL');
}

/**
 * The sources (`sourcesOf`) summed apart: each SELECT sums the rows of the table it reads by their hour or day (`at_s`,
 * Unix seconds) and `cols.dims`, with `tag` (constant columns, such as `0 AS edge`) before the sums, which are named
 * as `aggregate` names them. For a caller that keeps the sources apart (it tells rows apart by their time, and a
 * source's hours and days are its own): a read with no GROUP BY over the sources' union is planned and run faster by
 * this engine (the quota's read 44 -> 38 ms p50 at 10M rows; docs/benchmarks.md).
 */
export function summedSourcesOf(store: Store, where: string, s: Bounds, cols: Columns, tag: string): string[] {
  const dims = cols.dims.map((d) => `, ${d}`).join('');
  const sums = cols.sums.map((f) => SUM_SQL[f].outer).join(', ');
  return sourcesOf(where, s).map((src) => src.table === 'requests'
    ? summedRaw(store, src.where, cols, tag, src.broad)
    : `
      SELECT toUnixTimestamp(${src.table === 'usage_daily' ? 'day' : 'hour'}) AS at_s${dims}, ${tag}, ${sums}
      FROM ${store.t(src.table)}
      WHERE ${src.where}
      GROUP BY at_s${dims}`);
}

/**
 * The raw rows matching `where`, each request once, summed as summedSourcesOf sums a source (`broad`: `deduped`);
 * `alsoBy`: a further expression grouped by (not selected), such as `ts` for a group per request time.
 */
export function summedRaw(store: Store, where: string, cols: Columns, tag: string, broad = false, alsoBy = ''): string {
  const dims = cols.dims.map((d) => `, ${d}`).join('');
  // Each sum's outer aggregate over its raw expression: sum(total_tokens), toString(sum(toDecimal128(cost, 12))), ...
  const sums = cols.sums.map((f) => {
    const { column, outer, raw } = SUM_SQL[f];
    return outer.replace(`(${column})`, `(${raw.replace(/ AS \w+$/, '')})`);
  });
  return `
      SELECT toUnixTimestamp(${cols.rawHour ?? 'toStartOfHour(ts)'}) AS at_s${dims}, ${tag}, ${sums.join(', ')}
      FROM ${deduped(store, where, rawColumns(cols), broad)}
      GROUP BY at_s${dims}${alsoBy === '' ? '' : `, ${alsoBy}`}`;
}

/** The raw columns a read of `cols` needs (every further column of every part read costs the engine time). */
function rawColumns(cols: Columns): string {
  return [...new Set(['request_id', 'ts', ...cols.dims, ...cols.sums.flatMap((f) => SUM_SQL[f].reads.split(', ').filter(Boolean))])].join(', ');
}

/**
 * How rowsOf splits a window [from, to): the rollup hours [a, b), and in them the rollup days [c, d) (empty when
 * `cuts` is null: the caller needs hours). A day's row is one row, so no instant a caller tells rows apart by (a
 * window edge inside the read: `cuts`) may fall inside a day taken from the daily rollup: the days end before the
 * first such instant that is not a midnight. With `openEnd` no row starts at or after `to`, so a cut there parts no
 * rows.
 */
export function split(from: number, to: number, openEnd: boolean | undefined, cuts: readonly number[] | null): { a: number; b: number; c: number; d: number } {
  let a = Math.ceil(from / HOUR_MS) * HOUR_MS;
  // A window that ends now (`openEnd`) takes its current hour, and its current day, from the rollups too: the views
  // keep both up to date with every insert and no row starts after now, so the raw rows are only read for the first
  // edge, and a report of whole days to now (today, this week, this month) reads the daily rollup alone (one table a
  // read less: about a third of the overview's time, docs/benchmarks.md).
  let b = (openEnd ? Math.ceil(to / HOUR_MS) : Math.floor(to / HOUR_MS)) * HOUR_MS;
  if (a >= b) a = b = from;
  const c = Math.ceil(a / DAY_MS) * DAY_MS;
  let d = (openEnd ? Math.ceil(b / DAY_MS) : Math.floor(b / DAY_MS)) * DAY_MS;
  for (const x of cuts ?? []) if (x > c && x < d && x % DAY_MS !== 0 && !(openEnd && x >= to)) d = Math.floor(x / DAY_MS) * DAY_MS;
  if (cuts === null || c >= d) return { a, b, c: a, d: a };
  return { a, b, c, d };
}

/**
 * Whether `tz` is a whole number of hours from UTC throughout [from, to), so that its hours are UTC hours (checked
 * hourly, or at 500 instants over a longer window: a zone's offset changes twice a year at most).
 */
function wholeHourZone(tz: string, from: number, to: number): boolean {
  if (tz === 'UTC') return true;
  const step = Math.max(HOUR_MS, Math.ceil((to - from) / 500));
  for (let t = from; t < to; t += step) if (localTime(tz, t).offsetMin % 60 !== 0) return false;
  return localTime(tz, Math.max(from, to - 1)).offsetMin % 60 === 0;
}

/** Sums of the rows whose start time is in [from, to), grouped by `by`. */
export async function aggregate(store: Store, q: AggregateQuery): Promise<Group[]> {
  return (await grouped(store, q, null)).map((r) => r.group);
}

/** How aggregateWindows splits the rows: an expression giving each row's window index (arrayJoin), and its params. */
interface WindowSplit {
  readonly sql: string;
  readonly params: Record<string, unknown>;
  /** The windows' edges: a row of the daily rollup must not straddle one. */
  readonly cuts: readonly number[];
}

async function grouped(store: Store, q: AggregateQuery, windows: WindowSplit | null): Promise<{ window: number; group: Group }[]> {
  const by = q.by ?? [];
  for (const d of by) if (!(DIMS as readonly string[]).includes(d)) throw new Error(`unknown dimension '${d}'`);
  // The whole hours [a, b) come from the rollup; [from, a) and [b, to) from the raw rows.
  // Days from the daily rollup unless a group needs the hour (or a day that is not a UTC day).
  // ClickHouse takes a zone in its own spelling only (not `asia/kolkata`, which Intl and the client's echo take): the
  // canonical name, which its zone data has too (`Asia/Calcutta` for `Asia/Kolkata`).
  const tz = q.tz === undefined ? 'UTC' : (parseTimeZone(q.tz) ?? q.tz);
  const hourly = by.some((d) => d === 'hour' || d === 'hour_epoch' || (d === 'day' && tz !== 'UTC'));
  // A zone off the whole hour (+05:30): a rollup hour straddles two of its hours (and, at midnight, two of its days),
  // so no rollup source: every row of the window is read raw ([from, to) as the raw edge), in its own hour in the zone.
  const offGrid = hourly && !wholeHourZone(tz, q.from, q.to);
  const { a, b, c, d } = offGrid ? { a: q.from, b: q.from, c: q.from, d: q.from } : split(q.from, q.to, q.openEnd, hourly ? null : (windows?.cuts ?? []));
  const where = filterSql(q.filters ?? {});
  const keys = [...(windows === null ? [] : ['w_index']), ...by];
  const select = [...(windows === null ? [] : [`${windows.sql} AS w_index`]), ...by.map((d) => `${DIM_SQL[d]} AS ${d}`)];
  // `rows` always: a group with none is dropped below.
  const sums = q.sums === undefined ? ALL_SUMS : ALL_SUMS.filter((f) => f === 'rows' || q.sums!.includes(f));
  const sql = `
    SELECT ${[...select, ...sums.map((f) => SUM_SQL[f].outer)].join(', ')}
    FROM (${rowsOf(store, where, { from: q.from, a, c, d, b, to: q.to }, { dims: PLAIN_DIMS.filter((x) => by.includes(x)), sums, ...(offGrid ? { rawHour: 'toStartOfHour(ts, {tz:String})' } : {}) })})
    ${keys.length > 0 ? `GROUP BY ${keys.join(', ')} ORDER BY ${keys.join(', ')}` : ''}`;
  const f = q.filters ?? {};
  const rows = await store.query<RawGroup>(sql, {
    from: q.from, to: q.to, a, b, c, d, tz,
    f_provider: f.provider, f_model: f.model, f_combo: f.combo, f_key: f.apiKey, f_status: f.status, f_kinds: f.kinds,
    ...(windows?.params ?? {}),
  });
  const read = new Set<SumField>(sums);
  // A sum not read is NaN (null in JSON): never a plausible 0.
  const n = (field: SumField, v: unknown): number => (read.has(field) ? num(v) : NaN);
  return rows
    .filter((r) => num(r.rows) > 0)
    .map((r) => {
      const g: Record<string, unknown> = {};
      for (const d of by) g[d] = String(r[d]);
      const group = {
        ...g,
        rows: num(r.rows), input: n('input', r.input), cached: n('cached', r.cached), cacheWrite: n('cacheWrite', r.cache_write),
        output: n('output', r.output), reasoning: n('reasoning', r.reasoning), tokens: n('tokens', r.tokens), cost: n('cost', r.cost),
        listCost: n('listCost', r.list_cost), durationMs: n('durationMs', r.duration_ms),
        oldest: !read.has('oldest') ? NaN : r.oldest === null || num(r.rows) === 0 ? null : num(r.oldest), unpriced: n('unpriced', r.unpriced),
        dispatched: n('dispatched', r.dispatched),
      } as Group;
      return { window: num(r.w_index), group };
    });
}

export interface WindowsQuery extends Omit<AggregateQuery, 'from' | 'to'> {
  /** Windows that start on an hour and end on one or together (the day, week and month to now). */
  readonly windows: readonly { readonly from: number; readonly to: number }[];
}

/**
 * `aggregate` for several windows in ONE read instead of one per window: the rows of their union are read once (the
 * rollup's whole hours, raw rows at the edges) and each is counted in every window that holds its hour. That is exact
 * when every window starts on an hour and ends on one or at the union's end; other windows are read one by one.
 * Groups per window, in the windows' order.
 */
export async function aggregateWindows(store: Store, q: WindowsQuery): Promise<Group[][]> {
  const from = Math.min(...q.windows.map((w) => w.from));
  const to = Math.max(...q.windows.map((w) => w.to));
  const exact = q.windows.every((w) => w.from % HOUR_MS === 0 && (w.to === to || w.to % HOUR_MS === 0));
  if (!exact || q.windows.length <= 1) return Promise.all(q.windows.map((w) => aggregate(store, { ...q, from: w.from, to: w.to })));
  const params: Record<string, unknown> = {};
  const member = q.windows.map((w, i) => {
    params[`w_from${i}`] = w.from;
    params[`w_to${i}`] = w.to;
    const end = w.to === to ? '' : ` AND hour < fromUnixTimestamp64Milli({w_to${i}:Int64}, 'UTC')`;
    return `if(hour >= fromUnixTimestamp64Milli({w_from${i}:Int64}, 'UTC')${end}, ${i}, -1)`;
  });
  const rows = await grouped(store, { ...q, from, to }, {
    sql: `arrayJoin(arrayFilter(i -> i >= 0, [${member.join(', ')}]))`, params, cuts: q.windows.flatMap((w) => [w.from, w.to]),
  });
  const out: Group[][] = q.windows.map(() => []);
  for (const r of rows) out[r.window]?.push(r.group);
  return out;
}

/** The one group of an ungrouped aggregate (all zeros when nothing matched). */
export async function total(store: Store, q: Omit<AggregateQuery, 'by'>): Promise<Sums> {
  const [g] = await aggregate(store, q);
  return g ?? { rows: 0, input: 0, cached: 0, cacheWrite: 0, output: 0, reasoning: 0, tokens: 0, cost: 0, listCost: 0, durationMs: 0, oldest: null, unpriced: 0, dispatched: 0 };
}
