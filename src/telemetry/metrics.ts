// The Prometheus ledger: one registry per app, fed only by finished usage records (and the writer's counters),
// so /metrics agrees with the ClickHouse rows. Label values come from the config: a model that is not configured
// is labelled '_other'.

import type { Config } from '../config/types.js';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { CounterFamily, HistogramFamily, type CounterChild, type HistogramChild } from './families.js';
import { BUCKETS as USAGE_BUCKETS, type Bucket } from '../ledger/types.js';
import { inputSide, knowsInput, knowsOutput, outputSide } from '../ledger/types.js';
import { carriesUsage, isClientRequest, overheadMs, ttftMs, type UsageRecord } from '../ledger/record.js';
import { BUCKETS, METRIC, OTHER, TOKEN_TYPE } from './names.js';
import { SPAN_RESULTS, spanExportStats, type SpanExportStats } from './span-stats.js';
import { splitModelSpec } from '../config/model-spec.js';

const GENAI_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'] as const;

/** What the recording side looks like at scrape time (the spool and the store's state). */
export interface RecordingState {
  readonly rows: number;
  readonly bytes: number;
  /** Creation time (ms) of the oldest spooled row not yet written, or null. */
  readonly oldestMs: number | null;
  readonly up: boolean;
}

export const DROP_REASONS = ['spool_full', 'rejected', 'missing'] as const;

/** The outcomes a request or an upstream call is counted under (declareConfigured makes each at 0). */
const OUTCOMES = ['success', 'failure', 'aborted'] as const;

/** Why the gate answered 429: over `requests_per_minute`, or over `auth_failures_per_minute`. */
export const RATE_LIMIT_REASONS = ['requests', 'auth_failures'] as const;
export type RateLimitReason = (typeof RATE_LIMIT_REASONS)[number];

export class Metrics {
  readonly registry = new Registry();
  readonly #tokenUsage: HistogramFamily;
  readonly #duration: HistogramFamily;
  readonly #ttft: HistogramFamily;
  readonly #requests: CounterFamily;
  readonly #tokens: CounterFamily;
  readonly #cost: CounterFamily;
  readonly #searches: CounterFamily;
  readonly #listCost: CounterFamily;
  readonly #overhead: HistogramChild;
  readonly rowsWritten;
  readonly rowsDropped;
  readonly rowsRecovered;
  readonly configReloads;
  readonly idleGc;
  readonly rateLimited;
  readonly #comboRequests;
  readonly #comboAttempts;
  readonly #cooldowns;
  readonly #keepalive;
  readonly #autoSwitched;
  readonly #alertsFired;
  readonly #notifications;
  readonly #seriesCache = new Map<string, Series>();

