// A full garbage collection once the gateway has gone quiet after a busy spell (server.idle_gc_s), so the memory V8
// grew under load goes back to the system. Under load V8's young generation grows to its maximum (two 16 MiB
// semi-spaces) and nothing shrinks it while the process idles: no allocation fills it to start a collection, and the
// memory reducer arms only after a full one. A full collection shrinks it when V8 sees a low allocation rate (under
// 1 MB/s over the last 5 s, as V8 measures it: between its last collections). The end of the busy spell itself would
// count against that (what was allocated after the spell's last collection), so the quiet starts with a young
// collection (a few milliseconds), and the full one (which also compacts the old generation, below) comes once the
// quiet has lasted `idle_gc_s` and at least 5 s after it: about 30 MiB of RSS after a burst at c=32
// (docs/benchmarks.md, "Idle after a busy spell"). Both run on the main thread, once per quiet spell. Quiet means no
// proxied request begun: scrapes, probes and the console's reads do not count (a scrape every 15 s would otherwise
// make a collection every 15 s). A long stream still running holds the full one off (its pause, about 40 ms, would
// come between two of its chunks) until it ends, or for MAX_WAIT_MS at most.

import { runInNewContext } from 'node:vm';
import { namesV8Flag, withV8Flag } from './v8-flags.js';

/** 'young': V8's young generation only (a scavenge); 'full': the whole heap. */
export type GcKind = 'young' | 'full';

export interface IdleGcOptions {
  /** Seconds without a proxied request after one before the full collection; 0 turns it off. Read at each look. */
  readonly idleS: () => number;
  /** Proxied requests begun so far. */
  readonly begun: () => number;
  /** Proxied requests in flight now (none when not given): the full collection waits for them (MAX_WAIT_MS at most). */
  readonly inFlight?: () => number;
  /** The collections (V8's by default); null when none can be had. */
  readonly collect?: ((kind: GcKind) => void) | null;
  /** After each full collection, with its duration. */
  readonly collected?: (ms: number) => void;
  /** How often the collector looks, in ms (1 s by default). */
  readonly tickMs?: number;
  readonly now?: () => number;
}

/** V8 measures the allocation rate over the last 5 s of its collections' samples: the full one waits that long. */
export const RATE_WINDOW_MS = 5000;
/** The longest the full collection waits, once due, for the requests in flight (a long stream) to end. */
export const MAX_WAIT_MS = 60_000;

let exposed: ((kind: GcKind) => void) | null | undefined;

/**
 * V8's `gc()`, without starting the process with --expose-gc: the flag is set just long enough to make one new
 * context, whose global `gc` is taken; the gateway's own context never gets a global `gc` (the idiom of Jest's
 * jest-leak-detector; two lines, so not a dependency). Null if V8 refuses.
 */
export function v8Gc(): ((kind: GcKind) => void) | null {
  if (exposed !== undefined) return exposed;
  let gc: unknown = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function') {
    try {
      gc = withV8Flag('expose-gc', () => runInNewContext('typeof gc === "function" ? gc : null'));
    } catch {
      gc = null;
    }
  }
  if (typeof gc !== 'function') return (exposed = null);
  // `gc()` is a full collection; `{ type: 'minor' }` a young one (`{ type: 'major' }` makes a young one too in
  // Node 20's V8, measured: test/core/idle-gc.test.ts).
  const run = gc as (opts?: { type: 'minor' }) => void;
  return (exposed = (kind) => (kind === 'young' ? run({ type: 'minor' }) : compacting(run)));
}

/** The flag on node's command line (either way round) is the operator's: left as they set it. */
const COMPACT = 'compact-on-every-full-gc';
const operatorCompacts = namesV8Flag(COMPACT);

/**
 * One full collection that also compacts the old generation. V8 compacts on its own only pages it finds fragmented
 * enough, and a busy spell leaves the old generation's pages sparsely used (what a request kept, promoted, then freed):
 * the server path idled at 88 MiB after 5,000 requests, 6 MiB of it old-generation pages with nothing on them worth
 * keeping, 79 MiB with this (docs/benchmarks.md, "Idle after a busy spell"). The flag is V8's and read at each full
 * collection, so it is on for this one only; the extra pause (moving what is alive) is paid once a quiet.
 */
function compacting(run: () => void): void {
  if (operatorCompacts) run();
  else withV8Flag(COMPACT, run);
}

export class IdleGc {
  readonly #opts: IdleGcOptions;
  /** Found at the first collection (making a context costs a start a few milliseconds); null: none to be had. */
  #collect: ((kind: GcKind) => void) | null | undefined;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | null = null;
  /** `begun` when last looked at, and when it last changed. */
  #seen: number;
  #changedAt: number;
  /** Requests were served since the last full collection (or the start): one is owed once the quiet lasts. */
  #owed = false;
  /** When this quiet's young collection ran (null: not yet). */
  #youngAt: number | null = null;

  constructor(opts: IdleGcOptions) {
    this.#opts = opts;
    this.#collect = opts.collect;
    this.#now = opts.now ?? Date.now;
    this.#seen = opts.begun();
    this.#changedAt = this.#now();
  }

  start(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => this.check(), this.#opts.tickMs ?? 1000);
    this.#timer.unref();
  }

  /**
   * One look. Requests begun since the last look: a full collection is owed, the quiet starts again. Otherwise, once
   * per quiet: the young collection at the first look, the full one when the quiet has lasted and the young one is
   * RATE_WINDOW_MS old.
   */
  check(): void {
    const begun = this.#opts.begun();
    const now = this.#now();
    if (begun !== this.#seen) {
      this.#seen = begun;
      this.#changedAt = now;
      this.#owed = true;
      this.#youngAt = null;
      return;
    }
    const idleS = this.#opts.idleS();
    if (!this.#owed || idleS <= 0) return;
    const collect = (this.#collect ??= v8Gc());
    if (collect === null) return;
    if (this.#youngAt === null) {
      collect('young');
      this.#youngAt = now;
      return;
    }
    const due = Math.max(this.#changedAt + idleS * 1000, this.#youngAt + RATE_WINDOW_MS);
    if (now < due) return;
    // A stream still running would see the pause (about 40 ms, compacting) between two of its chunks: the collection
    // waits for the requests in flight to end, up to MAX_WAIT_MS past when it was due (one that never ends does not
    // keep the memory grown for good).
    if ((this.#opts.inFlight?.() ?? 0) > 0 && now - due < MAX_WAIT_MS) return;
    this.#owed = false;
    const t0 = performance.now();
    collect('full');
    this.#opts.collected?.(performance.now() - t0);
  }

  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
