// Raw-row reads for the request log (the only reads that list rows rather than sum them: sums go through
// aggregate.ts). A row inserted twice is listed once: FINAL for the pages, LIMIT 1 BY request_id for a page's
// attempts. Pages are keyset-paginated on (ts, request_id), newest first, so rows inserted while a client pages
// through never shift a page.

import type { Store } from './client.js';
import { DAY_MS, HOUR_MS } from '../core/windows.js';
import { CLIENT_ROWS, numbersFrom } from './log-numbers.js';

export type DetailStatus = 'success' | 'failure' | 'aborted' | 'interrupted';

export interface LogFilters {
  readonly provider?: string;
  readonly model?: string;
  readonly combo?: string;
  readonly apiKey?: string;
  /** `failure` includes `aborted`. */
  readonly status?: DetailStatus;
  /** Start time in [from, to), epoch ms. */
  readonly from?: number;
  readonly to?: number;
}

/** A position in the newest-first listing: the last row of the previous page. */
export interface LogCursor {
  readonly ts: number;
  readonly id: string;
}

export interface LogRow {
  readonly request_id: string;
  readonly kind: string;
  readonly parent_id: string;
  readonly combo: string;
  readonly attempt: number;
  /** Epoch ms. */
  readonly ts: number;
  readonly end_ts: number;
  readonly endpoint: string;
  readonly provider: string;
  readonly provider_group: string;
  readonly connection: string;
  readonly auto_switched: boolean;
  readonly model: string;
  readonly requested_model: string;
  readonly api_key_name: string;
  readonly stream: boolean;
  readonly status: DetailStatus;
  readonly http_status: number;
  readonly error_type: string;
  readonly input_tokens: number | null;
  readonly cached_tokens: number | null;
  readonly cache_write_tokens: number | null;
  /** Of cache_write_tokens, those written for an hour (null: not reported); the full record only. */
  readonly cache_write_1h_tokens: number | null;
  /** Web searches the provider billed per search (null: none reported); the full record only. */
  readonly web_search_requests: number | null;
  /** The service tier the provider served the call at, '' for its standard one; the full record only. */
  readonly service_tier: string;
  /** Of input_tokens and of output_tokens, the audio tokens (0: none); the full record only. */
  readonly audio_input_tokens: number;
  readonly audio_output_tokens: number;
  readonly output_tokens: number | null;
  readonly reasoning_tokens: number | null;
  readonly total_tokens: number;
  readonly usage_source: string;
  /** Billed USD as recorded: 0 stands for "unknown" when no price covered a paid model (`price_source`, docs/catalog.md). */
  readonly cost: number;
  readonly list_cost: number;
  /** Where the price came from: `config`, `catalog@<version>`, `genai-prices@<version>`, `none` (no price anywhere); '' when not recorded. */
  readonly price_source: string;
  readonly duration_ms: number;
  readonly ttft_ms: number | null;
  readonly upstream_ms: number | null;
  /** The request's trace id ('' when it had none). */
  readonly trace_id: string;
}

/** What the compact record (`/api/usage/logs`) shows of a row; `LogRow` is the full record. */
export type CompactRow = Pick<
  LogRow,
  'request_id' | 'kind' | 'combo' | 'ts' | 'provider' | 'provider_group' | 'model' | 'requested_model' | 'stream' | 'status' | 'http_status' |
  'input_tokens' | 'cached_tokens' | 'cache_write_tokens' | 'output_tokens' | 'reasoning_tokens' | 'total_tokens' | 'cost' | 'price_source' |
  'duration_ms'
>;

// Computed columns get names of their own: an alias that shadows a column would replace it in WHERE and ORDER BY.
// The compact record's columns are read alone for /api/usage/logs (fewer columns through FINAL: about a quarter faster);
// provider_group and price_source are among them because they say whether the cost is known.
const COMPACT_FIELDS = `toString(request_id) AS id, kind, combo, toUnixTimestamp64Milli(ts) AS ts_ms, provider, provider_group, model,
  requested_model, stream, status, http_status, input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
  total_tokens, toString(cost) AS cost_usd, price_source, duration_ms`;