  constructor(recording: () => RecordingState, opts: { processMetrics?: boolean; spans?: SpanExportStats } = {}) {
    const reg = this.registry;
    const registers = [reg];
    this.#tokenUsage = new HistogramFamily(METRIC.tokenUsage, 'Number of input and output tokens used (GenAI semconv gen_ai.client.token.usage).',
      [...GENAI_LABELS, 'gen_ai_token_type'], BUCKETS.tokenUsage, reg);
    this.#duration = new HistogramFamily(METRIC.operationDuration, 'GenAI operation duration as seen by the client of the gateway.',
      [...GENAI_LABELS, 'error_type'], BUCKETS.operationDuration, reg);
    this.#ttft = new HistogramFamily(METRIC.timeToFirstToken, 'Time to the first streamed token.', GENAI_LABELS, BUCKETS.timeToFirstToken, reg);
    this.#requests = new CounterFamily(METRIC.requests, 'Client requests by outcome.', ['provider', 'model', 'status'], reg);
    this.#tokens = new CounterFamily(METRIC.tokens, 'Tokens by usage bucket (buckets do not overlap).', ['provider', 'model', 'type'], reg);
    this.#cost = new CounterFamily(METRIC.cost, 'Billed cost in USD (0 for subscription and free providers).', ['provider', 'model', 'group'], reg);
    this.#searches = new CounterFamily(METRIC.webSearches, 'Web searches the provider ran and bills per search (priced into the cost).', ['provider', 'model'], reg);
    this.#listCost = new CounterFamily(METRIC.listCost, 'Cost at list price in USD.', ['provider', 'model', 'group'], reg);
    this.#overhead = new HistogramFamily(METRIC.overhead, 'Time spent in the gateway itself: total minus time waiting on the upstream.', [], BUCKETS.overhead, reg).child();
    this.rowsWritten = new Counter({ name: METRIC.rowsWritten, help: 'Usage rows written to ClickHouse.', registers });
    this.rowsDropped = new Counter({ name: METRIC.rowsDropped, help: 'Usage rows dropped (the spool at storage.spool.max_bytes).', labelNames: ['reason'], registers });
    this.rowsRecovered = new Counter({ name: METRIC.rowsRecovered, help: 'Usage rows found in the spool at start (left by an earlier process) and replayed.', registers });
    this.rowsRecovered.inc(0);
    this.idleGc = new Counter({ name: METRIC.idleGc, help: 'Full garbage collections made once the gateway went quiet after proxied requests (server.idle_gc_s).', registers });
    this.idleGc.inc(0);
    this.configReloads = new Counter({ name: METRIC.configReloads, help: 'Live config reloads by result.', labelNames: ['result'], registers });
    this.rateLimited = new Counter({
      name: METRIC.rateLimited, help: 'Requests refused with 429 by the gate, by reason (requests per minute, or too many wrong keys).',
      labelNames: ['reason'], registers,
    });
    for (const reason of RATE_LIMIT_REASONS) this.rateLimited.inc({ reason }, 0);
    // A combo request's provider and model are its record's (the member that answered, as in tollgate_requests_total), so
    // a rule can take the combo requests out of tollgate_requests_total by provider (TollgateProviderFailing).
    this.#comboRequests = new Counter({
      name: METRIC.comboRequests, help: 'Client requests to a combo by outcome, and the member that answered (its last one tried).',
      labelNames: ['combo', 'provider', 'model', 'status'], registers,
    });
    this.#comboAttempts = new Counter({
      name: METRIC.comboAttempts, help: 'Upstream attempts made for combo requests (fallback tries, fusion members, the judge).',
      labelNames: ['combo', 'provider', 'model', 'status'], registers,
    });
    this.#cooldowns = new Counter({ name: METRIC.cooldowns, help: 'Cooldowns started, by provider and reason (status or error code).', labelNames: ['provider', 'reason'], registers });
    this.#keepalive = new Counter({ name: METRIC.keepalivePings, help: 'Keep-alive pings sent to start a rolling quota window.', labelNames: ['provider', 'status'], registers });
    this.#autoSwitched = new Counter({ name: METRIC.autoSwitched, help: 'Client requests the budget auto-switch sent to the free tier.', registers });
    this.#autoSwitched.inc(0);
    this.#alertsFired = new Counter({ name: METRIC.alertsFired, help: 'Alerts fired by the in-process evaluator, by kind.', labelNames: ['kind'], registers });
    this.#notifications = new Counter({ name: METRIC.notifications, help: 'Alert notifications by channel and result (delivered, failed after retries).', labelNames: ['channel', 'result'], registers });
    for (const channel of ['dashboard', 'email', 'webhook']) for (const result of ['delivered', 'failed']) this.#notifications.inc({ channel, result }, 0);
    // Series that alerting rules query exist from the start (at 0), so increase() and rate() see the first event.
    for (const reason of DROP_REASONS) this.rowsDropped.inc({ reason }, 0);
    for (const result of ['applied', 'rejected']) this.configReloads.inc({ result }, 0);
    const gauge = (name: string, help: string, read: (r: RecordingState) => number) =>
      new Gauge({
        name, help, registers,
        collect() {
          this.set(read(recording()));
        },
      });
    gauge(METRIC.spoolRows, 'Usage rows in the spool, not yet acknowledged by ClickHouse.', (r) => r.rows);
    gauge(METRIC.spoolBytes, 'Bytes of the spool on disk.', (r) => r.bytes);
    gauge(METRIC.spoolOldest, 'Age of the oldest spooled row not yet in ClickHouse (0 when the spool is empty).', (r) => (r.oldestMs === null ? 0 : Math.max(0, (Date.now() - r.oldestMs) / 1000)));
    gauge(METRIC.storeUp, '1 while ClickHouse takes inserts, 0 from a failed insert until one succeeds.', (r) => (r.up ? 1 : 0));
    // The spans' fate, as the SDK's batch processor reports it (src/telemetry/span-stats.ts): all 0 with no OTLP endpoint.
    const spans = opts.spans ?? spanExportStats;
    new Counter({
      name: METRIC.spans, help: 'Spans ended by result: exported (the collector took them), failed (refused or unreachable, after retries), dropped (the export queue was full).',
      labelNames: ['result'], registers,
      collect() {
        this.reset();
        for (const result of SPAN_RESULTS) this.inc({ result }, spans.count(result));
      },
    });
    new Gauge({ name: METRIC.spansQueued, help: 'Spans ended and waiting in the export queue.', registers, collect() { this.set(spans.queued()); } });
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: reg });
  }

  /** The series of one provider/model/group, resolved once; children are created on first use. */
  #series(provider: string, model: string, modelId: string, group: string): Series {
    const key = `${provider}\0${model}\0${group}`;
    let found = this.#seriesCache.get(key);
    if (found) return found;
    const durations = new Map<string, HistogramChild>();
    const tokens = new Map<Bucket, CounterChild>();
    const requests = new Map<string, CounterChild>();
    let usageIn: HistogramChild | undefined;
    let usageOut: HistogramChild | undefined;
    let ttft: HistogramChild | undefined;
    let searches: CounterChild | undefined;
    found = {
      searches: () => (searches ??= this.#searches.child(provider, model)),
      request: (status) => requests.get(status) ?? set(requests, status, this.#requests.child(provider, model, status)),
      tokens: (b) => tokens.get(b) ?? set(tokens, b, this.#tokens.child(provider, model, TOKEN_TYPE[b])),
      usageIn: () => (usageIn ??= this.#tokenUsage.child('chat', provider, modelId, 'input')),
      usageOut: () => (usageOut ??= this.#tokenUsage.child('chat', provider, modelId, 'output')),
      cost: this.#cost.child(provider, model, group),
      listCost: this.#listCost.child(provider, model, group),
      ttft: () => (ttft ??= this.#ttft.child('chat', provider, modelId)),
      duration: (errorType) => durations.get(errorType) ?? set(durations, errorType, this.#duration.child('chat', provider, modelId, errorType)),
    };
    this.#seriesCache.set(key, found);
    return found;
  }

  /**
   * The series of what the config names exist from the start, at 0, as the alerting series do: each listed model's
   * requests by outcome and tokens by type (its cost and list cost come with its series), its GenAI histograms (a
   * success's duration, token usage in and out, time to first token), each combo's requests by
   * outcome and its listed members' attempts. A series made at its first event is first scraped with that event
   * already in it, which increase() and rate() never count: after every start a dashboard missed each model's first
   * requests (all of a quiet one's). Called at start and on every reload; a model removed keeps its series.
   */
  declareConfigured(cfg: Config): void {
    for (const [id, p] of Object.entries(cfg.providers)) {
      for (const modelId of Object.keys(p.models)) {
        const s = this.#series(id, `${id}/${modelId}`, modelId, p.group);
        for (const status of OUTCOMES) s.request(status);
        for (const b of USAGE_BUCKETS) s.tokens(b);
        // The histograms too (buckets, _sum, _count at 0), so histogram_quantile() and rate(_count) have a series to
        // show 0 on: the duration of a success (error_type ''; a failure's code is known only when it happens), the
        // tokens in and out, the time to the first token. 70 series a model (docs/observability.md).
        s.duration('');
        s.usageIn();
        s.usageOut();
        s.ttft();
      }
    }
    for (const [combo, c] of Object.entries(cfg.combos)) {
      for (const member of [...c.models, ...(c.judge === undefined ? [] : [c.judge])]) {
        const spec = splitModelSpec(member);
        if (spec === null || !Object.hasOwn(cfg.providers, spec.provider) || !Object.hasOwn(cfg.providers[spec.provider]!.models, spec.modelId)) continue;
        const { provider } = spec;
        for (const status of OUTCOMES) {
          this.#comboRequests.inc({ combo, provider, model: member, status }, 0);
          this.#comboAttempts.inc({ combo, provider, model: member, status }, 0);
        }
      }
    }
  }

  /** A cooldown started on a connection (`<provider>#<name>`). */
  cooled(connectionId: string, reason: string): void {
    this.#cooldowns.inc({ provider: connectionId.split('#')[0]!, reason });
  }

  /** The alert kinds that exist, each shown at 0 before it first fires. */
  declareAlertKinds(kinds: readonly string[]): void {
    for (const kind of kinds) this.#alertsFired.inc({ kind }, 0);
  }

  alertFired(kind: string): void {
    this.#alertsFired.inc({ kind });
  }

  notification(channel: string, delivered: boolean): void {
    this.#notifications.inc({ channel, result: delivered ? 'delivered' : 'failed' });
  }

  observe(r: UsageRecord): void {
    const provider = r.provider || OTHER;
    const model = r.modelKnown ? r.model : OTHER;
    if (r.kind === 'keepalive') {
      this.#keepalive.inc({ provider, status: r.status });
      return;
    }
    const modelId = r.modelKnown ? r.model.slice(provider.length + 1) : OTHER;
    const s = this.#series(provider, model, modelId, r.providerGroup || OTHER);
    if (r.kind === 'attempt') this.#comboAttempts.inc({ combo: r.combo, provider, model, status: r.status });
    if (r.kind === 'combo') this.#comboRequests.inc({ combo: r.combo, provider, model, status: r.status });
    if (r.autoSwitched && r.kind !== 'attempt') this.#autoSwitched.inc();
    if (carriesUsage(r.kind)) this.#usage(s, r);
    if (!isClientRequest(r.kind)) return;
    s.request(r.status).inc();
    s.duration(r.errorType).observe(r.latency.totalMs / 1000);
    const t = ttftMs(r);
    if (t !== null) s.ttft().observe(t / 1000);
    this.#overhead.observe(overheadMs(r) / 1000);
  }

  /** Tokens and cost of one upstream call. */
  #usage(s: Series, r: UsageRecord): void {
    for (const b of USAGE_BUCKETS) {
      const v = r.usage[b];
      if (v) s.tokens(b).inc(v);
    }
    if (knowsInput(r.usage)) s.usageIn().observe(inputSide(r.usage));
    if (knowsOutput(r.usage)) s.usageOut().observe(outputSide(r.usage));
    s.cost.inc(r.cost.cost);
    s.listCost.inc(r.cost.listCost);
    if (r.usage.webSearches) s.searches().inc(r.usage.webSearches);
  }
}

function set<K, V>(m: Map<K, V>, k: K, v: V): V {
  m.set(k, v);
  return v;
}

interface Series {
  request(status: UsageRecord['status']): CounterChild;
  searches(): CounterChild;
  tokens(b: Bucket): CounterChild;
  usageIn(): HistogramChild;
  usageOut(): HistogramChild;
  readonly cost: CounterChild;
  readonly listCost: CounterChild;
  ttft(): HistogramChild;
  duration(errorType: string): HistogramChild;
}
