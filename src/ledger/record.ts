// The usage record: one per client request, built by pure code from what the pipeline observed, then handed to
// every ledger (ClickHouse row, Prometheus metrics, span attributes) unchanged, so the three agree by construction.

import type { ProviderGroup } from '../config/types.js';
import type { Cost } from './cost.js';
import { totalTokens, type Usage, type UsageSource } from './types.js';

/** `interrupted`: the process stopped (a kill, a crash) while the request was in flight; recorded at the next start. */
export const REQUEST_STATUSES = ['success', 'failure', 'aborted', 'interrupted'] as const;
export type RequestStatus = (typeof REQUEST_STATUSES)[number];

/**
 * What a row stands for:
 * - `request`: a client request sent straight to one model (the client request and its upstream call in one row);
 * - `combo`: a client request to a combo; its buckets and cost are the sums of its attempts';
 * - `attempt`: one upstream call made for a combo request (`parentId` is the client's request id);
 * - `keepalive`: a keep-alive ping (no client request), excluded from analytics by default.
 * Client requests are the `request` and `combo` rows; tokens and cost of upstream calls are the `request` and
 * `attempt` rows. Either sum counts nothing twice.
 */
export const RECORD_KINDS = ['request', 'combo', 'attempt', 'keepalive'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

// The kinds rule, in one place: every reader of the record (metrics, analytics, quota, budgets, alerts, logs) takes
// its set from here, in TypeScript or as SQL (`kindsSql`).
/** Client requests: one row per request a client made (in /api/usage summaries and tollgate_requests_total). */
export const CLIENT_KINDS: readonly RecordKind[] = ['request', 'combo'];
/** The usage of the upstream calls made for clients (a combo row repeats its attempts' sum, so it is not here). */
export const USAGE_KINDS: readonly RecordKind[] = ['request', 'attempt'];
/** What spends: every upstream call, keep-alive pings included (budgets, quota, provider health). */
export const BILLED_KINDS: readonly RecordKind[] = ['request', 'attempt', 'keepalive'];

/** Counts as a client request. */
export const isClientRequest = (k: RecordKind): boolean => CLIENT_KINDS.includes(k);
/** Carries the usage of one upstream call made for a client (a ping's is counted on its own). */
export const carriesUsage = (k: RecordKind): boolean => USAGE_KINDS.includes(k);
/** `kind IN ('request', ...)` for a kinds set of this module. */
export const kindsSql = (kinds: readonly RecordKind[]): string => `kind IN (${kinds.map((k) => `'${k}'`).join(', ')})`;

export type Latency =
  | { readonly kind: 'stream'; readonly ttftMs: number | null; readonly totalMs: number }
  | { readonly kind: 'unary'; readonly totalMs: number };

export interface UsageRecord {
  readonly kind: RecordKind;
  readonly requestId: string;
  /** The client request this upstream attempt belongs to; '' for client requests and pings. */
  readonly parentId: string;
  /** The combo the client named ('' when none). */
  readonly combo: string;
  /** 1-based attempt number within a combo request; 0 otherwise. */
  readonly attempt: number;
  /** The provider connection chosen (a key's name, 'default', 'oauth'); '' when none was. `dispatched` says whether a call went out. */
  readonly connection: string;
  /** The budget auto-switch rewrote the target of this request. */
  readonly autoSwitched: boolean;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly endpoint: string;
  /** Provider prefix as configured; '_other' when the request named no configured provider. */
  readonly provider: string;
  readonly providerGroup: ProviderGroup | '';
  /** `<provider>/<model_id>` as routed; '_other' when unknown. */
  readonly model: string;
  /** The model string the client sent (bounded length). */
  readonly requestedModel: string;
  /** True when `model` is one of the configured models (metric labels use it, else '_other'). */
  readonly modelKnown: boolean;
  readonly apiKeyName: string;
  readonly stream: boolean;
  readonly status: RequestStatus;
  readonly httpStatus: number;
  /** '' on success; an error code or upstream error class otherwise. */
  readonly errorType: string;
  readonly usage: Usage;
  readonly usageSource: UsageSource;
  readonly totalTokens: number;
  readonly cost: Cost;
  readonly latency: Latency;
  /** Time spent waiting on the upstream (request sent to last byte read); null when no upstream call was made. */
  readonly upstreamMs: number | null;
  /**
   * The request's bytes were handed to an upstream connection (src/providers/transport.ts): the provider may have
   * seen it, so it counts toward a request quota. False for a request the gateway refused before any call (a
   * parameter the provider cannot take, no OAuth connection) and for a connection that was never made (refused, DNS,
   * connect timeout). A combo row: any of its attempts was.
   */
  readonly dispatched: boolean;
  /** The request's OpenTelemetry trace id (32 hex digits); '' when it has none (no tracing, no incoming traceparent). */
  readonly traceId: string;
}

type Routing = 'kind' | 'parentId' | 'combo' | 'attempt' | 'connection' | 'autoSwitched' | 'traceId' | 'dispatched';
export type RecordInput = Omit<UsageRecord, 'totalTokens' | Routing> & Partial<Pick<UsageRecord, Routing>>;

export function makeRecord(input: RecordInput): UsageRecord {
  // Every field named (no spread): one object shape for every record, built without copying the input twice (two
  // records are made per request, its begin snapshot and its end).
  const record: UsageRecord = {
    kind: input.kind ?? 'request',
    requestId: input.requestId,
    parentId: input.parentId ?? '',
    combo: input.combo ?? '',
    attempt: input.attempt ?? 0,
    connection: input.connection ?? '',
    autoSwitched: input.autoSwitched ?? false,
    startedAt: input.startedAt,
    endedAt: input.endedAt,
    endpoint: input.endpoint,
    provider: input.provider,
    providerGroup: input.providerGroup,
    model: input.model,
    requestedModel: input.requestedModel,
    modelKnown: input.modelKnown,
    apiKeyName: input.apiKeyName,
    stream: input.stream,
    status: input.status,
    httpStatus: input.httpStatus,
    errorType: input.errorType,
    usage: input.usage,
    usageSource: input.usageSource,
    totalTokens: totalTokens(input.usage),
    cost: input.cost,
    latency: input.latency,
    upstreamMs: input.upstreamMs,
    traceId: input.traceId ?? '',
    // Unsaid: dispatched, as every row written before the column was (docs/recording.md).
    dispatched: input.dispatched ?? true,
  };
  return Object.freeze(record);
}

/** Time spent in the gateway itself: total minus time waiting on the upstream. */
export function overheadMs(r: UsageRecord): number {
  return Math.max(0, r.latency.totalMs - (r.upstreamMs ?? 0));
}

export function ttftMs(r: UsageRecord): number | null {
  return r.latency.kind === 'stream' ? r.latency.ttftMs : null;
}

export const MAX_REQUESTED_MODEL = 256;
