// The routing state of one gateway process: connection choice (round-robin over a provider's connections that are
// not cooling), cooldowns, each combo's round-robin turn, OAuth access tokens, and its two gates, given to its
// constructor: the budget gate the auto-switch asks (once per request, by `target`) and the quota gate combos ask, and
// the start's hold on both until their first figures are known (`mustWait`, start-hold.ts).
// Built once by app.ts; read by the pipeline, /api/quota and /metrics.

import type { Config, OAuthSettings } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { connectionsOf, withAccessToken, type Connection } from '../config/connections.js';
import { Cooldowns, type CooldownState } from './cooldown.js';
import { autoSwitch, budgetDecides, NEVER_EXCEEDED, type BudgetGate, type Target } from './auto-switch.js';
import { quotaDecides } from './combos.js';
import { StartHold } from './start-hold.js';
import type { UpstreamFailure } from './failures.js';
import type { Route } from './resolve.js';
import { own } from '../core/own.js';

/** Where an OAuth provider's access token comes from (connections/oauth.ts in the gateway). */
export interface TokenSource {
  accessToken(): Promise<string>;
  /** The upstream refused `token`: refresh before the next use (unless it was already replaced). */
  invalidate(token?: string): void;
}
export type TokenSources = (providerId: string, settings: OAuthSettings) => TokenSource;

const noTokens: TokenSources = (providerId) => ({
  accessToken: () => Promise.reject(new TollgateError('TOLLGATE_ERR_PROVIDER_AUTH', `provider '${providerId}' is not connected: run \`tollgate connect ${providerId}\``)),
  invalidate: () => undefined,
});

export interface ProviderCooldown {
  readonly providerId: string;
  /** Every connection of the provider is cooling. */
  readonly cooling: boolean;
  /** Epoch ms when the first connection is usable again (0 when not cooling). */
  readonly until: number;
  readonly connections: readonly { readonly name: string; readonly state: CooldownState | null }[];
}

/** Whether a provider's quota is used up (computed from the record by the quota engine). */
export interface QuotaGate {
  exhausted(providerId: string): boolean;
  /** Epoch ms when a used-up provider's quota resets; null when unknown (absent: never known). */
  resetsAt?(providerId: string): number | null;
  /**
   * A combo attempt to the provider was chosen: `exhausted` counts it until the returned release (called once its
   * record is published), so requests at once do not all go to the provider's last requests (absent: not counted).
   */
  reserve?(providerId: string): () => void;
}

/** The gates a router asks; a gate not given never closes (tests of routing alone). */
export interface RouterGates {
  readonly budget?: BudgetGate;
  readonly quota?: QuotaGate;
  /** Held until the two gates' first figures after the start are known (routing/start-hold.ts); none: never held. */
  readonly hold?: StartHold;
}

const RELEASED = new StartHold({ boundMs: () => 0 });
RELEASED.release();

export interface RouterOptions {
  readonly gates?: RouterGates;
  readonly now?: () => number;
  readonly tokens?: TokenSources;
  readonly onCool?: (connectionId: string, reason: string) => void;
}

export class Router {
  readonly cooldowns: Cooldowns;
  readonly budget: BudgetGate;
  readonly quota: QuotaGate;
  readonly hold: StartHold;
  readonly #config: () => Config;
  readonly #turns = new Map<string, number>();
  readonly #picks = new Map<string, number>();
  readonly #tokens = new Map<string, { settings: OAuthSettings; source: TokenSource }>();
  readonly #tokenSources: TokenSources;
  readonly #now: () => number;

