// Opening the store in the background (issue 17): the app listens first; the store is opened (the embedded engine
// loaded) and migrated after, and the attempt is repeated with capped backoff while it fails (a ClickHouse server
// that is not up yet). Until it is ready the app's store (a gated view, `Store.gated`) makes every operation wait
// for it, and one made while the last attempt failed is refused at once with the reason; the batch writer keeps the
// rows of the requests served meanwhile in the spool and inserts them once the store is there.

import { TollgateError } from '../core/errors.js';
import type { Store, StoreGate } from './client.js';
import { migrate, type Layout } from './migrations.js';

export interface OpeningEvents {
  /** An attempt failed; the next one follows after `retryMs` (Infinity: none follows, the failure is fatal). */
  failed(err: unknown, attempt: number, retryMs: number): void;
  /** The store is open and migrated, `ms` after `start`. */
  ready(ms: number, applied: readonly number[]): void;
}

export interface OpeningOptions {
  readonly layout?: Layout;
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  readonly events?: Partial<OpeningEvents>;
}

type State = 'idle' | 'waiting' | 'opening' | 'retrying' | 'ready' | 'failed' | 'closed';

/** What the request path is doing, for `startWhenQuiet`: requests begun so far, and how many are in flight. */
export interface Activity {
  readonly begun: number;
  readonly inFlight: number;
}

export interface QuietOptions {
  /** How long no request may have begun or been in flight before the opening starts (ms). */
  readonly quietMs: number;
  /** The longest the opening waits for that, from the call (ms). */
  readonly maxMs: number;
}

/** How often `startWhenQuiet` looks at the request path. */
const QUIET_POLL_MS = 10;

/** ClickHouse's answers that no retry can change: the credentials or the grants are wrong. */
const FATAL_TYPES = /^(AUTHENTICATION_FAILED|REQUIRED_PASSWORD|UNKNOWN_USER|WRONG_PASSWORD|ACCESS_DENIED|NOT_ENOUGH_PRIVILEGES|IP_ADDRESS_NOT_ALLOWED)$/;

/**
 * Is this failure to open the store one that retrying cannot fix? Refused credentials or grants, and an embedded
 * engine that is not installed. Anything else (a server not up yet, a timeout, a 503) is retried.
 */
export function isFatalOpenError(err: unknown): boolean {
  const type = (err as { type?: unknown } | null)?.type;
  if (typeof type === 'string' && FATAL_TYPES.test(type)) return true;
  return err instanceof Error && err.message.includes('the chdb package) is needed, but it is not installed');
}

export class StoreOpening implements StoreGate {
  /**
   * Resolves once the store is open and migrated; rejects when closed before that, or with the error itself when
   * opening failed in a way no retry can fix (`isFatalOpenError`).
   */
  readonly ready: Promise<void>;
  readonly #store: Store;
  readonly #opts: OpeningOptions;
  #state: State = 'idle';
  #error: unknown = null;
  #waiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  #attempt: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #quiet: NodeJS.Timeout | null = null;
  #settle!: { resolve: () => void; reject: (err: unknown) => void };