const FIELDS = `${COMPACT_FIELDS}, ifNull(toString(parent_id), '') AS parent, attempt, toUnixTimestamp64Milli(end_ts) AS end_ms, endpoint,
  connection, auto_switched, api_key_name, error_type, usage_source, toString(list_cost) AS list_cost_usd, ttft_ms,
  upstream_ms, trace_id, cache_write_1h_tokens, web_search_requests, service_tier, audio_input_tokens, audio_output_tokens`;

/**
 * How far back each successive read of a page reaches: a busy gateway fills a page from the last minutes, which (the
 * table sorted by hour, migration 8) reads those rows only (`FINAL` merges every row it reads: an hour of a busy
 * gateway is hundreds of thousands); a quiet one reaches further.
 */
const SPANS = [5 * 60_000, HOUR_MS, DAY_MS, 7 * DAY_MS, 31 * DAY_MS, 366 * DAY_MS];
/**
 * Per store, the span the last unfiltered page was filled from (the last five minutes or the last hour), and how many
 * pages started there: the next page's first read starts there (every 16th one step shorter, in case the traffic
 * grew), so a quiet gateway does not pay an empty five-minute read on every page. A hint only: the reads still walk
 * back until the page is full.
 */
const firstSpan = new WeakMap<Store, { span: number; pages: number }>();

type Raw = Record<string, unknown>;
const n = (v: unknown): number => Number(v);
const nn = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const b = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 'true';

function toCompactRow(r: Raw): CompactRow {
  return {
    request_id: String(r.id), kind: String(r.kind), combo: String(r.combo), ts: n(r.ts_ms), provider: String(r.provider),
    provider_group: String(r.provider_group), model: String(r.model), requested_model: String(r.requested_model), stream: b(r.stream),
    status: String(r.status) as DetailStatus, http_status: n(r.http_status), input_tokens: nn(r.input_tokens), cached_tokens: nn(r.cached_tokens),
    cache_write_tokens: nn(r.cache_write_tokens), output_tokens: nn(r.output_tokens), reasoning_tokens: nn(r.reasoning_tokens),
    total_tokens: n(r.total_tokens), cost: n(r.cost_usd), price_source: String(r.price_source ?? ''), duration_ms: n(r.duration_ms),
  };
}

// Object.assign, not a spread of toCompactRow's result into a literal: that took V8 (Node 20) about 50 µs a row.
function toLogRow(r: Raw): LogRow {
  return Object.assign(toCompactRow(r), {
    parent_id: String(r.parent), attempt: n(r.attempt), end_ts: n(r.end_ms), endpoint: String(r.endpoint), connection: String(r.connection),
    auto_switched: b(r.auto_switched), api_key_name: String(r.api_key_name), error_type: String(r.error_type),
    usage_source: String(r.usage_source), list_cost: n(r.list_cost_usd), ttft_ms: nn(r.ttft_ms), upstream_ms: nn(r.upstream_ms),
    trace_id: String(r.trace_id ?? ''), cache_write_1h_tokens: nn(r.cache_write_1h_tokens), web_search_requests: nn(r.web_search_requests), service_tier: String(r.service_tier ?? ''),
    audio_input_tokens: n(r.audio_input_tokens ?? 0), audio_output_tokens: n(r.audio_output_tokens ?? 0),
  });
}

function filterSql(f: LogFilters): string {
  const parts = [CLIENT_ROWS];
  if (f.provider !== undefined) parts.push('provider = {provider:String}');
  if (f.model !== undefined) parts.push('model = {model:String}');
  if (f.combo !== undefined) parts.push('combo = {combo:String}');
  if (f.apiKey !== undefined) parts.push('api_key_name = {apiKey:String}');
  if (f.status === 'failure') parts.push(`status IN ('failure', 'aborted', 'interrupted')`);
  else if (f.status !== undefined) parts.push('status = {status:String}');
  return parts.join(' AND ');
}

