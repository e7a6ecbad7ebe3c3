// The routing step's verdict on a provider's quota (QuotaGate: routing/router.ts), answered for every combo attempt
// without a read of the store (DESIGN.md decision 10: "short cache plus local in-flight counts"): the latest
// snapshot's figures (quota.ts), plus what this process published since that snapshot counted its calls (the
// unstored list's tallies: unstored.ts), plus, for a quota counted in requests, the combo attempts in flight to the
// provider (reserved when the attempt is chosen, released when its record is published). O(1) per question.
// docs/quota.md, "Routing: the calls in flight".

import { exhaustedUntil, msToHours, type QuotaEvaluation } from '../config/quota-kinds.js';
import type { Tally, UnstoredCalls } from './unstored.js';

const NONE: Tally = { calls: 0, requests: 0, tokens: 0, ms: 0 };

export class QuotaVerdicts {
  readonly #list: UnstoredCalls;
  /** The latest snapshot's entries, by provider id. */
  #entries = new Map<string, QuotaEvaluation>();
  /** The list's tallies the latest snapshot counts: what it adds is the tallies now less these. */
  #counted: ReadonlyMap<string, Tally> = new Map();
  /** Combo attempts chosen whose record is not published yet, by provider id. */
  readonly #inFlight = new Map<string, number>();

  readonly #clock: () => number;

  constructor(list: UnstoredCalls, clock: () => number = Date.now) {
    this.#list = list;
    this.#clock = clock;
  }

  /** A snapshot's entries, and the tallies of the calls it counts (every call the list held when it was built). */
  adopt(entries: readonly (QuotaEvaluation & { readonly id: string })[], counted: ReadonlyMap<string, Tally>): void {
    this.#entries = new Map(entries.map((e) => [e.id, e]));
    this.#counted = counted;
  }

  /** The snapshot's entry of a provider (none before the first snapshot, or for a provider it did not know). */
  entry(providerId: string): QuotaEvaluation | undefined {
    return this.#entries.get(providerId);
  }

  /** An attempt to the provider was chosen: counted in flight until the returned release (once; later calls do nothing). */
  reserve(providerId: string): () => void {
    this.#inFlight.set(providerId, (this.#inFlight.get(providerId) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const n = (this.#inFlight.get(providerId) ?? 1) - 1;
      if (n > 0) this.#inFlight.set(providerId, n);
      else this.#inFlight.delete(providerId);
    };
  }

  /** Attempts in flight to the provider (tests, diagnostics). */
  inFlight(providerId: string): number {
    return this.#inFlight.get(providerId) ?? 0;
  }

  /** Whether the provider's quota is used up: the snapshot's figures with the calls since and in flight added. */
  exhausted(providerId: string): boolean {
    return this.#now(providerId)?.exhausted === true;
  }

  /** When a used-up provider's quota returns (exhaustedUntil of the figures `exhausted` judged); null otherwise. */
  resetsAt(providerId: string): number | null {
    const e = this.#now(providerId);
    return e?.exhausted === true ? exhaustedUntil(e) : null;
  }

  /** The snapshot's evaluation of the provider with this process's calls since it and in flight added. */
  #now(providerId: string): QuotaEvaluation | undefined {
    let e = this.#entries.get(providerId);
    if (e === undefined) return e;
    if (e.exhausted) {
      // A used-up day or month whose reset has passed since the snapshot (no read since: the store down, or the first
      // second of a new window) starts again from 0: the calls since the snapshot are counted against the new window
      // (over-cautious: some were in the old one), a month's limit beside it as it stood. A rolling window is held
      // until a read: its "reset" is when its oldest counted row leaves, not when its use falls under the limit.
      const until = exhaustedUntil(e);
      if (until === null || until > this.#clock() || e.reset.type === 'rolling') return e;
      e = { ...e, quota: { ...e.quota, used: 0 }, exhausted: false };
    }
    const now = this.#list.tally(providerId) ?? NONE;
    const then = this.#counted.get(providerId) ?? NONE;
    // Requests: those published since that went out upstream (one refused before its call is none), and those in
    // flight (an attempt counts from its choice: whether it will go out is not known yet). Tokens and time are known
    // only once a call has ended.
    const inFlight = this.#inFlight.get(providerId) ?? 0;
    if (now.calls - then.calls + inFlight === 0) return e;
    const requests = now.requests - then.requests + inFlight;
    const q = e.quota;
    const added = q.unit === 'requests' ? requests : q.unit === 'hours' ? msToHours(now.ms - then.ms) : now.tokens - then.tokens;
    const used = q.used + added;
    const own = q.limit !== null && used >= q.limit;
    const s = e.secondary;
    const month = s !== undefined && s.used + requests >= s.limit;
    if (!own && !month) return e;
    return { ...e, quota: { ...q, used }, exhausted: true, ...(s === undefined ? {} : { secondary: { ...s, used: s.used + requests, exhausted: month } }) };
  }
}
