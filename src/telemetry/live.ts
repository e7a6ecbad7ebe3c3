// The requests in flight: a registry fed by the Ledger (a request is announced by `begin` and leaves with its final
// record), read by GET /api/live and by two gauges at scrape time. Only client requests are listed (CLIENT_KINDS):
// a combo's attempts and keep-alive pings have their own ids and are not what a user is waiting for.

import { Gauge } from 'prom-client';
import type { Config } from '../config/types.js';
import { computeCost, costKnown } from '../ledger/cost.js';
import type { CallInFlight, Ledger, Progress } from '../ledger/ledger.js';
import { isClientRequest, type UsageRecord } from '../ledger/record.js';
import { knowsInput, totalTokens } from '../ledger/types.js';
import { own } from '../core/own.js';
import { METRIC } from './names.js';
import type { Metrics } from './metrics.js';
import { splitModelSpec } from '../config/model-spec.js';
import { ClearedMap } from '../core/cleared-map.js';

/** One request in flight, as GET /api/live lists it. */
export interface LiveRequest {
  readonly request_id: string;
  readonly model: string;
  readonly requested_model: string;
  readonly provider: string;
  readonly combo: string | null;
  readonly endpoint: string;
  readonly stream: boolean;
  readonly api_key_name: string;
  readonly started_at: string;
  readonly duration_s: number;
  /** Output tokens streamed so far (the upstream's count once reported, else estimated from the text). */
  readonly streamed_tokens: number;
  /** The output the request allows (its max output tokens), null when it named none. */
  readonly estimated_total: number | null;
  /**
   * Billed cost of what is known so far (input as reported, else as estimated from the request sent; output as
   * reported or streamed, the larger), USD; null when it is not known: a
   * paid model no price covers that has spent tokens (its row will say `cost: null`, docs/catalog.md), not $0.
   */
  readonly cost_so_far: number | null;
}

interface Entry {
  readonly snapshot: () => UsageRecord;
  readonly progress: () => Progress;
  readonly startedAt: number;
  /** The config when the request began: it is priced at the prices it started with, as its row is (docs/config.md). */
  readonly config: Config;
}

export class LiveRequests {
  readonly #entries = new ClearedMap<string, Entry>();
  readonly #config: () => Config;
  readonly #now: () => number;
  readonly #listeners = new Set<() => void>();

  constructor(config: () => Config, now: () => number = Date.now) {
    this.#config = config;
    this.#now = now;
  }

  /** Subscribe to `ledger`: begin adds, the final record of the same id removes. */
  attach(ledger: Ledger): void {
    ledger.subscribeBegin((requestId, snapshot, progress) => {
      const first = snapshot();
      if (!isClientRequest(first.kind)) return;
      this.#entries.set(requestId, { snapshot, progress, startedAt: first.startedAt || this.#now(), config: this.#config() });
      this.#changed();
    });
    ledger.subscribe((r) => {
      if (this.#entries.delete(r.requestId)) this.#changed();
    });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Called when a request arrives or leaves (GET /api/live pushes at once rather than at its next tick). */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #changed(): void {
    for (const fn of this.#listeners) fn();
  }

  /** The requests in flight, oldest first. */
  list(): LiveRequest[] {
    const now = this.#now();
    const out: LiveRequest[] = [];
    for (const [id, e] of this.#entries) {
      const r = e.snapshot();
      const p = e.progress();
      // A combo's record has its finished attempts only: the member answering now is the attempt in flight.
      const current = p.attempts?.at(-1);
      out.push({
        request_id: id, model: current?.model ?? r.model, requested_model: r.requestedModel, provider: current?.provider ?? r.provider, combo: r.combo === '' ? null : r.combo,
        endpoint: r.endpoint, stream: r.stream, api_key_name: r.apiKeyName, started_at: new Date(e.startedAt).toISOString(),
        duration_s: Number(((now - e.startedAt) / 1000).toFixed(3)), streamed_tokens: p.streamedTokens, estimated_total: p.estimatedTotal,
        cost_so_far: costSoFar(e.config, r, p),
      });
    }
    return out.sort((a, b) => a.started_at.localeCompare(b.started_at));
  }

  /** Output tokens streamed so far, summed over the requests in flight. */
  streamedTokens(): number {
    let n = 0;
    for (const e of this.#entries.values()) n += e.progress().streamedTokens;
    return n;
  }
}

/**
 * A request's cost so far, at the prices of `config` (the one it began with); null when it is not known. A combo's is
 * its finished attempts' (its record's) and each attempt in flight's so far.
 */
function costSoFar(config: Config, r: UsageRecord, p: Progress): number | null {
  const attempts = p.attempts ?? [];
  if (attempts.length === 0) {
    const cost = callCostSoFar(config, { ...p, model: r.model, usage: r.usage });
    if (cost !== undefined) return cost;
    return costKnown(r) ? r.cost.cost : null; // an unlisted model: its record's cost
  }
  let sum = costKnown(r) ? r.cost.cost : null;
  for (const a of attempts) {
    const cost = callCostSoFar(config, a);
    sum = sum === null || cost == null ? null : sum + cost;
  }
  return sum === null ? null : Number(sum.toFixed(8));
}

/**
 * One upstream call's cost so far; undefined when its model is not one of `config`'s providers'. Its input is the
 * upstream's count once reported, else the estimate of the request sent; its output the larger of the reported count
 * and the streamed estimate.
 */
function callCostSoFar(config: Config, call: Omit<CallInFlight, 'provider'>): number | null | undefined {
  const spec = splitModelSpec(call.model);
  const provider = spec === null ? undefined : own(config.providers, spec.provider);
  if (spec === null || provider === undefined) return undefined;
  const input = knowsInput(call.usage) ? call.usage.input : call.estimatedInput;
  const usage = { ...call.usage, input, output: Math.max(call.streamedTokens, call.usage.output ?? 0) };
  const cost = computeCost(provider, spec.modelId, usage);
  return costKnown({ providerGroup: provider.group, totalTokens: totalTokens(usage), cost }) ? Number(cost.cost.toFixed(8)) : null;
}

/** tollgate_inflight_requests and tollgate_inflight_tokens, read from `live` at scrape time. */
export function watchInflight(metrics: Metrics, live: LiveRequests): void {
  const registers = [metrics.registry];
  new Gauge({
    name: METRIC.inflightRequests, help: 'Client requests in flight (announced, final record not yet published).', registers,
    collect() {
      this.set(live.size);
    },
  });
  new Gauge({
    name: METRIC.inflightTokens, help: 'Output tokens streamed so far by the client requests in flight.', registers,
    collect() {
      this.set(live.streamedTokens());
    },
  });
}