/** What a page read may bring besides its rows (readClientPage). */
export interface PageOptions {
  /** The full record (`LogRow`) rather than the compact one. */
  readonly full: boolean;
  /** The page's combo requests' attempts, taken in the same read when it can (needs `full`). */
  readonly attempts?: boolean;
  /** Each row's request number, taken in the same read when it can (an unfiltered page, on the embedded engine). */
  readonly numbers?: boolean;
}

/**
 * A page of client requests, with what the first read could take beside them: `attempts` (by parent request id, each
 * parent's by attempt number) and `numbers` (by request id) are null when the read could not take them, and the
 * caller reads them on their own (attemptsOf, dayNumbers).
 */
export interface PageRead<R extends CompactRow> {
  readonly rows: R[];
  readonly attempts: Map<string, LogRow[]> | null;
  readonly numbers: Map<string, number> | null;
  /**
   * No filter but time: the page holds every client request between its oldest and newest rows, so their numbers are
   * counted, not ranked (log-numbers.ts, dayNumbers' `contiguous`).
   */
  readonly contiguous: boolean;
}

/**
 * Client requests (direct and combo, never attempts or pings) matching `f`, newest first by (ts, request_id), after
 * `cursor`, at most `limit`. The read starts with the last day before the upper bound and reaches further back only
 * while the page is not full, so the common page never scans the whole table.
 */
export async function clientRequestPage(store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, full: true): Promise<LogRow[]>;
export async function clientRequestPage(store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, full: false): Promise<CompactRow[]>;
export async function clientRequestPage(store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, full: boolean): Promise<CompactRow[]>;
export async function clientRequestPage(
  store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, full: boolean,
): Promise<CompactRow[]> {
  return (await readClientPage(store, f, cursor, limit, anchor, { full })).rows;
}

/**
 * clientRequestPage, taking the page's attempts and numbers in its first read when it can: on the newest page (no
 * cursor, no `to`: the read has no upper bound) when the first read fills it. On the embedded engine each table a
 * query reads costs 5-7 ms before it reads a row, and the attempts' own read about 18 ms (each of its 33 columns over
 * the last hour's granules): the request log's first page is one read instead of three (docs/benchmarks.md).
 *
 * - Attempts: an attempt starts after its client request (the assumption attemptsOf makes too), so on the newest page
 *   every attempt of a page row is newer than the page's oldest row: the read takes the newest client rows and
 *   attempts together, with room for two attempts a client row (ATTEMPT_ROOM), and holds every attempt of the page
 *   when it holds `limit` client rows. A span whose newest rows are mostly attempts is read again as any other.
 * - Numbers (an unfiltered page on the embedded engine): the page then holds every client request newer than its
 *   oldest row, so a row's number is its day's count of client requests less the page's rows of that day above it.
 *   The count is the hourly rollup's, which every usage report reads and which holds each row once (the inserts'
 *   deduplication tokens, the landed check after a crash; dayNumbers reads it for whole hours too). A day whose count
 *   is below the page's rows of that day leaves the numbers to dayNumbers, as does a server (an insert's rows and its
 *   rollup rows are committed apart there: a read between them would number the newest rows low).
 */
