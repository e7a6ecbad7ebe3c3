// The clients that presented a wrong or missing key within the last window: the only ones whose count of failures
// (server.rate_limit.auth_failures_per_minute, a @fastify/rate-limit store) can say "blocked". The gate reads that
// store, which is an asynchronous call with a few awaits, only for them; a client with no refusal in the window is
// let through to the key check at once (docs/security.md, "Wrong keys"). A client is named by the limiter's own key
// (its IP, an IPv6 address by its /64), so that a client rotating addresses inside a subnet stays one client here as
// it is in the store.

import { normalizeIP } from '@fastify/rate-limit';

/** An X-Forwarded-For entry with a port, or an IPv6 one in brackets: its address is the IPv4 or the bracketed part. */
const WITH_PORT = /^(?:\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?|(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5})$/;

/**
 * X-Forwarded-For with every entry's port taken off (`203.0.113.7:4711` -> `203.0.113.7`, `[2001:db8::1]:443` ->
 * `2001:db8::1`): some proxies append the client's address with its port (Azure's application gateway does), which
 * made each connection a client of its own for both limits, and an address with a port is never a trusted proxy.
 * The header as it is when no entry has one.
 */
export function withoutPorts(xff: string): string {
  if (!xff.includes(':')) return xff;
  return xff.split(',').map((part) => {
    const entry = part.trim();
    const m = WITH_PORT.exec(entry);
    return m === null ? entry : (m[1] ?? m[2])!;
  }).join(', ');
}

/** The limiter's key for a client IP: IPv4 as it is (what normalizeIP gives for it), IPv6 by normalizeIP. */
export function clientKey(ip: string): string {
  return ip.includes(':') ? normalizeIP(ip) : ip;
}

export class FailingClients {
  /** Client key -> end of the window opened by its last refusal; in the order of those refusals (ended ones are
   * pruned when the map is full, the oldest first). */
  readonly #until = new Map<string, number>();
  /** Until then every client counts as failing: more failing clients came than are tracked. */
  #saturatedUntil = 0;
  readonly #windowMs: number;
  readonly #capacity: number;
  readonly #now: () => number;

  constructor(windowMs: number, capacity: number, now: () => number = Date.now) {
    this.#windowMs = windowMs;
    this.#capacity = capacity;
    this.#now = now;
  }

  /**
   * A refusal for `client`: it counts as failing for a window from now. The store's window for it began at or before
   * this refusal, so it ends no later: nobody the store blocks is ever passed over here.
   */
  failed(client: string): void {
    const t = this.#now();
    this.#until.delete(client);
    if (this.#until.size >= this.#capacity) this.#prune(t);
    if (this.#until.size >= this.#capacity) this.#saturatedUntil = t + this.#windowMs;
    else this.#until.set(client, t + this.#windowMs);
  }

  /** Has `client` been refused within the window (or are too many clients failing to tell)? */
  failing(client: string): boolean {
    const t = this.#now();
    if (t < this.#saturatedUntil) return true;
    const until = this.#until.get(client);
    return until !== undefined && until > t;
  }

  /** Forget the clients whose window ended: the oldest first (the map is in the order of refusals). */
  #prune(t: number): void {
    for (const [k, until] of this.#until) {
      if (until > t) return;
      this.#until.delete(k);
    }
  }
}
