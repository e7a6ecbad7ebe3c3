// The request log's numbers (store/logs.ts lists the pages): a request's number is its 1-based place among the client
// requests of its UTC day, by start time then request_id, counted from the hourly rollup's whole hours and the raw
// rows after them (dayNumbers) or, on the newest page, from the day's count its own read took (numbersFrom).

import type { Store } from './client.js';
import { DAY_MS, HOUR_MS } from '../core/windows.js';
import { CLIENT_KINDS, kindsSql } from '../ledger/record.js';

/** The request log's rows: what clients asked for (requests and combos; a combo's attempts are shown under it). */
export const CLIENT_ROWS = kindsSql(CLIENT_KINDS);

/** A row of a page as its number needs it. */
interface Start {
  readonly request_id: string;
  readonly ts: number;
}

/**
 * Each row's number on a page that holds every client request newer than its oldest row, `page` newest first (as the
 * page's read returns it): its day's count (`totals`, store/logs.ts, firstReadSql) less the page's rows of that day
 * before it in `page`. null when a day of the page has no count, or a count below the page's rows of that day (a
 * rollup that does not hold every row: then dayNumbers counts).
 */
export function numbersFrom(page: readonly Start[], totals: unknown): Map<string, number> | null {
  if (!Array.isArray(totals)) return null;
  const count = new Map<number, number>();
  for (const pair of totals) {
    if (!Array.isArray(pair) || pair.length !== 2) return null;
    count.set(Number(pair[0]) * 1000, Number(pair[1]));
  }
  const above = new Map<number, number>();
  const out = new Map<string, number>();
  for (const r of page) {
    const day = Math.floor(r.ts / DAY_MS) * DAY_MS;
    const k = above.get(day) ?? 0;
    const n = (count.get(day) ?? 0) - k;
    if (!Number.isSafeInteger(n) || n < 1) return null;
    out.set(r.request_id, n);
    above.set(day, k + 1);
  }
  return out;
}

/**
 * The request number of each row: its 1-based position among all client requests of its UTC day, by start time then
 * request_id. Filters do not change it (it names the request, not its place in a listing).
 *
 * One read whose cost does not grow with the traffic before the page: per day of the page, the requests before the
 * hour of the page's oldest row that day are counted from the hourly rollup (whole hours; the count every usage report
 * gives), those from that hour to the oldest row are counted (each request once), and only the requests between the
 * page's oldest and newest rows are ranked (each once: LIMIT 1 BY on the matching rows). Ranking from the hour's
 * start instead sorted every request of that hour: a busy gateway's hour is hundreds of thousands. `contiguous`: the
 * rows are a page of every client request between its ends (an unfiltered page: its bounds are a time range), so
 * nothing is ranked: a row's number is the day's count before the page's oldest row plus its place on the page.
 */
