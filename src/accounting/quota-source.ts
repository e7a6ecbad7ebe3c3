// Provider usage sources (DESIGN.md decision 6): an HTTP endpoint of the provider (or of a small adapter in front of
// it) that answers `{ "used": number, "limit": number, "reset": "ISO 8601" }` (reset optional). It is asked at most
// once per `refresh_s` (at least 180 s) per provider; after a 429 it is left alone for at least its Retry-After
// (and never less than refresh_s). What it last said is merged into the computed quota entry. Once it has answered,
// a quota snapshot never waits for it: the snapshot that finds it due takes the last answer and asks in the
// background, and the next snapshot has the new one (`onChange`).

import { retryAfterMs } from '../routing/cooldown.js';
import { undici } from '../core/undici.js';
import { declaredLength, textWithin } from '../providers/answer-body.js';
import { REPORTED_HORIZON_MS } from './reported-quota.js';

export interface SourceSettings {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly refresh_s: number;
}

export interface SourceReading {
  readonly used: number;
  readonly limit: number;
  /** Epoch ms of the provider's next reset, if it said. */
  readonly reset: number | null;
  readonly fetchedAt: number;
}

export interface SourceState {
  readonly reading: SourceReading | null;
  /** The last attempt's outcome: 'ok', an HTTP status, 'invalid' (bad body) or 'unreachable'. */
  readonly status: string;
  /** Epoch ms before which the source is not asked again. */
  readonly nextFetch: number;
}

const TIMEOUT_MS = 5000;
const READING_MAX_BYTES = 1024 * 1024;
const RETRY_AFTER_MAX_MS = 24 * 3_600_000;

export class UsageSources {
  readonly #states = new Map<string, SourceState>();
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #now: () => number;
  readonly #onChange: () => void;

  /** `onChange`: a question asked in the background has its answer (or its failure): snapshots taken before are old. */
  constructor(now: () => number = Date.now, onChange: () => void = () => undefined) {
    this.#now = now;
    this.#onChange = onChange;
  }

  state(providerId: string): SourceState | undefined {
    return this.#states.get(providerId);
  }

  /**
   * Ask the source if it is due (one request at a time per provider); never throws. Only the first question waits
   * for its answer; later ones return the last state at once and ask in the background (up to TIMEOUT_MS twice when
   * the provider is slow: an uncached /api/quota and the alert evaluator are not held that long every refresh_s).
   */
  async refresh(providerId: string, s: SourceSettings): Promise<SourceState | undefined> {
    const now = this.#now();
    const prev = this.#states.get(providerId);
    if (prev && now < prev.nextFetch) return prev;
    let running = this.#inFlight.get(providerId);
    if (!running) {
      running = this.#fetch(providerId, s, prev).finally(() => this.#inFlight.delete(providerId));
      this.#inFlight.set(providerId, running);
      if (prev) void running.then(this.#onChange);
    }
    if (prev) return prev;
    await running;
    return this.#states.get(providerId);
  }

  async #fetch(providerId: string, s: SourceSettings, prev: SourceState | undefined): Promise<void> {
    const every = s.refresh_s * 1000;
    const keep = (status: string, wait = every): void => void this.#states.set(providerId, { reading: prev?.reading ?? null, status, nextFetch: this.#now() + wait });
    try {
      const { request } = await undici();
      const res = await request(s.url, { method: 'GET', headers: { accept: 'application/json', ...s.headers }, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS });
      // A reading is a few numbers: an answer of more than 1 MiB is not one, and is not held.
      const text = await textWithin(res.body, READING_MAX_BYTES, declaredLength(res.headers));
      // Its Retry-After is honoured up to a day: a source that says "in 3,000 years" is asked again tomorrow.
      if (res.statusCode === 429) return keep('429', Math.max(every, Math.min(retryAfterMs(res.headers, this.#now()) ?? 0, RETRY_AFTER_MAX_MS)));
      if (res.statusCode < 200 || res.statusCode >= 300) return keep(String(res.statusCode));
      const body = JSON.parse(text) as { used?: unknown; limit?: unknown; reset?: unknown };
      const reset = typeof body.reset === 'string' ? Date.parse(body.reset) : NaN;
      // A figure JSON reads as Infinity (`1e400`) is no reading: the computed figures stand, as for any invalid answer.
      if (!validFigure(body.used) || !validFigure(body.limit)) return keep('invalid');
      const fetchedAt = this.#now();
      this.#states.set(providerId, {
        reading: { used: body.used, limit: body.limit, reset: Number.isNaN(reset) ? null : reset, fetchedAt },
        status: 'ok',
        nextFetch: fetchedAt + every,
      });
    } catch (err) {
      keep(err instanceof SyntaxError || (err as { code?: unknown })?.code === 'TOLLGATE_ERR_UPSTREAM_TOO_LARGE' ? 'invalid' : 'unreachable');
    }
  }
}

const validFigure = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * The reset a reading gives, when it is still ahead of `now` and at most a year ahead (REPORTED_HORIZON_MS, as for
 * the providers' rate-limit headers): else none, and the quota's own reset stands. A reset in the past (given so, or
 * passed since the answer came) made a used-up quota's countdown 0, and the combo's Retry-After 1, until the next
 * answer (up to refresh_s); one years away, a countdown of years.
 */
export function readingReset(reading: SourceReading, now: number): number | null {
  const r = reading.reset;
  return r !== null && r > now && r - now <= REPORTED_HORIZON_MS ? r : null;
}
