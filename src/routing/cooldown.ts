// Cooldowns: a connection that fails is skipped by combos for a while. The wait grows exponentially with
// consecutive failures (initial_s x multiplier^(n-1), at most max_s) and is at least the upstream's Retry-After,
// which can raise it up to max_s and no further (docs/routing.md, Cooldowns); a success clears it. A provider is
// cooling when every one of its connections is.

import type { CooldownConfig } from '../config/types.js';

export { retryAfterMs } from '../core/retry-after.js';

export interface CooldownState {
  /** Consecutive failures. */
  readonly failures: number;
  /** Epoch ms when the connection may be used again. */
  readonly until: number;
  /** Why: an HTTP status ('429', '503'), an error code, or 'quota_exhausted'. */
  readonly reason: string;
}

export interface Failure {
  readonly reason: string;
  /** The upstream's Retry-After, in ms (a value that is not finite is ignored; at most max_s is honoured). */
  readonly retryAfterMs?: number | null;
  /** The provider said its quota is used up: cool for the longest wait. */
  readonly quotaExhausted?: boolean;
}

export class Cooldowns {
  readonly #states = new Map<string, CooldownState>();
  #cfg: CooldownConfig;
  readonly #now: () => number;
  readonly #onCool: (connectionId: string, reason: string) => void;

  constructor(cfg: CooldownConfig, now: () => number = Date.now, onCool: (connectionId: string, reason: string) => void = () => undefined) {
    this.#cfg = cfg;
    this.#now = now;
    this.#onCool = onCool;
  }

  configure(cfg: CooldownConfig): void {
    this.#cfg = cfg;
  }

  /** Record a failure; returns the cooldown in ms it starts (never more than max_s). */
  fail(connectionId: string, f: Failure): number {
    const prev = this.#states.get(connectionId);
    const failures = (prev?.failures ?? 0) + 1;
    const { initial_s, max_s, multiplier } = this.#cfg;
    const longest = max_s * 1000;
    const exp = f.quotaExhausted ? longest : Math.min(max_s, initial_s * multiplier ** (failures - 1)) * 1000;
    // The upstream's Retry-After is honoured up to max_s: a provider that says "in 3,000 years" (or sends 400 digits)
    // is tried again after the longest cooldown, as after an exhausted quota, and the instant stays renderable.
    const said = f.retryAfterMs ?? 0;
    const asked = Number.isFinite(said) ? Math.min(said, longest) : 0;
    const wait = Math.max(exp, asked);
    const now = this.#now();
    // An earlier, longer cooldown is kept, but not past max_s from now (max_s may have been lowered since).
    const until = Math.min(Math.max(prev?.until ?? 0, now + wait), now + longest);
    this.#states.set(connectionId, { failures, until, reason: f.quotaExhausted ? 'quota_exhausted' : f.reason });
    this.#onCool(connectionId, f.quotaExhausted ? 'quota_exhausted' : f.reason);
    return wait;
  }

  succeed(connectionId: string): void {
    this.#states.delete(connectionId);
  }

  /** The state while cooling; null when the connection may be used. */
  cooling(connectionId: string): CooldownState | null {
    const s = this.#states.get(connectionId);
    return s !== undefined && s.until > this.#now() ? s : null;
  }

  /** Remaining ms of a cooldown (0 when not cooling). */
  remainingMs(connectionId: string): number {
    const s = this.cooling(connectionId);
    return s === null ? 0 : s.until - this.#now();
  }

  /** Every recorded state (also expired ones, whose failure count still grows the next wait). */
  entries(): IterableIterator<[string, CooldownState]> {
    return this.#states.entries();
  }
}
