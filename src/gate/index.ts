// The gate: who may call what, decided on the route fastify matched (never on the raw URL), deny by default.
//
//   access    routes                                            needs
//   public    /, /console/*, /console/auth, /health, /ready,     nothing (`/` is the console's page, or to a non-browser
//             /metrics (unless metrics_auth)                     the name and version; /console/* its files: no data;
//                                                                /console/auth whether keys are needed, as any 401 says)
//   key       every other route (/api/live, /api/usage/*, ...),  any gateway key
//             and every unmatched path
//   admin     /api/admin/*, /api/settings, /api/settings/*       a key whose role is admin
//   reauth    /api/admin/export, /api/admin/import                a token from POST /api/admin/reauth (5 minutes)
//
// Before any of it, on every route: what a web page can make a browser send (src/gate/origin.ts). With no keys, a
// request addressed to a name that is not loopback (DNS rebinding); keys or not, a write marked cross-origin. 403.
//
// Two per-client-IP limits sit in front (req.ip: the socket address, or the right-most untrusted X-Forwarded-For
// entry when the peer is in server.trust_proxy, an entry's port taken off): `auth_failures_per_minute` wrong or
// missing keys, after which the IP gets 429 on everything but the public list until its window ends, and
// `requests_per_minute` on every non-public route (0 = off). Both are @fastify/rate-limit stores; a 429 is counted in
// tollgate_rate_limited_total.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { ConfigHolder } from '../config/watch.js';
import type { Config } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import type { Metrics } from '../telemetry/metrics.js';
import { ANONYMOUS, KeyRing, presentedKey, type KeyIdentity } from './keys.js';
import { REAUTH_TTL_MS, ReauthTokens, type ReauthHolder } from './reauth.js';
import { FailingClients, clientKey, withoutPorts } from './failing.js';
import { browserRefusal } from './origin.js';

export type Access = 'public' | 'key' | 'admin' | 'reauth';

/** The one public list (besides /metrics, public unless server.metrics_auth). Route patterns, as registered. */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(['/', '/console/*', '/console/auth', '/health', '/ready']);
export const ADMIN_PREFIXES: readonly string[] = ['/api/admin/', '/api/settings/'];
export const REAUTH_ROUTES: ReadonlySet<string> = new Set(['/api/admin/export', '/api/admin/import']);
export const REAUTH_ROUTE = '/api/admin/reauth';

/** What a request to the matched route pattern `route` (undefined: no route matched) needs. */
export function accessOf(route: string | undefined, cfg: Config): Access {
  if (route === undefined) return 'key';
  if (PUBLIC_ROUTES.has(route) || (route === '/metrics' && !cfg.server.metrics_auth)) return 'public';
  if (REAUTH_ROUTES.has(route)) return 'reauth';
  // `/api/settings` itself too, not only what is under it.
  if (ADMIN_PREFIXES.some((p) => route.startsWith(p) || route === p.slice(0, -1))) return 'admin';
  return 'key';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The name of the key the request was let in with ('anonymous' with no keys configured, '' on public routes). */
    apiKeyName: string;
    /** The key the request was let in with; null on public routes and with no keys configured. */
    apiKey: KeyIdentity | null;
  }
  interface FastifyInstance {
    /**
     * Keep a long-lived answer (GET /api/live) open only while the key `req` was let in with still lets it in: `end` is
     * called when a reload removes that key, rotates it or changes its role (or configures keys where there were
     * none). Returns the release to call when the answer ends otherwise.
     */
    holdWhileKeyValid(req: FastifyRequest, end: () => void): () => void;
  }
}

const WINDOW_MS = 60_000;
// Client IPs the request limiter remembers; past this the least recently seen are forgotten.
const TRACKED_CLIENTS = 10_000;

export interface GateOptions {
  readonly config: ConfigHolder;
  readonly metrics: Metrics;
}

