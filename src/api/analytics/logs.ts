// GET /api/usage/logs and GET /api/usage/request-logs: the request log, one entry per client request, newest first,
// keyset-paginated. `logs` is the spec's compact request record; `request-logs` is the full record (routing, every
// usage bucket, latency parts, list cost) with a combo request's upstream attempts nested. `format=text` gives one
// line per request (request-logs: plus one indented line per attempt).

import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Store } from '../../store/client.js';
import { dayNumbers } from '../../store/log-numbers.js';
import { attemptsOf, readClientPage, type CompactRow, type DetailStatus, type LogCursor, type LogFilters, type LogRow } from '../../store/logs.js';
import { FILTER_PARAMS, QueryReader, invalid, iso, money } from './params.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const LOG_LIMIT = { default: 50, max: 500 } as const;

export function encodeCursor(c: LogCursor): string {
  return Buffer.from(`${c.ts}:${c.id}`).toString('base64url');
}

export function decodeCursor(s: string): LogCursor | null {
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(s)) return null;
  const m = /^(\d{1,15}):(.+)$/.exec(Buffer.from(s, 'base64url').toString('utf8'));
  if (m === null || !UUID.test(m[2]!)) return null;
  return { ts: Number(m[1]), id: m[2]! };
}

const sum = (...xs: (number | null)[]): number | null => (xs.every((x) => x === null) ? null : xs.reduce<number>((s, x) => s + (x ?? 0), 0));
const seconds = (ms: number | null): number | null => (ms === null ? null : Number((ms / 1000).toFixed(3)));
const outcome = (s: DetailStatus): 'success' | 'failure' => (s === 'success' ? 'success' : 'failure');

/**
 * No price covered the row's model and it spent tokens: its recorded cost and list cost are placeholders, not prices
 * (docs/catalog.md). The billed cost is unknown only for a paid provider (subscription and free bill 0 whatever the
 * price): the rule of ledger/cost.ts `costKnown`, which /api/usage counts as `unpriced_requests`.
 */
const unpriced = (r: CompactRow): boolean => r.price_source === 'none' && r.total_tokens > 0;
const costKnown = (r: CompactRow): boolean => !(unpriced(r) && r.provider_group === 'paid');

/** The billed cost, or null and `cost_known: false` (as /api/usage marks a model) when it is not known. */
function billed(r: CompactRow): { cost: number | null; cost_known?: false } {
  return costKnown(r) ? { cost: money(r.cost) } : { cost: null, cost_known: false };
}

/**
 * A record's figures after its names: start time, tokens as the spec's record shows them, without overlap (input =
 * not-cached input plus cache writes, cached = cache reads, output = output plus reasoning; so total = input + cached
 * + output; null: not reported by the provider), cost (null: not known), duration and outcome.
 */
function figures(r: CompactRow) {
  return Object.assign(
    {
      timestamp: iso(r.ts),
      input_tokens: sum(r.input_tokens, r.cache_write_tokens),
      output_tokens: sum(r.output_tokens, r.reasoning_tokens),
      total_tokens: r.total_tokens,
      cached_tokens: r.cached_tokens,
    },
    billed(r),
    { duration_s: seconds(r.duration_ms), status: outcome(r.status), detail_status: r.status, http_status: r.http_status, stream: r.stream },
  );
}

// The entries are put together with Object.assign, not object spread: spreading a record of this size into a literal
// with more fields took V8 (Node 20) about 50 µs an entry, Object.assign about 1 (docs/benchmarks.md).
function compact(r: CompactRow, number: number) {
  const names = { number, request_id: r.request_id, model: r.model, requested_model: r.requested_model, provider: r.provider, combo: r.combo === '' ? null : r.combo };
  return Object.assign(names, figures(r));
}

