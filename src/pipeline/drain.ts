// A clean stop (SIGTERM, app.close()): the requests in flight finish, each connection closes after its answer, and the
// stop is bounded. fastify's close waits for every request; one client that stops reading a stream (its socket full,
// never closed) held it for ever, until a supervisor's SIGKILL recorded that request `interrupted` with none of the
// tokens it had been sent. Past `server.shutdown_timeout_s` the connections still open are closed: their requests
// end as aborts with what was streamed so far, recorded with error type `shutdown` (cutAtStop), and the stop goes on.

import type { Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { ClearedMap } from '../core/cleared-map.js';

/** The least time a stop's store steps get (the writer's last insert, after a slow step before it too). */
export const STORE_STEPS_MS = 2000;

/** The answers the stop's deadline cut (markAborted records them as `shutdown`, not as a client that left). */
export const cutAtStop = new WeakSet<ServerResponse>();

export class Drain {
  readonly #open = new ClearedMap<number, ServerResponse>();
  #seq = 0;
  #since: number | null = null;
  #sweeper: NodeJS.Timeout | null = null;

  /** Whether the stop has begun: answers then say `connection: close`. */
  get closing(): boolean {
    return this.#since !== null;
  }

  /** A request has begun: its answer is in flight until its response closes. */
  track(raw: ServerResponse): void {
    const id = ++this.#seq; // a number key: the response itself as the key would stay in a replaced table (cleared-map.ts)
    this.#open.set(id, raw);
    raw.once('close', () => this.#open.delete(id));
  }

  /**
   * The stop has begun: every tenth of a second, idle connections are closed (all of them once nothing is in flight,
   * since Node does not always see a keep-alive one as idle), and past `deadlineS` (0: none) every one still open.
   */
  begin(server: Server, deadlineS: () => number): void {
    this.#since = performance.now();
    this.#sweeper = setInterval(() => this.#sweep(server, deadlineS()), 100);
    this.#sweeper.unref();
  }

  /**
   * The time left to the steps after the drain, as a function of now: what is left of `boundS` since the stop began
   * (0: no bound, Infinity), at least `leastMs` from this call.
   */
  remaining(boundS: number, leastMs: number): () => number {
    const now = performance.now();
    const until = boundS === 0 ? Infinity : now + Math.max(leastMs, boundS * 1000 - (now - (this.#since ?? now)));
    return () => until - performance.now();
  }

  end(): void {
    if (this.#sweeper !== null) clearInterval(this.#sweeper);
    this.#sweeper = null;
  }

  #sweep(server: Server, deadlineS: number): void {
    if (this.#open.size === 0) return server.closeAllConnections();
    if (deadlineS > 0 && performance.now() - this.#since! >= deadlineS * 1000) {
      for (const raw of this.#open.values()) cutAtStop.add(raw);
      return server.closeAllConnections();
    }
    server.closeIdleConnections();
  }
}