  /** `store`: the store itself (not a gated view of it), which the migrations run on. */
  constructor(store: Store, opts: OpeningOptions = {}) {
    this.#store = store;
    this.#opts = opts;
    this.ready = new Promise<void>((resolve, reject) => (this.#settle = { resolve, reject }));
    this.ready.catch(() => undefined); // closing before ready is not an error of its own
  }

  get isReady(): boolean {
    return this.#state === 'ready';
  }

  /** Why the store is not usable yet, or null once it is. */
  get reason(): string | null {
    switch (this.#state) {
      case 'ready':
        return null;
      case 'closed':
        return 'the store is closed';
      case 'failed':
        return `the store cannot be opened (${firstLine(this.#error)})`;
      case 'retrying':
        return `the store could not be opened (${firstLine(this.#error)}); retrying`;
      case 'waiting':
        return 'the store opens once the requests of the start are answered';
      default:
        return 'the store is being opened and migrated';
    }
  }

  /**
   * Begin opening once the request path is quiet: no request begun or in flight for `quietMs`, or `maxMs` from now at
   * the latest (a store operation meanwhile starts it at once). Loading the embedded engine blocks the event loop for
   * about a quarter of a second (docs/benchmarks.md, "Where the start goes"): the requests that come with the start
   * are answered first, not made to wait it out.
   */
  startWhenQuiet(activity: () => Activity, opts: QuietOptions): void {
    if (this.#state !== 'idle') return;
    this.#state = 'waiting';
    const until = performance.now() + opts.maxMs;
    let last = activity().begun;
    let quietSince = performance.now();
    this.#quiet = setInterval(() => {
      const now = performance.now();
      const a = activity();
      if (a.begun !== last || a.inFlight > 0) {
        last = a.begun;
        quietSince = now;
      }
      if (now - quietSince >= opts.quietMs || now >= until) this.start();
    }, QUIET_POLL_MS); // kept referenced: it ends by maxMs at the latest, or with close()
  }

  /** Begin opening (once; later calls do nothing). */
  start(): void {
    if (this.#state !== 'idle' && this.#state !== 'waiting') return;
    this.#stopWaiting();
    this.#state = 'opening';
    const t0 = performance.now();
    this.#run(1, t0);
  }

  #run(attempt: number, t0: number): void {
    this.#attempt = migrate(this.#store, undefined, this.#opts.layout).then(
      (applied) => {
        if (this.#state === 'closed') return;
        this.#state = 'ready';
        this.#error = null;
        this.#settle.resolve();
        for (const w of this.#take()) w.resolve();
        this.#opts.events?.ready?.(performance.now() - t0, applied);
      },
      (err: unknown) => {
        if (this.#state === 'closed') return;
        this.#error = err;
        if (isFatalOpenError(err)) {
          this.#state = 'failed';
          for (const w of this.#take()) w.reject(this.#unavailable());
          this.#settle.reject(err);
          this.#opts.events?.failed?.(err, attempt, Infinity);
          return;
        }
        this.#state = 'retrying';
        for (const w of this.#take()) w.reject(this.#unavailable());
        const base = this.#opts.retryBaseMs ?? 200;
        const retryMs = Math.min(this.#opts.retryMaxMs ?? 10_000, base * 2 ** Math.min(attempt - 1, 20)) * (0.5 + Math.random() / 2);
        this.#opts.events?.failed?.(err, attempt, retryMs);
        this.#timer = setTimeout(() => {
          this.#timer = null;
          if (this.#state !== 'retrying') return;
          this.#state = 'opening';
          this.#run(attempt + 1, t0);
        }, retryMs);
        this.#timer.unref();
      },
    );
  }

  #stopWaiting(): void {
    if (this.#quiet !== null) clearInterval(this.#quiet);
    this.#quiet = null;
  }

  #take(): { resolve: () => void; reject: (err: unknown) => void }[] {
    const w = this.#waiters;
    this.#waiters = [];
    return w;
  }

  #unavailable(): TollgateError {
    return new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', this.reason ?? 'the store is not ready', { cause: this.#error ?? undefined });
  }

  /**
   * The gate: resolves when the store is ready (starting to open it if nothing has yet); rejects at once while the
   * last attempt failed (a reader gets a 503 rather than waiting out a server that is down), and when closed.
   */
  wait(): Promise<void> {
    switch (this.#state) {
      case 'ready':
        return Promise.resolve();
      case 'retrying':
      case 'failed':
      case 'closed':
        return Promise.reject(this.#unavailable());
      case 'idle':
      case 'waiting':
        this.start();
        break;
      default:
        break;
    }
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  /**
   * Stop trying to open (an attempt in flight is waited for: it holds the connection). A store already open stays
   * usable through the gate, so that what closes after (the batch writer's last flush) can still use it.
   */
  async close(): Promise<void> {
    if (this.#state === 'closed' || this.#state === 'ready' || this.#state === 'failed') return;
    this.#state = 'closed';
    this.#stopWaiting();
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    for (const w of this.#take()) w.reject(this.#unavailable());
    this.#settle.reject(this.#unavailable());
    await this.#attempt?.catch(() => undefined);
  }
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);
}
