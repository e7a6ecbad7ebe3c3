// The raw row for one usage record: a pure mapping, the store writes what it is given.

import { MAX_REQUESTED_MODEL, type UsageRecord } from '../ledger/record.js';

export type RequestRow = Record<string, string | number | boolean | null>;

/**
 * The columns of a row, in the order toRow makes them and the spool writes their values (src/store/segment.ts): every
 * column of the `requests` table (test/store/writer.test.ts checks both, on both store paths).
 */
export const REQUEST_COLUMNS: readonly string[] = [
  'request_id', 'kind', 'parent_id', 'combo', 'attempt', 'connection', 'auto_switched', 'ts', 'end_ts', 'endpoint', 'provider',
  'provider_group', 'model', 'requested_model', 'api_key_name', 'stream', 'status', 'http_status', 'error_type', 'input_tokens',
  'audio_input_tokens', 'cached_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'output_tokens', 'audio_output_tokens', 'reasoning_tokens',
  'web_search_requests', 'total_tokens', 'usage_source', 'cost', 'list_cost',
  'price_source', 'service_tier', 'duration_ms', 'ttft_ms', 'upstream_ms', 'trace_id', 'dispatched',
];

const money = (usd: number): string => usd.toFixed(12);
/** Client text with lone UTF-16 surrogates replaced (U+FFFD): ClickHouse refuses them in JSON input. */
const wellFormed = (s: string): string => s.replace(/\p{Cs}/gu, '\uFFFD');
/**
 * A model name from client input as its column keeps it: at most MAX_REQUESTED_MODEL characters (as the pipeline
 * bounds requested_model), then well-formed (a cut through a surrogate pair leaves a lone half). `model` is the routed
 * `<prefix>/<id>`, which a provider with allow_unlisted_models takes from the client as it came.
 */
const modelColumn = (s: string): string => wellFormed(s.slice(0, MAX_REQUESTED_MODEL));

export function toRow(r: UsageRecord): RequestRow {
  return {
    request_id: r.requestId,
    kind: r.kind,
    parent_id: r.parentId === '' ? null : r.parentId,
    combo: r.combo,
    attempt: r.attempt,
    connection: r.connection,
    auto_switched: r.autoSwitched,
    ts: r.startedAt,
    end_ts: r.endedAt,
    endpoint: r.endpoint,
    provider: r.provider,
    provider_group: r.providerGroup,
    model: modelColumn(r.model),
    requested_model: modelColumn(r.requestedModel),
    api_key_name: r.apiKeyName,
    stream: r.stream,
    status: r.status,
    http_status: r.httpStatus,
    error_type: r.errorType,
    input_tokens: r.usage.input,
    audio_input_tokens: r.usage.audioInput ?? 0,
    cached_tokens: r.usage.cached,
    cache_write_tokens: r.usage.cacheWrite,
    cache_write_1h_tokens: r.usage.cacheWrite1h ?? null,
    output_tokens: r.usage.output,
    audio_output_tokens: r.usage.audioOutput ?? 0,
    reasoning_tokens: r.usage.reasoning,
    web_search_requests: r.usage.webSearches ?? null,
    total_tokens: r.totalTokens,
    usage_source: r.usageSource,
    cost: money(r.cost.cost),
    list_cost: money(r.cost.listCost),
    price_source: r.cost.priceSource ?? '',
    service_tier: r.usage.serviceTier ?? '',
    duration_ms: r.latency.totalMs,
    ttft_ms: r.latency.kind === 'stream' ? r.latency.ttftMs : null,
    upstream_ms: r.upstreamMs,
    trace_id: r.traceId,
    dispatched: r.dispatched,
  };
}

/**
 * The row a request in flight is recorded as if the process dies (the begin marker's, src/app.ts): its record so far,
 * status `interrupted`. A fresh row each call, marked here rather than through a copy of the record. Dispatched: the
 * marker is taken as the request begins, before its call, so it cannot say whether the call went out; a request cut
 * by a kill counts toward a request quota as it did before the column (docs/quota.md).
 */
export function interruptedRow(r: UsageRecord): RequestRow {
  const row = toRow(r);
  row.status = 'interrupted';
  row.dispatched = true;
  return row;
}