export async function dayNumbers(
  store: Store, rows: readonly Start[], opts: { contiguous?: boolean } = {},
): Promise<Map<string, number>> {
  if (rows.length === 0) return new Map();
  const days = byDay(rows);
  const params: Record<string, unknown> = {};
  if (opts.contiguous === true) {
    // The page is every client request between its ends: each row's place on it, after the day's count before it.
    const firsts = [...days].map(([day, list]) => ({ day, ts: list[0]!.ts, id: list[0]!.request_id }));
    const got = await store.query<{ day: string | number; n: string | number }>(
      `SELECT toUnixTimestamp(toDateTime(day, 'UTC')) AS day, n FROM (${countsBefore(store, firsts, params)})`, params,
    );
    const base = new Map(got.map((r) => [Number(r.day) * 1000, Number(r.n)]));
    const out = new Map<string, number>();
    for (const [day, list] of days) list.forEach((r, i) => out.set(r.request_id, (base.get(day) ?? 0) + i + 1));
    return out;
  }
  // The requests between the page's oldest and newest rows of each day are ranked (each once: LIMIT 1 BY).
  const ranked = [...days].map(([, list], i) => {
    Object.assign(params, { [`r${i}`]: list[0]!.ts, [`m${i}`]: list[list.length - 1]!.ts });
    return `(ts >= ${at(`r${i}`)} AND ts <= ${at(`m${i}`)})`;
  });
  const firsts = [...days].map(([day, list]) => ({ day, ts: list[0]!.ts }));
  const got = await store.query<{ id: string; number: string | number }>(
    `SELECT r.id AS id, r.number + b.n AS number FROM (
       SELECT toString(request_id) AS id, toDate(ts) AS day,
         row_number() OVER (PARTITION BY toDate(ts) ORDER BY ts, toString(request_id)) AS number
       FROM (SELECT request_id, ts FROM ${store.t('requests')} WHERE ${CLIENT_ROWS} AND (${ranked.join(' OR ')}) LIMIT 1 BY request_id)
     ) AS r
     LEFT JOIN (${countsBefore(store, firsts, params)}) AS b ON r.day = b.day
     WHERE r.id IN {ids:Array(String)}`,
    { ...params, ids: rows.map((r) => r.request_id) },
  );
  return new Map(got.map((r) => [r.id, Number(r.number)]));
}

const at = (p: string): string => `fromUnixTimestamp64Milli({${p}:Int64}, 'UTC')`;

/**
 * The rows by UTC day (epoch ms of its midnight), each day's in start order: start time, then the id as text, as the
 * engine orders them (lowercase hex: JavaScript's string order is its byte order).
 */
function byDay(rows: readonly Start[]): Map<number, Start[]> {
  const days = new Map<number, Start[]>();
  for (const r of rows) {
    const day = Math.floor(r.ts / DAY_MS) * DAY_MS;
    const list = days.get(day);
    if (list === undefined) days.set(day, [r]);
    else list.push(r);
  }
  for (const list of days.values()) list.sort((a, b) => a.ts - b.ts || (a.request_id < b.request_id ? -1 : a.request_id > b.request_id ? 1 : 0));
  return days;
}

/**
 * A query giving, per UTC day (`day`, a Date), the count `n` of the day's client requests that started before the
 * given instant `ts` of that day: the hourly rollup's whole hours before the instant's hour, then the rows from that
 * hour's start, each once. With an `id`, the rows of that very millisecond whose id sorts before it count too (a page
 * that is not ranked starts at that row). Its parameters are added to `params`.
 */
function countsBefore(store: Store, firsts: readonly { day: number; ts: number; id?: string }[], params: Record<string, unknown>): string {
  const before: string[] = [];
  const counted: string[] = [];
  firsts.forEach((f, i) => {
    Object.assign(params, { [`d${i}`]: f.day, [`h${i}`]: Math.floor(f.ts / HOUR_MS) * HOUR_MS, [`l${i}`]: f.ts, ...(f.id === undefined ? {} : { [`o${i}`]: f.id }) });
    before.push(`(hour >= ${at(`d${i}`)} AND hour < ${at(`h${i}`)})`);
    const tie = f.id === undefined ? '' : ` OR (ts = ${at(`l${i}`)} AND toString(request_id) < {o${i}:String})`;
    counted.push(`(ts >= ${at(`h${i}`)} AND (ts < ${at(`l${i}`)}${tie}))`);
  });
  return `SELECT day, sum(n) AS n FROM (
       SELECT toDate(hour) AS day, sum(rows) AS n FROM ${store.t('usage_hourly')} WHERE ${CLIENT_ROWS} AND (${before.join(' OR ')}) GROUP BY day
       UNION ALL
       SELECT toDate(ts) AS day, uniqExact(request_id) AS n FROM ${store.t('requests')} WHERE ${CLIENT_ROWS} AND (${counted.join(' OR ')}) GROUP BY day
     ) GROUP BY day`;
}