function details(r: LogRow) {
  return {
    end_timestamp: iso(r.end_ts), endpoint: r.endpoint, provider_group: r.provider_group === '' ? null : r.provider_group,
    connection: r.connection === '' ? null : r.connection, api_key_name: r.api_key_name, auto_switched: r.auto_switched,
    error_type: r.error_type === '' ? null : r.error_type,
    usage: {
      input: r.input_tokens, audio_input: r.audio_input_tokens, cached: r.cached_tokens, cache_write: r.cache_write_tokens, cache_write_1h: r.cache_write_1h_tokens,
      output: r.output_tokens, audio_output: r.audio_output_tokens, reasoning: r.reasoning_tokens, web_searches: r.web_search_requests, source: r.usage_source,
    },
    list_cost: unpriced(r) ? null : money(r.list_cost), price_source: r.price_source === '' ? null : r.price_source,
    service_tier: r.service_tier === '' ? null : r.service_tier,
    ttft_s: seconds(r.ttft_ms), upstream_s: seconds(r.upstream_ms),
    trace_id: r.trace_id === '' ? null : r.trace_id,
  };
}

function attemptView(a: LogRow) {
  return Object.assign({ attempt: a.attempt, request_id: a.request_id, model: a.model, requested_model: a.requested_model, provider: a.provider }, figures(a), details(a));
}

const dash = (v: number | null): string => (v === null ? '-' : String(v));

/** What a name may hold as it is in a text line: anything else (a space, a line end, an escape code) is quoted. */
const PLAIN = /^[\w.:/@+=~-]+$/;
/** Characters JSON leaves as they are that a terminal or a reader would act on: DEL, C1 controls, bidi controls. */
const UNSEEN = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A client-chosen name (a model, a combo, an error type) as one field of a text line: as it is when plain, else a
 * JSON string with every control and bidi character escaped, so a name can neither start a forged line, add fields
 * nor send escape codes to the terminal that shows the log.
 */
