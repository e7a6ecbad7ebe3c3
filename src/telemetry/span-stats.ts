// What became of the spans the gateway ended: exported, failed (the collector refused them or could not be reached,
// after the exporter's retries) or dropped (the batch processor's queue was full), and how many wait in that queue.
// Rows and metrics are exact whatever the collector does; without these counts the third record could fall behind
// silently (the SDK only says so through its own `diag` logger, off unless OTEL_LOG_LEVEL is set).
//
// The counts are the SDK's own: its batch span processor reports them as self-observability metrics
// (`otel.sdk.processor.span.*`, the OpenTelemetry semantic conventions for SDK metrics) to the meter provider it is
// given. `SpanExportStats` is that meter provider, kept to the two instruments read here (the spans processed, by
// result, and the queue's size); every other instrument, the queue's capacity included, is the API's no-op. Nothing
// here runs per span: the processor reports once an export (or a drop).

import { createNoopMeter, type Attributes, type Counter, type Meter, type MeterProvider, type ObservableCallback, type ObservableResult, type ObservableUpDownCounter } from '@opentelemetry/api';

/** The instruments of the SDK's batch span processor read here (semantic conventions, `otel.sdk.processor.span.*`). */
export const PROCESSOR_METRIC = {
  processed: 'otel.sdk.processor.span.processed',
  queueSize: 'otel.sdk.processor.span.queue.size',
} as const;

/** The `error.type` the processor gives spans it dropped because its queue was full. */
const QUEUE_FULL = 'queue_full';

export const SPAN_RESULTS = ['exported', 'failed', 'dropped'] as const;
export type SpanResult = (typeof SPAN_RESULTS)[number];

export class SpanExportStats implements MeterProvider {
  readonly #counts: Record<SpanResult, number> = { exported: 0, failed: 0, dropped: 0 };
  readonly #queues = new Set<ObservableCallback>();

  /** Spans that reached each end so far. */
  count(result: SpanResult): number {
    return this.#counts[result];
  }

  /** Spans ended and waiting in the processor's queue for their export (0 without an SDK). */
  queued(): number {
    let n = 0;
    const result: ObservableResult = { observe: (value) => (n += value ?? 0) };
    for (const callback of this.#queues) void callback(result);
    return n;
  }

  getMeter(): Meter {
    const noop = createNoopMeter();
    const processed: Counter = { add: (n, attrs) => this.#processed(n, attrs) };
    const queue: ObservableUpDownCounter = {
      addCallback: (callback) => void this.#queues.add(callback),
      removeCallback: (callback) => void this.#queues.delete(callback),
    };
    return Object.assign(Object.create(noop) as Meter, {
      createCounter: (name: string, opts?: object) => (name === PROCESSOR_METRIC.processed ? processed : noop.createCounter(name, opts)),
      createObservableUpDownCounter: (name: string, opts?: object) =>
        name === PROCESSOR_METRIC.queueSize ? queue : noop.createObservableUpDownCounter(name, opts),
    });
  }

  #processed(n: number, attrs: Attributes | undefined): void {
    const error = attrs?.['error.type'];
    const result: SpanResult = error === undefined ? 'exported' : error === QUEUE_FULL ? 'dropped' : 'failed';
    this.#counts[result] += n;
  }
}

/** The process's: the SDK is one a process (src/telemetry/otel.ts), and so are its spans. */
export const spanExportStats = new SpanExportStats();