export async function readClientPage(store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, opts: PageOptions & { full: true }): Promise<PageRead<LogRow>>;
export async function readClientPage(store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, opts: PageOptions & { full: false }): Promise<PageRead<CompactRow>>;
export async function readClientPage(store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, opts: PageOptions): Promise<PageRead<CompactRow>>;
export async function readClientPage(
  store: Store, f: LogFilters, cursor: LogCursor | null, limit: number, anchor: number, opts: PageOptions,
): Promise<PageRead<CompactRow>> {
  const where = filterSql(f);
  const contiguous = where === CLIENT_ROWS;
  const params = {
    provider: f.provider, model: f.model, combo: f.combo, apiKey: f.apiKey, status: f.status,
    c_ts: cursor?.ts ?? 0, c_id: cursor?.id ?? '',
  };
  const upper = Math.min(cursor?.ts ?? Infinity, f.to ?? Infinity);
  const floor = f.from ?? -Infinity;
  // The reads walk back from the newest possible row: the cursor, `to`, or now (a row stamped later than now, by a
  // replica's clock, still lands in the first read: that one has no upper bound of its own).
  const start = Number.isFinite(upper) ? upper : anchor;
  const newest = cursor === null && f.to === undefined;
  const withAttempts = newest && opts.full && opts.attempts === true;
  // Numbers from the rollup on the embedded engine only, where this read cannot fall between an insert's rows and its
  // rollup rows (its operations run one at a time); a server commits the two apart, so there dayNumbers counts.
  const withNumbers = newest && opts.numbers === true && contiguous && store.embedded;
  const rows: CompactRow[] = [];
  const toRow = opts.full ? toLogRow : toCompactRow;
  let extras: Pick<PageRead<LogRow>, 'attempts' | 'numbers'> = { attempts: null, numbers: null };
  let hi: number | null = null; // exclusive upper bound of the next read; null on the first
  const hint = firstSpan.get(store) ?? { span: 0, pages: 0 };
  const i0 = hint.pages % 16 === 15 ? Math.max(0, hint.span - 1) : hint.span;
  let filledAt = SPANS.length;
  for (let i = i0; i <= SPANS.length && rows.length < limit; i++) {
    const lo = i < SPANS.length ? Math.max(floor, start - SPANS[i]!) : floor;
    const bounds: string[] = [];
    if (cursor !== null) bounds.push(`(ts, toString(request_id)) < (fromUnixTimestamp64Milli({c_ts:Int64}, 'UTC'), {c_id:String})`);
    if (f.to !== undefined) bounds.push(`ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')`);
    if (hi !== null) bounds.push(`ts < fromUnixTimestamp64Milli({hi:Int64}, 'UTC')`);
    if (Number.isFinite(lo)) bounds.push(`ts >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC')`);
    const values = { ...params, to: f.to, hi, lo: Number.isFinite(lo) ? lo : 0, limit: limit - rows.length };
    let got: Raw[] | null = null;
    if (i === i0 && (withAttempts || withNumbers) && Number.isFinite(lo)) {
      // With attempts: room for ATTEMPT_ROOM - 1 attempts a client row on average.
      const wide = withAttempts ? limit * ATTEMPT_ROOM + 16 : limit;
      const read = await store.query<Raw>(firstReadSql(store, opts.full ? FIELDS : COMPACT_FIELDS, where, bounds, withAttempts, withNumbers), { ...values, wide });
      const clients = read.filter((r) => r.kind !== 'attempt');
      if (clients.length >= limit) {
        // The read is a prefix of the span's rows in order: every row above the limit-th client row is in it.
        rows.push(...clients.slice(0, limit).map(toRow));
        extras = {
          attempts: withAttempts ? attemptsIn(read, rows) : null,
          numbers: withNumbers ? numbersFrom(rows, read[0]?.totals) : null,
        };
        filledAt = i;
        break;
      }
      // Fewer rows than room: every row of the span, and the page is not full in it. Otherwise more attempts than the
      // room left too few client rows: the span is read again as any other.
      if (read.length < wide) got = clients;
    }
    got ??= await store.query<Raw>(
      `SELECT ${opts.full ? FIELDS : COMPACT_FIELDS} FROM ${store.t('requests')} FINAL
       WHERE ${[where, ...bounds].join(' AND ')}
       ORDER BY ts DESC, toString(request_id) DESC
       LIMIT {limit:UInt32}`,
      values,
    );
    rows.push(...got.map(toRow));
    if (rows.length >= limit) filledAt = i;
    if (!Number.isFinite(lo) || lo <= floor) break;
    hi = lo;
  }
  if (contiguous && f.from === undefined && f.to === undefined) {
    const span = Math.min(filledAt, 1); // never past the last hour: a gateway that was quiet may be busy now
    firstSpan.set(store, { span, pages: span === hint.span ? hint.pages + 1 : 0 });
  }
  return { rows, ...extras, contiguous };
}

