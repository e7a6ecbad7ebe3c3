// Keep-alive pings (spec item 10): right after a connection's rolling quota window ends, send the smallest request
// the provider takes, so the next window starts at once instead of with the next client request.
//
// The window rule (also in docs/connections.md, "Keep-alive pings"):
// - An upstream call is a usage record with a connection and a kind other than `combo`: a `request`, a combo
//   `attempt` or a `keepalive` ping, whatever its status, timed by its start (`startedAt`). One exception: a ping
//   that failed opens no window (the provider most likely did not count it); it is retried instead.
// - A connection's window opens with the first upstream call made on it while no window is open, and lasts
//   `keepalive.window` (`30m`, `5h`, `1d`; at least 1 s). Calls inside it change nothing; then the next opens the next.
// - For a connection with keep-alive on, that next call is a ping, sent PING_DELAY after the window ends (1 s, at
//   most 5 % of the window: the provider receives a call a little after the gateway started it). A ping is owed
//   whenever the last window ended without one, so a window that ended while Tollgate was stopped (or pings were
//   off) gets its ping at start (or when they are turned on).
// - A failed ping is retried once after min(60 s, window); if the retry fails too, the next try is a window later,
//   then again a retry, and so on: at most two pings per window, never a tight loop. A connection that is cooling
//   down is pinged when its cooldown ends.
// - At start, each connection's window is recovered by replaying the rule over its calls of the last 24 h (two
//   windows, for a window longer than 12 h; from a multiple of the window: `replayFrom`), one read for all. The
//   span's first call is taken to open a window, though one opened before the span may have covered it: it matters
//   only for a connection used around the clock, and corrects itself after one window.
//
// Records are seen as the Ledger publishes them, so a long request is seen after shorter ones that started later;
// `advance` lets an earlier start that opened the window take it over. OAuth connections are pinged with the
// router's access token (an OAuth provider has exactly one connection).

import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config/types.js';
import { TollgateError, toTollgateError } from '../core/errors.js';
import { codecFor } from '../wire/registry.js';
import type { Upstream } from '../pipeline/upstream.js';
import { ClientAbort } from '../providers/upstream.js';
import { claim } from '../store/claims.js';
import { callsOfConnections } from '../store/keepalive.js';
import { advance, MIN_WINDOW_MS, opensWindow, parseWindow, pingModel, pingRequest, replayFrom, UnstoredCalls, windowOfRecord, type Window } from './keepalive-window.js';
import type { Store } from '../store/client.js';
import { computeCost } from '../ledger/cost.js';
import type { Ledger } from '../ledger/ledger.js';
import { makeRecord, type RequestStatus, type UsageRecord } from '../ledger/record.js';
import { NO_USAGE, type Usage } from '../ledger/types.js';
import { uuidv7 } from '../ledger/uuidv7.js';
import { connectionsOf, type Connection } from '../config/connections.js';
import { resolveModel, type Route } from '../routing/resolve.js';
import type { Router } from '../routing/router.js';

/** setTimeout's limit; a longer wait is armed in legs. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Records published while start() replays the store; more than this many are not expected before listen(). */
const MAX_BUFFERED = 10_000;

export interface KeepAliveDeps {
  readonly config: Config;
  readonly ledger: Ledger;
  readonly upstream: Upstream;
  readonly router: Router;
  readonly store: Store;
}

export interface KeepAliveOptions {
  readonly now?: () => number;
  /** How long after a window ends its ping goes (default: 1 s, at most 5 % of the window). */
  readonly delayMs?: number;
  /** The wait before a failed ping is retried (default 60 s; at most one window). */
  readonly retryMs?: number;
  /** How long close() lets a ping in flight finish before aborting it (default 5 s). */
  readonly closeGraceMs?: number;
  readonly log?: { warn(obj: object, msg: string): void };
}

/** The schedule of one connection with keep-alive on. */
interface Slot {
  timer: NodeJS.Timeout | null;
  inflight: boolean;
  /** Consecutive failed pings. */
  failures: number;
  /** No ping before this (epoch ms): the retry after a failure, and a floor after any ping. */
  notBefore: number;
}

export class KeepAlive {
  readonly #ledger: Ledger;
  readonly #upstream: Upstream;
  readonly #router: Router;
  readonly #store: Store;
  readonly #now: () => number;
  readonly #delayMs: number | undefined;
  readonly #retryMs: number;
  readonly #closeGraceMs: number;
  readonly #log: NonNullable<KeepAliveOptions['log']>;
  #cfg!: Config;
  /** Every connection of the current config, by id, and each provider's window length. */
  #connections = new Map<string, Connection>();
  #windowMs = new Map<string, number>();
  readonly #windows = new Map<string, Window>();
  readonly #slots = new Map<string, Slot>();
  /** Slots of connections turned off by a config edit while their ping was in flight, until it ends. */
  readonly #parked = new Map<string, Slot>();
  readonly #pending = new Set<Promise<void>>();
  readonly #aborts = new Set<ClientAbort>();
  /** Records published before start() finished, applied after the replay. */
  #buffer: UsageRecord[] | null = [];
  /** This process's calls on pinged connections whose rows are not in ClickHouse yet (added to the record's). */
  readonly #unstored = new UnstoredCalls();
  /** This process, for claims: with several replicas, one pings per window. */
  readonly #instance = randomUUID();
  #started = false;
  #closed = false;