function field(v: string): string {
  if (PLAIN.test(v)) return v;
  return JSON.stringify(v).replace(UNSEEN, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function textLine(e: ReturnType<typeof compact>): string {
  const status = e.detail_status === e.status ? e.status : `${e.status}(${e.detail_status})`;
  return [
    `#${e.number}`, e.timestamp, status, String(e.http_status), field(e.model), ...(e.combo === null ? [] : [`combo=${field(e.combo)}`]),
    `in=${dash(e.input_tokens)}`, `out=${dash(e.output_tokens)}`, `cached=${dash(e.cached_tokens)}`, `total=${e.total_tokens}`,
    `cost=${dash(e.cost)}`, `${dash(e.duration_s)}s`, e.stream ? 'stream' : 'unary', `id=${field(e.request_id)}`,
  ].join(' ');
}

function attemptLine(a: ReturnType<typeof attemptView>): string {
  const status = a.detail_status === a.status ? a.status : `${a.status}(${a.detail_status})`;
  return [
    `  attempt ${a.attempt}`, a.timestamp, status, String(a.http_status), field(a.model), `in=${dash(a.input_tokens)}`, `out=${dash(a.output_tokens)}`,
    `cached=${dash(a.cached_tokens)}`, `total=${a.total_tokens}`, `cost=${dash(a.cost)}`, `${dash(a.duration_s)}s`,
    ...(a.error_type === null ? [] : [`error=${field(a.error_type)}`]), `id=${field(a.request_id)}`,
  ].join(' ');
}

const PARAMS = [...FILTER_PARAMS, 'status', 'from', 'to', 'limit', 'cursor', 'format'] as const;

interface Page<R> {
  rows: R[];
  numbers: Promise<Map<string, number>>;
  /** The page's combo requests' attempts when the page's read took them (the full record only). */
  attempts: Map<string, LogRow[]> | null;
  next: string | null;
  filters: Record<string, string>;
  limit: number;
}

/** A page of the log: the compact record's columns only (`/api/usage/logs`), or the full record (`full`). */
async function readPage(store: Store, query: unknown, now: number, full: true): Promise<Page<LogRow> & { text: boolean }>;
async function readPage(store: Store, query: unknown, now: number, full: false): Promise<Page<CompactRow> & { text: boolean }>;
async function readPage(store: Store, query: unknown, now: number, full: boolean): Promise<Page<CompactRow> & { text: boolean }> {
  const q = new QueryReader(query, PARAMS);
  const f = q.filters();
  const status = q.oneOf('status', ['success', 'failure', 'aborted', 'interrupted'] as const);
  const from = q.instant('from');
  const to = q.instant('to');
  if (from !== undefined && to !== undefined && from >= to) throw invalid('to', `'to' must be later than 'from'`);
  const limit = q.int('limit', 1, LOG_LIMIT.max) ?? LOG_LIMIT.default;
  const rawCursor = q.string('cursor');
  const cursor = rawCursor === undefined ? null : decodeCursor(rawCursor);
  if (rawCursor !== undefined && cursor === null) throw invalid('cursor', `'cursor' is not a cursor this API returned`);
  const text = (q.oneOf('format', ['json', 'text'] as const) ?? 'json') === 'text';
  const filters: LogFilters = {
    ...(f.provider === undefined ? {} : { provider: f.provider }), ...(f.model === undefined ? {} : { model: f.model }),
    ...(f.combo === undefined ? {} : { combo: f.combo }), ...(f.apiKey === undefined ? {} : { apiKey: f.apiKey }), ...(status === undefined ? {} : { status }), ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) };
  // One row more than asked says whether another page follows. The page's read takes its numbers and the full
  // record's attempts when it can (readClientPage decides: the newest page, unfiltered for the numbers).
  const read = await readClientPage(store, filters, cursor, limit + 1, now, { full, attempts: full, numbers: true });
  const got = read.rows;
  const rows = got.slice(0, limit);
  const last = rows[rows.length - 1];
  const next = got.length > limit && last !== undefined ? encodeCursor({ ts: last.ts, id: last.request_id }) : null;
  const echo: Record<string, string> = {};
  for (const k of [...FILTER_PARAMS, 'status', 'from', 'to'] as const) {
    const v = q.string(k);
    if (v !== undefined) echo[k] = v;
  }
  // The numbers' read (when the page's read did not take them; counted, not ranked, on a page without filters:
  // read.contiguous) is started, not awaited: request-logs starts its attempts' read beside it (a server runs both
  // at once; the embedded store one after the other).
  const numbers = read.numbers !== null ? Promise.resolve(read.numbers) : dayNumbers(store, rows, { contiguous: read.contiguous });
  return { rows, numbers, attempts: read.attempts, next, filters: echo, limit, text };
}

function sendText(reply: FastifyReply, lines: string[], next: string | null): string {
  reply.type('text/plain; charset=utf-8');
  if (next !== null) reply.header('x-next-cursor', next);
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

export const logRoutes: FastifyPluginAsync<{ store: Store; now: () => number }> = async (app, { store, now }) => {
  app.get('/api/usage/logs', async (req, reply) => {
    const p = await readPage(store, req.query, now(), false);
    const numbers = await p.numbers;
    const data = p.rows.map((r) => compact(r, numbers.get(r.request_id) ?? 0));
    if (p.text) return sendText(reply, data.map(textLine), p.next);
    return { data, next_cursor: p.next, limit: p.limit, filters: p.filters };
  });

  app.get('/api/usage/request-logs', async (req, reply) => {
    const p = await readPage(store, req.query, now(), true);
    const [numbers, attempts] = await Promise.all([p.numbers, p.attempts ?? attemptsOf(store, p.rows.filter((r) => r.kind === 'combo'))]);
    const data = p.rows.map((r) =>
      Object.assign(compact(r, numbers.get(r.request_id) ?? 0), { kind: r.kind }, details(r), { attempts: (attempts.get(r.request_id) ?? []).map(attemptView) }),
    );
    if (p.text) {
      return sendText(reply, data.flatMap((e) => [textLine(e), ...e.attempts.map(attemptLine)]), p.next);
    }
    return { data, next_cursor: p.next, limit: p.limit, filters: p.filters };
  });
};
