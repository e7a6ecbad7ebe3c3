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

export interface WriterEvents {
  written(n: number): void;
  dropped(n: number, reason: 'queue_full' | 'insert_failed'): void;
  error(err: unknown, attempt: number): void;
}

export class BatchWriter<Row extends Record<string, unknown>> {
  readonly #store: Store;
  readonly #table: string;
  readonly #opts: Required<WriterOptions>;
  readonly #events: WriterEvents;
  #queue: Row[] = [];
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  #closed = false;

  constructor(store: Store, table: string, opts: WriterOptions, events: WriterEvents) {
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
    if (this.#queue.length >= this.#opts.maxRows) this.#kick();
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => this.#kick(), this.#opts.flushMs);
      this.#timer.unref();
    }
    return true;
  }

  #kick(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#flushing === null) void this.flush();
  }

  /** Write everything queued now; resolves when the queue is empty or the batch that failed has been dropped. */
  async flush(): Promise<void> {
    if (this.#flushing !== null) return this.#flushing;
    this.#flushing = (async () => {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#opts.maxRows);
        await this.#writeBatch(batch);
      }
    })().finally(() => {
      this.#flushing = null;
      if (this.#queue.length > 0) this.#kick();
    });
    return this.#flushing;
  }

  async #writeBatch(batch: Row[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#store.insert(this.#table, batch);
        this.#events.written(batch.length);
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
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.flush();
  }
}
