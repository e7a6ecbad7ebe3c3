// The bounded batch writer (DESIGN.md decision 2). The request path only calls `enqueue`, which never waits.
// Rows are flushed when `maxRows` are queued or every `flushMs`; a failed insert is retried with backoff (inserts
// are idempotent by request_id, so a retry cannot double-count). When the queue is full, new rows are dropped
// and counted. `close` drains what is queued.

import type { Store } from './client.js';

export interface WriterOptions {
  readonly maxRows: number;
  readonly flushMs: number;
  readonly queueMax: number;
  readonly retries?: number;
  readonly retryBaseMs?: number;
}

export interface WriterEvents<Row = Record<string, unknown>> {
  /** `rows` were stored (they are visible to readers from now on). */
  written(n: number, rows: readonly Row[]): void;
  dropped(n: number, reason: 'queue_full' | 'insert_failed'): void;
  error(err: unknown, attempt: number): void;
}

export class BatchWriter<Row extends Record<string, unknown>> {
  readonly #store: Store;
  readonly #table: string;
  readonly #opts: Required<WriterOptions>;
  readonly #events: WriterEvents<Row>;
  #queue: Row[] = [];
  #timer: NodeJS.Timeout | null = null;
  #writing: Promise<void> | null = null;
  #closed = false;

  constructor(store: Store, table: string, opts: WriterOptions, events: WriterEvents<Row>) {
    this.#store = store;
    this.#table = table;
    this.#opts = { retries: 3, retryBaseMs: 100, ...opts };
    this.#events = events;
  }

  get depth(): number {
    return this.#queue.length;
  }

  /** Hand a row over; returns false (and counts a drop) when the queue is full or the writer is closed. */
  enqueue(row: Row): boolean {
    if (this.#closed || this.#queue.length >= this.#opts.queueMax) {
      this.#events.dropped(1, 'queue_full');
      return false;
    }
    this.#queue.push(row);
    if (this.#writing === null) this.#schedule();
    return true;
  }

  /** A full batch goes now; fewer rows wait for the flush timer, so each insert is one large part. */
  #schedule(): void {
    if (this.#queue.length >= this.#opts.maxRows) {
      this.#clearTimer();
      this.#writing = this.#write(false);
    } else if (this.#queue.length > 0 && this.#timer === null && !this.#closed) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        if (this.#writing === null) this.#writing = this.#write(false);
      }, this.#opts.flushMs);
      this.#timer.unref();
    }
  }

  #clearTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Write one batch, then more only while full batches wait (or everything, when draining). */
  #write(drain: boolean): Promise<void> {
    return (async () => {
      do {
        await this.#writeBatch(this.#queue.splice(0, this.#opts.maxRows));
      } while (this.#queue.length >= (drain ? 1 : this.#opts.maxRows));
    })().finally(() => {
      this.#writing = null;
      this.#schedule();
    });
  }

  /** Write everything queued now; resolves when the queue is empty (failed batches dropped and counted). */
  #batches = 0;

  async flush(): Promise<void> {
    while (this.#writing !== null) await this.#writing;
    if (this.#queue.length === 0) return;
    this.#clearTimer();
    this.#writing = this.#write(true);
    await this.#writing;
  }

  async #writeBatch(batch: Row[]): Promise<void> {
    // One token per batch, the same on every retry: an insert that succeeded but whose answer was lost is not
    // counted twice by the materialized views (the raw table would dedupe by request_id anyway).
    const token = `${this.#table}-${process.pid}-${++this.#batches}-${Date.now()}`;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#store.insert(this.#table, batch, token);
        this.#events.written(batch.length, batch);
        return;
      } catch (err) {
        this.#events.error(err, attempt);
        if (attempt > this.#opts.retries) {
          this.#events.dropped(batch.length, 'insert_failed');
          return;
        }
        await new Promise((r) => setTimeout(r, this.#opts.retryBaseMs * 2 ** (attempt - 1)));
      }
    }
  }

  /** Stop taking rows and drain the queue. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#clearTimer();
    await this.flush();
  }
}