/** Install the gate on `app` (before any route is registered, so the request limit reaches every route). */
export async function installGate(app: FastifyInstance, opts: GateOptions): Promise<void> {
  const holder = opts.config;
  let keys = new KeyRing(holder.current.server.api_keys);
  const reauth = new ReauthTokens();
  /** Whether a token's key is still the one it was issued to: same name, same value, still an admin. */
  const holds = (h: ReauthHolder): boolean => {
    const key = keys.byName(h.keyName);
    return key !== null && key.role === 'admin' && key.binding === h.binding;
  };
  // Answers held open by a key (GET /api/live's stream): ended once their key no longer lets them in, as the reauth
  // tokens are voided (a revoked key must not keep receiving what it read).
  const held = new Map<() => void, KeyIdentity | null>();
  holder.onChange((next) => {
    keys = new KeyRing(next.server.api_keys);
    reauth.keepOnly(holds);
    // With no keys left, a stream opened with one ends too (it may have come in under a name open mode refuses).
    for (const [end, key] of held) {
      if (keys.open ? key !== null : key === null || keys.byName(key.name)?.binding !== key.binding) end();
    }
  });
  app.decorate('holdWhileKeyValid', (req: FastifyRequest, end: () => void): (() => void) => {
    held.set(end, req.apiKey);
    return () => void held.delete(end);
  });
  // The key that asked for a token, from the gate's hook to the reauth route's handler.
  const askedBy = new WeakMap<FastifyRequest, KeyIdentity>();
  const limits = () => holder.current.server.rate_limit;
  const accessOfRequest = (req: FastifyRequest): Access => accessOf(req.routeOptions.url, holder.current);

  app.decorateRequest('apiKeyName', '');
  app.decorateRequest('apiKey', null);

  // The plugin's store and 429, not its global hook: that hook ran on every route, awaited a key and an allow list
  // for each request and found the limit off (0, the default) or the route public, which cost about 5 % of a proxied
  // request's CPU (docs/benchmarks.md, "The request limit's hook"). The gate's own hook below runs the same handler
  // (`app.rateLimit()`: these options, this store, its headers and its 429) when the limit is on.
  await app.register(rateLimit, {
    global: false,
    max: () => limits().requests_per_minute,
    timeWindow: WINDOW_MS,
    cache: TRACKED_CLIENTS,
    enableDraftSpec: true,
    onExceeded: () => opts.metrics.rateLimited.inc({ reason: 'requests' }),
    errorResponseBuilder: (_req, c) =>
      new TollgateError('TOLLGATE_ERR_RATE_LIMITED', `more than ${c.max} requests per minute from this client (server.rate_limit.requests_per_minute); retry in ${c.after}`),
  });
  const requestLimit = app.rateLimit();
  // Its own store, a child of the plugin's, which does not inherit the plugin's `cache`: stated again here (the child
  // store reads it, LocalStore.child; the options' type does not list it), else the child remembers toad-cache's
  // default of 5,000 clients, and a blocked one is forgotten once 5,000 others have failed.
  const failureLimit = { max: () => limits().auth_failures_per_minute, timeWindow: WINDOW_MS, cache: TRACKED_CLIENTS };
  const authFailures = app.createRateLimit(failureLimit);
  // Who was refused within the window: the store is read for them only (src/gate/failing.ts).
  const failing = new FailingClients(WINDOW_MS, TRACKED_CLIENTS);

  /** A refused credential: counted against the client IP; the refusal that crosses the limit is already a 429. */
  const refuse = async (req: FastifyRequest, reply: FastifyReply, err: TollgateError): Promise<never> => {
    failing.failed(clientKey(req.ip));
    const seen = await authFailures(req);
    if (seen.isAllowed !== true && seen.isExceeded) throw tooManyFailures(reply, seen.max, seen.ttlInSeconds);
    throw err;
  };
  const tooManyFailures = (reply: FastifyReply, max: number, retryS: number): TollgateError => {
    opts.metrics.rateLimited.inc({ reason: 'auth_failures' });
    reply.headers({ 'retry-after': retryS, 'ratelimit-limit': max, 'ratelimit-remaining': 0, 'ratelimit-reset': retryS });
    return new TollgateError('TOLLGATE_ERR_RATE_LIMITED', `too many requests with a wrong or missing key from this client (server.rate_limit.auth_failures_per_minute is ${max}); retry in ${retryS} s`);
  };

  // trust_proxy is read at start only (a restart applies it), like fastify's own trustProxy.
  const behindProxy = holder.current.server.trust_proxy.length > 0;
  app.addHook('onRequest', async (req, reply) => {
    // req.ip is read from the header each time: an entry's port taken off here is off for both limits.
    const xff = req.headers['x-forwarded-for'];
    if (behindProxy && typeof xff === 'string') req.headers['x-forwarded-for'] = withoutPorts(xff);
    const foreign = browserRefusal(req, keys.open);
    if (foreign !== null) throw foreign;
    const access = accessOfRequest(req);
    if (access === 'public') return;
    if (keys.open) req.apiKeyName = ANONYMOUS;
    else {
      const key = await keyOf(req, reply, access);
      req.apiKeyName = key.name;
      req.apiKey = key;
      if (req.routeOptions.url === REAUTH_ROUTE) askedBy.set(req, key);
    }
    // The request limit counts the requests let in (a refused key counts against auth_failures_per_minute instead),
    // on the routes that matched, as the plugin's per-route hook did.
    if (limits().requests_per_minute > 0 && req.routeOptions.url !== undefined) await requestLimit.call(app, req, reply);
  });

  /** The key `req` presents for `access`; a refusal is thrown (401, 403, or 429 past the failures' limit). */
  const keyOf = async (req: FastifyRequest, reply: FastifyReply, access: Access): Promise<KeyIdentity> => {
    if (failing.failing(clientKey(req.ip))) {
      const seen = await authFailures(req, { increment: false });
      if (seen.isAllowed !== true && seen.remaining === 0) throw tooManyFailures(reply, seen.max, seen.ttlInSeconds);
    }
    const presented = presentedKey(req.headers, req.url);
    if (access === 'reauth') {
      // Bound to the key, not only its name: a token whose key was rotated, removed or made a user is refused.
      const bound = reauth.holder(presented);
      if (bound === null || !holds(bound)) {
        await refuse(req, reply, new TollgateError('TOLLGATE_ERR_REAUTH_REQUIRED', `this route takes only a re-authentication token: POST ${REAUTH_ROUTE} with an admin key, then send Authorization: Bearer <token> within ${REAUTH_TTL_MS / 60_000} minutes`));
      }
      return keys.byName(bound!.keyName)!;
    }
    if (presented === null) {
      await refuse(req, reply, new TollgateError('TOLLGATE_ERR_UNAUTHORIZED', 'missing API key: send Authorization: Bearer <key> (or x-api-key, x-goog-api-key)'));
    }
    const key: KeyIdentity | null = keys.match(presented!);
    if (key === null) await refuse(req, reply, new TollgateError('TOLLGATE_ERR_UNAUTHORIZED', 'invalid API key'));
    if (access === 'admin' && key!.role !== 'admin') {
      throw new TollgateError('TOLLGATE_ERR_FORBIDDEN', `key '${key!.name}' has role user; ${req.routeOptions.url ?? 'this route'} needs an admin key`);
    }
    return key!;
  };

  app.post(REAUTH_ROUTE, async (req) => {
    // Open mode (no keys): no key asked, and the routes the token is for are open anyway.
    const issued = reauth.issue(req.apiKeyName, askedBy.get(req)?.binding ?? '');
    return { token: issued.token, key: issued.keyName, expires_at: new Date(issued.expiresAt).toISOString(), expires_in_s: REAUTH_TTL_MS / 1000 };
  });
}
