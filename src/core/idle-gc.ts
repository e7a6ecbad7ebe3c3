// A full garbage collection once the gateway has gone quiet after a busy spell (server.idle_gc_s), so the memory V8
// grew under load goes back to the system. Under load V8's young generation grows to its maximum (two 16 MiB
// semi-spaces) and nothing shrinks it while the process idles: no allocation fills it to start a collection, and the
// memory reducer only arms after a full one. One collection at a low allocation rate shrinks it at once (about 30 MiB
// of RSS after a burst at c=32; docs/benchmarks.md, "Idle after a busy spell"). It runs on the main thread: tens
// of milliseconds, once per quiet spell. Quiet means no proxied request begun: scrapes, probes and the console's reads
// do not count (a scrape every 15 s would otherwise make a collection every 15 s), and a long stream still running
// does not hold it off (a pause of tens of milliseconds between two of its chunks).

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleGcOptions {
  /** Seconds without a proxied request after one before the collection; 0 turns it off. Read at each look. */
  readonly idleS: () => number;
  /** Proxied requests begun so far. */
  readonly begun: () => number;
  /** The collection (V8's full collection by default); null when none can be had. */
  readonly collect?: (() => void) | null;
  /** After each collection, with its duration. */
  readonly collected?: (ms: number) => void;
  /** How often the collector looks, in ms (1 s by default). */
  readonly tickMs?: number;
  readonly now?: () => number;
}

let exposed: (() => void) | null | undefined;

/**
 * V8's `gc()`, without starting the process with --expose-gc: the flag is set just long enough to make one new
 * context, whose global `gc` is taken; the gateway's own context never gets a global `gc`. Null if V8 refuses.
 */
export function fullGc(): (() => void) | null {
  if (exposed !== undefined) return exposed;
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return (exposed = own as () => void);
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('typeof gc === "function" ? gc : null');
    exposed = typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    exposed = null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return exposed;
}

export class IdleGc {
  readonly #opts: IdleGcOptions;
  /** Found at the first collection (making a context costs a start a few milliseconds); null: none to be had. */
  #collect: (() => void) | null | undefined;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | null = null;
  /** `begun` when last looked at, and when it last changed. */
  #seen: number;
  #changedAt: number;
  /** Requests were served since the last collection (or the start): one is owed once the quiet lasts. */
  #owed = false;
  #collections = 0;

  constructor(opts: IdleGcOptions) {
    this.#opts = opts;
    this.#collect = opts.collect;
    this.#now = opts.now ?? Date.now;
    this.#seen = opts.begun();
    this.#changedAt = this.#now();
  }

  /** Collections made so far. */
  get collections(): number {
    return this.#collections;
  }

  start(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => this.check(), this.#opts.tickMs ?? 1000);
    this.#timer.unref();
  }

  /** One look: a collection when requests were served since the last one and the quiet has lasted. */
  check(): void {
    const begun = this.#opts.begun();
    const now = this.#now();
    if (begun !== this.#seen) {
      this.#seen = begun;
      this.#changedAt = now;
      this.#owed = true;
      return;
    }
    const idleS = this.#opts.idleS();
    if (!this.#owed || idleS <= 0 || now - this.#changedAt < idleS * 1000) return;
    this.#owed = false;
    const collect = (this.#collect ??= fullGc());
    if (collect === null) return;
    const t0 = performance.now();
    collect();
    this.#collections++;
    this.#opts.collected?.(performance.now() - t0);
  }

  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
