// The rollups made whole after a kill inside an insert (docs/recording.md, "A kill between the insert and the
// delete"). ClickHouse writes an insert's part of `requests` and then its views' parts (usage_hourly, then
// usage_daily from it), with no transaction across them: a process killed in between leaves rows in `requests` that a
// rollup lacks. A leftover segment whose rows are all in `requests` is not inserted again (the embedded engine would
// count it twice in the views after its restart, where the view's part had landed), and this is done instead: for the
// hours and days of the segment's rows, what the truth has and the rollup lacks is added to the rollup, key by key; a
// key where the rollup is whole (or ahead) is left. The daily rollup is made whole from the hourly one first, then
// the hourly from `requests` (whose additions reach the daily rollup through its view).

import { settingsClause, type Store } from './client.js';
import { ROLLUP_COUNTS, ROLLUP_DIMENSIONS as DIMS, ROLLUP_SUM_COLUMNS, dailySelect, rollupSelect } from './rollup-sql.js';
import { DAY_MS, HOUR_MS } from '../core/windows.js';
import { rowOf, type RowLines } from './segment.js';

const SUMS = [...ROLLUP_SUM_COLUMNS, ...ROLLUP_COUNTS] as const;

/** `column` in [lo, hi) (epoch ms, integers this module computed). */
const within = (column: string, lo: number, hi: number): string =>
  `${column} >= fromUnixTimestamp64Milli(toInt64(${lo}), 'UTC') AND ${column} < fromUnixTimestamp64Milli(toInt64(${hi}), 'UTC')`;

// Not deduplicated: each pass adds only what is still missing, so a pass repeated after a failure adds nothing twice.
const NO_DEDUP = settingsClause({ insert_deduplicate: 0, insert_deduplication_token: '' });

/** Add to `table` what `truth` has and the table lacks in [lo, hi), per key (its time column and the dimensions). */
function shortfall(store: Store, table: string, time: 'hour' | 'day', truth: string, lo: number, hi: number): string {
  const keys = [time, ...DIMS];
  const current = `SELECT ${keys.join(', ')}, ${SUMS.map((s) => `sum(${s}) AS ${s}`).join(', ')}
    FROM ${store.t(table)} WHERE ${within(time, lo, hi)} GROUP BY ${keys.join(', ')}`;
  return `INSERT INTO ${store.t(table)} (${[...keys, ...SUMS, 'min_ts'].join(', ')}) ${NO_DEDUP}
    SELECT ${keys.map((k) => `t.${k}`).join(', ')}, ${SUMS.map((s) => `t.${s} - c.${s}`).join(', ')}, t.min_ts
    FROM (${truth}) AS t LEFT JOIN (${current}) AS c ON ${keys.map((k) => `t.${k} = c.${k}`).join(' AND ')}
    WHERE t.rows > c.rows AND ${SUMS.map((s) => `t.${s} >= c.${s}`).join(' AND ')}`;
}

/**
 * The span of the start times (`ts`, epoch ms) of a segment's rows, or null when a row has none: it bounds
 * settleLanded's read to the hours the rows can be in.
 */
export function startSpan({ columns, lines }: RowLines): { lo: number; hi: number } | null {
  return rowsSpan(lines.map((line) => rowOf<Record<string, unknown>>(line, columns) ?? {}));
}

/** The span of the rows' start times (`ts`, epoch ms), or null when one has none. */
export function rowsSpan(rows: readonly Readonly<Record<string, unknown>>[]): { lo: number; hi: number } | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const { ts } of rows) {
    if (typeof ts !== 'number' || !Number.isSafeInteger(ts)) return null;
    if (ts < lo) lo = ts;
    if (ts > hi) hi = ts;
  }
  return lo <= hi ? { lo, hi } : null;
}

/** A read of `requests` by request ids: the ids (deduplicated, none empty) and the condition, bounded to `span` when known. */
function byIds(ids: readonly string[], span: { lo: number; hi: number } | null): { wanted: string[]; where: string; params: Record<string, unknown> } {
  const wanted = [...new Set(ids.filter((id) => id !== ''))];
  const bound = span === null ? '' : ` AND ts >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND ts <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC')`;
  return { wanted, where: `toString(request_id) IN {ids:Array(String)}${bound}`, params: { ids: wanted, ...(span ?? {}) } };
}

/**
 * A leftover segment's rows, `ids`: are they all in `requests` already? If so, the rollups are made whole for their
 * hours and days (see above) and the answer is true: the writer deletes the segment without inserting it. One read of
 * `requests` answers both (the count of the ids found, and their time span). `span`, the rows' start times
 * (startSpan), keeps that read to the parts and hours they can be in (without it, every row of the table is read).
 */
export async function settleLanded(store: Store, ids: readonly string[], span: { lo: number; hi: number } | null = null): Promise<boolean> {
  const { wanted, where, params } = byIds(ids, span);
  if (wanted.length === 0) return false;
  const [found] = await store.query<{ n: string | number; lo: string | number; hi: string | number }>(
    `SELECT uniqExact(request_id) AS n, toUnixTimestamp64Milli(min(ts)) AS lo, toUnixTimestamp64Milli(max(ts)) AS hi
     FROM ${store.t('requests')} WHERE ${where}`,
    params,
  );
  if (found === undefined || Number(found.n) !== wanted.length) return false;
  await repairRollups(store, Number(found.lo), Number(found.hi));
  return true;
}

/** Make the rollups whole for the hours and days from `first` to `last` (epoch ms, the rows' start times). */
async function repairRollups(store: Store, first: number, last: number): Promise<void> {
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last)) throw new Error(`no time span for the rollups' repair: ${first}, ${last}`);
  const lo = Math.floor(first / HOUR_MS) * HOUR_MS;
  const hi = Math.floor(last / HOUR_MS) * HOUR_MS + HOUR_MS;
  const dlo = Math.floor(lo / DAY_MS) * DAY_MS;
  const dhi = Math.ceil(hi / DAY_MS) * DAY_MS;
  const hours = `SELECT * FROM ${store.t('usage_hourly')} WHERE ${within('hour', dlo, dhi)}`;
  await store.command(shortfall(store, 'usage_daily', 'day', dailySelect(`(${hours})`, ROLLUP_COUNTS), dlo, dhi));
  const raw = `SELECT * FROM ${store.t('requests')} FINAL WHERE ${within('ts', lo, hi)}`;
  await store.command(shortfall(store, 'usage_hourly', 'hour', rollupSelect(`(${raw})`, ROLLUP_COUNTS), lo, hi));
}

/**
 * Which of `ids` have a row in `requests` (the requests an earlier process left in flight: the writer's `storedOf`),
 * the read bounded to `span` of their start times when known. One read.
 */
export async function storedRequests(store: Store, ids: readonly string[], span: { lo: number; hi: number } | null): Promise<ReadonlySet<string>> {
  const { wanted, where, params } = byIds(ids, span);
  if (wanted.length === 0) return new Set();
  const found = await store.query<{ id: string }>(`SELECT DISTINCT toString(request_id) AS id FROM ${store.t('requests')} WHERE ${where}`, params);
  return new Set(found.map((r) => r.id));
}