  constructor(deps: KeepAliveDeps, opts: KeepAliveOptions = {}) {
    this.#ledger = deps.ledger;
    this.#upstream = deps.upstream;
    this.#router = deps.router;
    this.#store = deps.store;
    this.#now = opts.now ?? Date.now;
    this.#delayMs = opts.delayMs;
    this.#retryMs = opts.retryMs ?? 60_000;
    this.#closeGraceMs = opts.closeGraceMs ?? 5000;
    this.#log = opts.log ?? { warn: () => undefined };
    this.reconfigure(deps.config);
    deps.ledger.subscribe((r) => this.#observe(r));
  }

  /** Recover the enabled connections' windows from the store (one read for all), then arm the timers. Never throws. */
  async start(): Promise<void> {
    const now = this.#now();
    const wanted = [...this.#slots.keys()].flatMap((id) => {
      const c = this.#connections.get(id);
      const windowMs = c && this.#windowMs.get(c.providerId);
      return c && windowMs !== undefined ? [{ id, c, windowMs, from: replayFrom(now, windowMs) }] : [];
    });
    try {
      const calls = await callsOfConnections(this.#store, wanted.map(({ c, from }) => ({ provider: c.providerId, connection: c.name, from })));
      wanted.forEach(({ id, c, windowMs, from }, i) => {
        const { window: w } = windowOfRecord({ calls: calls[i]!, unstored: this.#unstored, id, connection: c.name, from, windowMs });
        if (w !== null) this.#windows.set(id, w);
      });
    } catch (err) {
      this.#log.warn({ err, connections: wanted.length }, 'keep-alive: could not read the open windows; each starts with its next request');
    }
    const buffered = this.#buffer ?? [];
    this.#buffer = null;
    this.#started = true;
    for (const r of buffered) this.#observe(r);
    for (const [id, slot] of this.#slots) this.#arm(id, slot);
  }

  /** A live config edit: window lengths, and which connections ping, are read again. */
  reconfigure(cfg: Config): void {
    this.#cfg = cfg;
    const connections = new Map<string, Connection>();
    const windowMs = new Map<string, number>();
    for (const [pid, p] of Object.entries(cfg.providers)) {
      windowMs.set(pid, parseWindow(p.keepalive.window));
      for (const c of connectionsOf(pid, p)) connections.set(c.id, c);
    }
    this.#connections = connections;
    this.#windowMs = windowMs;
    // A connection that is gone is forgotten; a new window length applies to the open window.
    for (const [id, w] of this.#windows) {
      const c = connections.get(id);
      const len = c && windowMs.get(c.providerId);
      if (len === undefined) this.#windows.delete(id);
      else if (w.end - w.start !== len) this.#windows.set(id, { ...w, end: w.start + len });
    }
    for (const [id, slot] of this.#slots) {
      if (this.#enabled(connections.get(id))) continue;
      if (slot.timer) clearTimeout(slot.timer);
      this.#slots.delete(id); // a ping in flight finishes (close() still waits for it)
      if (slot.inflight) this.#parked.set(id, slot);
    }
    for (const c of connections.values()) {
      if (!this.#enabled(c) || this.#slots.has(c.id)) continue;
      // Enabled again while its ping is still in flight: the same slot, so no second ping for the window.
      this.#slots.set(c.id, this.#parked.get(c.id) ?? { timer: null, inflight: false, failures: 0, notBefore: 0 });
      this.#parked.delete(c.id);
    }
    for (const [id, slot] of this.#slots) this.#arm(id, slot);
  }

  /** Stop the timers and wait for pings in flight (aborted after the grace period). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const slot of this.#slots.values()) if (slot.timer) clearTimeout(slot.timer);
    if (this.#pending.size === 0) return;
    const grace = setTimeout(() => {
      for (const a of this.#aborts) a.abort();
    }, this.#closeGraceMs);
    grace.unref();
    try {
      await Promise.all(this.#pending);
    } finally {
      clearTimeout(grace);
    }
  }

  /** The window of a connection as currently known (for /api/quota). */
  window(connectionId: string): Window | null {
    return this.#windows.get(connectionId) ?? null;
  }

  #enabled(c: Connection | undefined): c is Connection {
    if (!c?.keepalive) return false;
    if (pingModel(this.#cfg.providers[c.providerId]!) !== null) return true;
    this.#log.warn({ provider: c.providerId, connection: c.name }, 'keep-alive: the provider lists no model to ping; set keepalive.model');
    return false;
  }

  /** The writer stored these rows (app.ts): they are read from ClickHouse from now on. */
  written(ids: readonly string[]): void {
    this.#unstored.written(ids);
  }

  #observe(r: UsageRecord): void {
    if (!opensWindow(r)) return;
    const id = `${r.provider}#${r.connection}`;
    if (this.#connections.get(id)?.keepalive) this.#unstored.add(r.requestId, id, r.startedAt);
    if (this.#buffer !== null) {
      if (this.#buffer.length < MAX_BUFFERED) this.#buffer.push(r);
      return;
    }
    const windowMs = this.#windowMs.get(r.provider);
    if (windowMs === undefined || !this.#connections.has(id)) return;
    const before = this.#windows.get(id) ?? null;
    const after = advance(before, r.startedAt, windowMs);
    if (after === before) return;
    this.#windows.set(id, after);
    const slot = this.#slots.get(id);
    if (!slot) return;
    if (after.end > this.#now()) slot.failures = 0;
    this.#arm(id, slot);
  }

  /** When the connection's next ping is due (epoch ms), or null when no window has been seen. */
  #due(id: string, slot: Slot): number | null {
    const w = this.#windows.get(id);
    if (!w) return null;
    const windowMs = w.end - w.start;
    const cooling = this.#router.cooldowns.cooling(id);
    return Math.max(w.end + (this.#delayMs ?? Math.min(1000, windowMs * 0.05)), slot.notBefore, cooling?.until ?? 0);
  }

  #arm(id: string, slot: Slot): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    if (this.#closed || !this.#started || slot.inflight) return;
    const due = this.#due(id, slot);
    if (due === null) return;
    slot.timer = setTimeout(() => this.#fire(id, slot), Math.min(MAX_TIMER_MS, Math.max(0, due - this.#now())));
    slot.timer.unref();
  }

  #fire(id: string, slot: Slot): void {
    slot.timer = null;
    if (this.#closed || this.#slots.get(id) !== slot) return;
    const due = this.#due(id, slot);
    if (due === null) return;
    // A window that moved, a cooldown that began, or the first leg of a long wait.
    if (due > this.#now()) return this.#arm(id, slot);
    const c = this.#connections.get(id)!;
    slot.inflight = true;
    const run = (async () => {
      const mine = await this.#claim(id, c).catch((err: unknown) => {
        this.#log.warn({ err, provider: c.providerId, connection: c.name }, 'keep-alive: could not check the window in the store; pinging');
        return true;
      });
      // Another replica's call opened the window, or another replica pings it: this one waits for the next.
      if (!mine) return this.#landed(id, slot);
      const ok = await this.#ping(c).catch((err: unknown) => {
        this.#log.warn({ err, provider: c.providerId, connection: c.name }, 'keep-alive: ping not recorded');
        return false;
      });
      const windowMs = this.#windowMs.get(c.providerId) ?? MIN_WINDOW_MS;
      const retry = Math.min(this.#retryMs, windowMs);
      const now = this.#now();
      if (ok) {
        // The ping opened the next window; the floor only guards against a clock that says otherwise.
        slot.failures = 0;
        slot.notBefore = now + MIN_WINDOW_MS;
      } else {
        slot.failures++;
        // A failure is retried once; a failed retry waits a window.
        slot.notBefore = now + (slot.failures % 2 === 1 ? retry : windowMs);
      }
      this.#landed(id, slot);
    })();
    this.#pending.add(run);
    void run.finally(() => this.#pending.delete(run));
  }

  /** A claim or ping of `slot` over: it is armed for the next, unless a config edit turned it off meanwhile. */
  #landed(id: string, slot: Slot): void {
    slot.inflight = false;
    if (this.#parked.get(id) === slot) this.#parked.delete(id);
    if (this.#slots.get(id) === slot) this.#arm(id, slot);
  }

  /**
   * Replicas (docs/scaling.md): before pinging, the window is read again from the record, which holds every replica's
   * calls, and the record's window decides: when it is still open (another replica's call or ping opened a later
   * one) it is taken over and nothing is sent; when it has ended, the ping for its end is claimed in the store
   * (src/store/claims.ts), so every replica claims the same key and one pings. The record is read with this
   * replica's own calls that are not stored yet (#unstored, taken after the read: a call seen during it counts too).
   * The window this replica followed on its own is not a key: it may start with a call that the record puts inside
   * another replica's window. Returns whether to ping now.
   */
  async #claim(id: string, c: Connection): Promise<boolean> {
    const windowMs = this.#windowMs.get(c.providerId) ?? MIN_WINDOW_MS;
    const now = this.#now();
    const { window: shared, pings } = await this.#recordWindow(id, c, windowMs, now);
    if (shared !== null) this.#windows.set(id, shared);
    const w = this.#windows.get(id)!;
    if (w.end > now) return false; // a window that is still open needs no ping
    // Keyed by the end, the windows passed since it, and the pings recorded since it: a ping that failed or was cut
    // opens no window, and a key of the end alone stayed won by that process, so a restart never pinged again.
    const tries = pings.filter((t) => t >= w.end).length;
    if (await claim(this.#store, `ping:${id}:${w.end}:${Math.floor((now - w.end) / windowMs)}:${tries}`, this.#instance, now)) return true;
    // Another replica pings this window: it will open the next one, as this replica's record shows once written.
    this.#windows.set(id, advance(w, now, windowMs));
    return false;
  }

  /** The connection's window by the record (every replica's calls, this one's not stored yet) and its pings' starts. */
  async #recordWindow(id: string, c: Connection, windowMs: number, now: number): Promise<{ window: Window | null; pings: number[] }> {
    const from = replayFrom(now, windowMs);
    const [calls] = await callsOfConnections(this.#store, [{ provider: c.providerId, connection: c.name, from }]);
    return windowOfRecord({ calls: calls!, unstored: this.#unstored, id, connection: c.name, from, windowMs });
  }

  /** Send one ping on `c` and publish its record; true when it succeeded. */
  async #ping(c: Connection): Promise<boolean> {
    const p = this.#cfg.providers[c.providerId]!;
    const modelId = pingModel(p)!;
    const model = `${c.providerId}/${modelId}`;
    const startedAt = this.#now();
    const t0 = performance.now();
    const signal = new ClientAbort();
    this.#aborts.add(signal);
    let status: RequestStatus = 'failure';
    let [httpStatus, errorType] = [0, ''];
    let usage: Usage | null = null;
    let upstreamMs: number | null = null;
    let dispatched = false; // a ping whose connection was never made (or OAuth not connected) reached no provider
    try {
      const route = await this.#route(c, model);
      const codec = codecFor(route.provider.format);
      // The one upstream call (pipeline/upstream.ts), outside any client request: no span, no trace headers.
      const call = await this.#upstream.callOnce(route, pingRequest(modelId, route.provider.format), { codec, stream: false, signal, onDispatch: () => (dispatched = true) });
      const { res } = call;
      const text = await res.text();
      upstreamMs = call.elapsedMs();
      httpStatus = res.status;
      if (res.status === 401) this.#router.tokenRefused(route); // an OAuth token refreshes before its next use
      if (res.status < 200 || res.status >= 300) {
        errorType = String(res.status);
      } else {
        try {
          usage = codec.parseResponse(JSON.parse(text)).usage;
        } catch (err) {
          throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream provider answered the ping with a body that is not a response', { cause: err });
        }
        status = 'success';
      }
    } catch (err) {
      if (signal.aborted) {
        status = 'aborted';
        errorType = 'shutdown';
      } else {
        // A transport failure comes classified from the upstream call; anything else (a missing token) as it is.
        const e = err instanceof TollgateError ? err : toTollgateError(err);
        httpStatus = e.status;
        errorType = e.code;
      }
    } finally {
      this.#aborts.delete(signal);
    }
    const u = usage ?? NO_USAGE;
    this.#ledger.publish(
      makeRecord({
        kind: 'keepalive', requestId: uuidv7(startedAt), connection: c.name,
        startedAt, endedAt: this.#now(), endpoint: 'keepalive',
        provider: c.providerId, providerGroup: p.group, model, requestedModel: model, modelKnown: Object.hasOwn(p.models, modelId),
        apiKeyName: '', stream: false, status, httpStatus, errorType,
        usage: u, usageSource: usage === null ? 'none' : 'reported', cost: computeCost(c.provider, modelId, u),
        latency: { kind: 'unary', totalMs: performance.now() - t0 }, upstreamMs, dispatched,
      }),
    );
    if (status === 'failure') this.#log.warn({ provider: c.providerId, connection: c.name, httpStatus, errorType }, 'keep-alive ping failed');
    return status === 'success';
  }

  /** The route of a ping on exactly this connection (an OAuth one with its access token). */
  async #route(c: Connection, model: string): Promise<Route> {
    const route: Route = { ...resolveModel(this.#cfg, model), provider: c.provider, connection: c };
    if (c.provider.auth.type !== 'oauth') return route;
    // An OAuth provider has one connection, so the router's pick is this one; it fills in the access token.
    const connected = await this.#router.connect(route);
    if (connected.connection?.id !== c.id) throw new TollgateError('TOLLGATE_ERR_INTERNAL', `keep-alive: the router chose '${connected.connection?.id}' for '${c.id}'`);
    return connected;
  }
}