  constructor(config: () => Config, opts: RouterOptions = {}) {
    this.#config = config;
    this.budget = opts.gates?.budget ?? NEVER_EXCEEDED;
    this.quota = opts.gates?.quota ?? { exhausted: () => false };
    this.hold = opts.gates?.hold ?? RELEASED;
    this.#now = opts.now ?? Date.now;
    this.#tokenSources = opts.tokens ?? noTokens;
    this.cooldowns = new Cooldowns(config().routing.cooldown, this.#now, opts.onCool);
  }

  /** A live config edit: new cooldown settings apply to the next failure. */
  reconfigure(cfg: Config): void {
    this.cooldowns.configure(cfg.routing.cooldown);
  }

  /**
   * The model or combo a request for `asked` goes to: itself, or the auto-switch target while the daily budget is
   * exceeded (routing/auto-switch.ts). Asked once per request, by the route, which hands the answer on.
   */
  target(asked: string): Target {
    return autoSwitch(this.#config(), asked, this.budget);
  }

  /**
   * Must a request for `asked` wait (`hold.wait`) before `target`? Only while the start's hold is on, and only when
   * its routing reads a figure not known yet: the budget gate (a paid target with the auto-switch on) or the quota
   * gate (a combo with a member whose provider has a quota). Every other request is routed at once.
   */
  mustWait(asked: string): boolean {
    if (!this.hold.holding) return false;
    const cfg = this.#config();
    return budgetDecides(cfg, asked) || quotaDecides(cfg, asked);
  }

  /** The combo's turn for this request (0, 1, 2, ...), for round-robin. */
  nextTurn(combo: string): number {
    const n = this.#turns.get(combo) ?? 0;
    this.#turns.set(combo, n + 1);
    return n;
  }

  /** The cooldown of a provider: cooling when every connection is. */
  provider(providerId: string): ProviderCooldown {
    const p = own(this.#config().providers, providerId);
    const conns = p ? connectionsOf(providerId, p) : [];
    const states = conns.map((c) => ({ name: c.name, state: this.cooldowns.cooling(c.id) }));
    const cooling = states.length > 0 && states.every((s) => s.state !== null);
    const until = cooling ? Math.min(...states.map((s) => s.state!.until)) : 0;
    return { providerId, cooling, until, connections: states };
  }

  isCooling(providerId: string): boolean {
    return this.provider(providerId).cooling;
  }

  /** Pick the connection for one call: round-robin over those not cooling (the soonest usable if all are). */
  pick(route: Route): Connection {
    const conns = connectionsOf(route.providerId, route.provider);
    if (conns.length === 1) return conns[0]!;
    const start = this.#picks.get(route.providerId) ?? 0;
    this.#picks.set(route.providerId, start + 1);
    let best: Connection | undefined;
    let bestUntil = Infinity;
    for (let i = 0; i < conns.length; i++) {
      const c = conns[(start + i) % conns.length]!;
      const s = this.cooldowns.cooling(c.id);
      if (s === null) return c;
      if (s.until < bestUntil) [best, bestUntil] = [c, s.until];
    }
    return best!;
  }

  /** The route as one call sends it: the chosen connection's row, with an OAuth token when the provider uses one. */
  async connect(route: Route): Promise<Route> {
    const c = this.pick(route);
    let provider = c.provider;
    if (provider.auth.type === 'oauth' && provider.auth.oauth) provider = withAccessToken(provider, await this.#tokenSource(route.providerId, provider.auth.oauth).accessToken());
    return { ...route, provider, connection: c };
  }

  /** Tell the router how a call went: a success clears the connection's cooldown, a failure may start one. */
  report(route: Route, failure: UpstreamFailure | null): void {
    const c = route.connection;
    if (!c) return;
    if (failure === null) {
      this.cooldowns.succeed(c.id);
      return;
    }
    if (failure.status === 401) this.tokenRefused(route);
    if (failure.cool) this.cooldowns.fail(c.id, { reason: failure.reason, retryAfterMs: failure.retryAfterMs, quotaExhausted: failure.quotaExhausted });
  }

  /** The upstream answered 401 to the route's token: an OAuth session refreshes before its next use. */
  tokenRefused(route: Route): void {
    if (route.provider.auth.type === 'oauth') this.#tokens.get(route.providerId)?.source.invalidate(route.provider.auth.key);
  }

  #tokenSource(providerId: string, settings: OAuthSettings): TokenSource {
    const found = this.#tokens.get(providerId);
    // By value: every reload parses the config anew, and a session dropped for an equal copy of its settings lost
    // its 401 mark and the tokens it held only in memory (a refresh whose save failed).
    if (found?.settings === settings) return found.source;
    if (found && JSON.stringify(found.settings) === JSON.stringify(settings)) {
      found.settings = settings; // the reload's copy: the next request matches by identity again
      return found.source;
    }
    const source = this.#tokenSources(providerId, settings);
    this.#tokens.set(providerId, { settings, source });
    return source;
  }
}