/** How many rows a client row of the newest page may bring into its first read with its attempts (readClientPage). */
const ATTEMPT_ROOM = 3;

/**
 * The first read of the newest page with its extras (readClientPage). With attempts: the newest `wide` rows of the
 * span that are client rows or attempts (the caller keeps the first `limit` client rows, and the attempts above the
 * last of them); the engine reads the full records of those rows only (ORDER BY ... LIMIT: lazily). With numbers:
 * `totals` on every row, the hourly rollup's count of client requests of each UTC day from the read's lower bound on,
 * as [day as epoch seconds, count] pairs.
 */
function firstReadSql(store: Store, fields: string, where: string, bounds: readonly string[], attempts: boolean, numbers: boolean): string {
  const scope = bounds.join(' AND ');
  const totals = `(SELECT groupArray((toUnixTimestamp(toDateTime(day, 'UTC')), n)) FROM (
       SELECT toDate(hour) AS day, sum(rows) AS n FROM ${store.t('usage_hourly')}
       WHERE ${CLIENT_ROWS} AND hour >= toStartOfDay(fromUnixTimestamp64Milli({lo:Int64}, 'UTC')) GROUP BY day
     )) AS totals`;
  return `${numbers ? `WITH ${totals}` : ''}
    SELECT ${fields}${numbers ? ', totals' : ''} FROM ${store.t('requests')} FINAL
    WHERE ${attempts ? `((${where}) OR kind = 'attempt')` : where} AND ${scope}
    ORDER BY ts DESC, toString(request_id) DESC
    LIMIT {${attempts ? 'wide' : 'limit'}:UInt32}`;
}

/** The attempts among a first read's rows whose parent is a combo row of the page, each parent's by attempt number. */
function attemptsIn(got: readonly Raw[], page: readonly CompactRow[]): Map<string, LogRow[]> {
  const combos = new Set(page.filter((r) => r.kind === 'combo').map((r) => r.request_id));
  const out = new Map<string, LogRow[]>();
  for (const r of got) {
    if (r.kind !== 'attempt' || !combos.has(String(r.parent))) continue;
    const a = toLogRow(r);
    const list = out.get(a.parent_id);
    if (list === undefined) out.set(a.parent_id, [a]);
    else list.push(a);
  }
  const byAttempt = (a: LogRow, b: LogRow) => a.attempt - b.attempt || a.ts - b.ts || (a.request_id < b.request_id ? -1 : a.request_id > b.request_id ? 1 : 0);
  for (const list of out.values()) list.sort(byAttempt);
  return out;
}

/** The attempt rows of the given combo requests, by parent then attempt number. */
export async function attemptsOf(store: Store, parents: readonly Pick<LogRow, 'request_id' | 'ts' | 'end_ts'>[]): Promise<Map<string, LogRow[]>> {
  const out = new Map<string, LogRow[]>();
  if (parents.length === 0) return out;
  // An attempt starts after its client request and before that request ends: the range keeps the read to those days.
  // Each attempt once by LIMIT 1 BY on the matching rows rather than FINAL, which merges every row of the parts read
  // (a retried insert is the same row twice; about 1.7x faster at 10M rows, docs/benchmarks.md).
  const got = await store.query<Raw>(
    `SELECT ${FIELDS} FROM ${store.t('requests')}
     WHERE kind = 'attempt' AND toString(parent_id) IN {ids:Array(String)}
       AND ts >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND ts <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC')
     ORDER BY parent_id, attempt, ts, toString(request_id)
     LIMIT 1 BY request_id`,
    {
      ids: parents.map((p) => p.request_id),
      lo: Math.min(...parents.map((p) => p.ts)),
      hi: Math.max(...parents.map((p) => Math.max(p.end_ts, p.ts))),
    },
  );
  for (const r of got.map(toLogRow)) {
    const list = out.get(r.parent_id) ?? [];
    list.push(r);
    out.set(r.parent_id, list);
  }
  return out;
}
