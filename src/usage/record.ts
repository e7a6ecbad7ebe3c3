// The usage record: one per client request, built by pure code from what the pipeline observed, then handed to
// every ledger (ClickHouse row, Prometheus metrics, span attributes) unchanged, so the three agree by construction.

import type { ProviderGroup } from '../config/types.js';
import type { Cost } from './cost.js';
import { totalTokens, type Usage, type UsageSource } from './types.js';

export type RequestStatus = 'success' | 'failure' | 'aborted';

export type Latency =
  | { readonly kind: 'stream'; readonly ttftMs: number | null; readonly totalMs: number }
  | { readonly kind: 'unary'; readonly totalMs: number };

export interface UsageRecord {
  readonly requestId: string;
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
}

export type RecordInput = Omit<UsageRecord, 'totalTokens'>;

export function makeRecord(input: RecordInput): UsageRecord {
  return Object.freeze({ ...input, totalTokens: totalTokens(input.usage) });
}

/** Time spent in the gateway itself: total minus time waiting on the upstream. */
export function overheadMs(r: UsageRecord): number {
  return Math.max(0, r.latency.totalMs - (r.upstreamMs ?? 0));
}

export function ttftMs(r: UsageRecord): number | null {
  return r.latency.kind === 'stream' ? r.latency.ttftMs : null;
}

export const MAX_REQUESTED_MODEL = 256;
