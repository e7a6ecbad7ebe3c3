// Hands each finished usage record to every sink (the ClickHouse writer, the Prometheus metrics, and later the
// alert evaluator). A sink that throws is logged and never breaks the request or the other sinks.

import type { UsageRecord } from './record.js';

export type RecordSink = (r: UsageRecord) => void;

export class Ledger {
  readonly #sinks: RecordSink[] = [];
  readonly #onError: (err: unknown) => void;

  constructor(onError: (err: unknown) => void) {
    this.#onError = onError;
  }

  subscribe(sink: RecordSink): void {
    this.#sinks.push(sink);
  }

  publish(r: UsageRecord): void {
    for (const sink of this.#sinks) {
      try {
        sink(r);
      } catch (err) {
        this.#onError(err);
      }
    }
  }
}
