// The Prometheus ledger: one registry per app, fed only by finished usage records (and the writer's counters),
// so /metrics agrees with the ClickHouse rows. Label values come from the config: a model that is not configured
// is labelled '_other'.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BUCKETS as USAGE_BUCKETS, type Bucket } from '../usage/types.js';
import { inputSide, knowsInput, knowsOutput, outputSide } from '../usage/types.js';
import { overheadMs, ttftMs, type UsageRecord } from '../usage/record.js';
import { BUCKETS, METRIC, OTHER, TOKEN_TYPE } from './names.js';

const GENAI_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'] as const;

export class Metrics {
  readonly registry = new Registry();
  readonly #tokenUsage;
  readonly #duration;
  readonly #ttft;
  readonly #requests;
  readonly #tokens;
  readonly #cost;
  readonly #listCost;
  readonly #overhead;
  readonly rowsWritten;
  readonly rowsDropped;
  readonly configReloads;

  constructor(queueDepth: () => number, opts: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.#tokenUsage = new Histogram({
      name: METRIC.tokenUsage, help: 'Number of input and output tokens used (GenAI semconv gen_ai.client.token.usage).',
      labelNames: [...GENAI_LABELS, 'gen_ai_token_type'], buckets: [...BUCKETS.tokenUsage], registers,
    });
    this.#duration = new Histogram({
      name: METRIC.operationDuration, help: 'GenAI operation duration as seen by the client of the gateway.',
      labelNames: [...GENAI_LABELS, 'error_type'], buckets: [...BUCKETS.operationDuration], registers,
    });
    this.#ttft = new Histogram({
      name: METRIC.timeToFirstToken, help: 'Time to the first streamed token.',
      labelNames: [...GENAI_LABELS], buckets: [...BUCKETS.timeToFirstToken], registers,
    });
    this.#requests = new Counter({ name: METRIC.requests, help: 'Client requests by outcome.', labelNames: ['provider', 'model', 'status'], registers });
    this.#tokens = new Counter({ name: METRIC.tokens, help: 'Tokens by usage bucket (buckets do not overlap).', labelNames: ['provider', 'model', 'type'], registers });
    this.#cost = new Counter({ name: METRIC.cost, help: 'Billed cost in USD (0 for subscription and free providers).', labelNames: ['provider', 'model', 'group'], registers });
    this.#listCost = new Counter({ name: METRIC.listCost, help: 'Cost at list price in USD.', labelNames: ['provider', 'model', 'group'], registers });
    this.#overhead = new Histogram({
      name: METRIC.overhead, help: 'Time spent in the gateway itself: total minus time waiting on the upstream.',
      buckets: [...BUCKETS.overhead], registers,
    });
    this.rowsWritten = new Counter({ name: METRIC.rowsWritten, help: 'Usage rows written to ClickHouse.', registers });
    this.rowsDropped = new Counter({ name: METRIC.rowsDropped, help: 'Usage rows dropped (queue full or insert failed after retries).', labelNames: ['reason'], registers });
    this.configReloads = new Counter({ name: METRIC.configReloads, help: 'Live config reloads by result.', labelNames: ['result'], registers });
    // Series that alerting rules query exist from the start (at 0), so increase() and rate() see the first event.
    for (const reason of ['queue_full', 'insert_failed']) this.rowsDropped.inc({ reason }, 0);
    for (const result of ['applied', 'rejected']) this.configReloads.inc({ result }, 0);
    new Gauge({
      name: METRIC.queueDepth, help: 'Usage rows waiting to be written.', registers,
      collect() {
        this.set(queueDepth());
      },
    });
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  observe(r: UsageRecord): void {
    const provider = r.provider || OTHER;
    const model = r.modelKnown ? r.model : OTHER;
    const modelId = r.modelKnown ? r.model.slice(provider.length + 1) : OTHER;
    const genai = { gen_ai_operation_name: 'chat', gen_ai_provider_name: provider, gen_ai_request_model: modelId };
    this.#requests.inc({ provider, model, status: r.status });
    for (const b of USAGE_BUCKETS) {
      const v = r.usage[b as Bucket];
      if (v) this.#tokens.inc({ provider, model, type: TOKEN_TYPE[b as Bucket] }, v);
    }
    if (knowsInput(r.usage)) this.#tokenUsage.observe({ ...genai, gen_ai_token_type: 'input' }, inputSide(r.usage));
    if (knowsOutput(r.usage)) this.#tokenUsage.observe({ ...genai, gen_ai_token_type: 'output' }, outputSide(r.usage));
    const group = r.providerGroup || OTHER;
    this.#cost.inc({ provider, model, group }, r.cost.cost);
    this.#listCost.inc({ provider, model, group }, r.cost.listCost);
    this.#duration.observe({ ...genai, error_type: r.errorType }, r.latency.totalMs / 1000);
    const ttft = ttftMs(r);
    if (ttft !== null) this.#ttft.observe(genai, ttft / 1000);
    this.#overhead.observe(overheadMs(r) / 1000);
  }
}
