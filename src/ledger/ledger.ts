// Hands each finished usage record to every sink (the ClickHouse writer, the Prometheus metrics, the alert
// evaluator), and tells the sinks that care (the writer's spool) when a request begins, with a snapshot of its record
// as it would be if it ended now: a request in flight when the process dies is then still in the record. A sink that
// throws is logged and never breaks the request or the other sinks.

import type { UsageRecord } from './record.js';
import type { Usage } from './types.js';

export type RecordSink = (r: UsageRecord) => void;
/**
 * How far a request in flight has come, read while it runs (the live monitor): output tokens streamed so far (the
 * upstream's count once it reported one, else estimated from the text at about four characters a token) against the
 * total the request allows (its max output tokens, null when it named none); and its input as estimated from the
 * request sent while the upstream has reported none (null once it has, and before anything was sent).
 */
export interface Progress {
  readonly streamedTokens: number;
  readonly estimatedTotal: number | null;
  readonly estimatedInput: number | null;
  /**
   * A combo request's attempts in flight, the latest started last (the one streaming to the client, unless a fusion's
   * panel is out); absent for any other request or between attempts. The record has only the attempts finished.
   */
  readonly attempts?: readonly CallInFlight[];
}

/** One upstream call in flight (a combo's attempt): what serves it, its usage as it stands, how far it has come. */
export interface CallInFlight {
  /** As `provider/model`. */
  readonly model: string;
  readonly provider: string;
  readonly usage: Usage;
  readonly streamedTokens: number;
  readonly estimatedInput: number | null;
}

/**
 * A request began; `snapshot` builds its record from what is known at the time it is called, `progress` how far its
 * answer has come.
 */
export type BeginSink = (requestId: string, snapshot: () => UsageRecord, progress: () => Progress) => void;

export class Ledger {
  readonly #sinks: RecordSink[] = [];
  readonly #beginSinks: BeginSink[] = [];
  readonly #onError: (err: unknown) => void;

  constructor(onError: (err: unknown) => void) {
    this.#onError = onError;
  }

  subscribe(sink: RecordSink): void {
    this.#sinks.push(sink);
  }

  subscribeBegin(sink: BeginSink): void {
    this.#beginSinks.push(sink);
  }

  begin(requestId: string, snapshot: () => UsageRecord, progress: () => Progress): void {
    for (const sink of this.#beginSinks) {
      try {
        sink(requestId, snapshot, progress);
      } catch (err) {
        this.#onError(err);
      }
    }
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
