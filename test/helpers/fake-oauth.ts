// A fake OAuth 2.0 authorization server on a real socket (127.0.0.1, port 0): a device authorization endpoint
// (RFC 8628 §3.1) at /device/code and a token endpoint at /token that answers the device_code grant (§3.4–3.5) and
// the refresh_token grant (RFC 6749 §6). Bodies must be application/x-www-form-urlencoded; answers are JSON.
//
// Each device code answers `pendingPolls` polls with authorization_pending (the `slowDownOn`-th of them with
// slow_down instead, the `rateLimited` ones with a 429), then issues tokens, or answers access_denied (`deny`) or expired_token (`expire`). It counts
// requests, records every token request (`grants`), and knows which access tokens are valid: issued, not past their
// expires_in, not replaced by a refresh of the same chain, and not `revokeAccessTokens()`d. Options can be changed
// between requests with `set`.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OAuthSettings } from '../../src/config/types.js';
import { listenLoopback } from './loopback.js';

export interface FakeOAuthOptions {
  /** Polls answered before the decision (default 1). */
  pendingPolls: number;
  /** The n-th poll (1-based) answers slow_down instead of authorization_pending (default: none). */
  slowDownOn: number | null;
  /**
   * Polls (1-based, among the pending ones) answered 429 Too Many Requests instead of authorization_pending: with this
   * Retry-After (null: none) and a text body, or an OAuth error body `{"error": json}` (default: none).
   */
  rateLimited: Readonly<Record<number, { readonly retryAfter: string | null; readonly json?: string }>>;
  /** Answer access_denied once the pending polls are over. */
  deny: boolean;
  /** Answer expired_token once the pending polls are over. */
  expire: boolean;
  /** The interval sent with a device code (default 1); null leaves it out. */
  interval: number | null;
  /** The device code's expires_in (default 600). */
  deviceExpiresIn: number;
  /** The access tokens' expires_in (default 3600); null leaves it out. */
  tokenExpiresIn: number | null;
  /** Issue a refresh token with the device code grant (default true). */
  issueRefreshToken: boolean;
  /** A refresh issues a new refresh token and retires the old one (default true). */
  rotateRefreshTokens: boolean;
  /** When set, requests must carry it (client_secret_post). */
  clientSecret: string | null;
  /** Delay before answering a refresh_token grant, so concurrent refreshes would overlap (default 0). */
  refreshDelayMs: number;
  /** Send verification_uri_complete (default true). */
  complete: boolean;
}

export interface Grant {
  readonly grant_type: string;
  /** The form as received. */
  readonly params: Readonly<Record<string, string>>;
  /** What was answered: an OAuth error code, or 'issued'. */
  readonly answer: string;
  /** Real time (ms) the request arrived. */
  readonly at: number;
  /** The access token issued, if any. */
  readonly access_token?: string;
}

export interface FakeOAuth {
  readonly deviceAuthorizationUrl: string;
  readonly tokenUrl: string;
  /** auth.oauth settings for this server. */
  settings(extra?: Partial<OAuthSettings>): OAuthSettings;
  readonly requests: { device: number; token: number };
  /** Every device authorization request's form. */
  readonly deviceRequests: Readonly<Record<string, string>>[];
  /** Every token request, in arrival order. */
  readonly grants: Grant[];
  /** The user codes handed out, in order. */
  readonly userCodes: string[];
  /** Access tokens a resource server would accept now. */
  validAccessTokens(): string[];
  /** Every access token ever issued, in order. */
  issuedAccessTokens(): string[];
  /** Refresh tokens the server would accept now. */
  validRefreshTokens(): string[];
  /** Make every access token invalid (an upstream would answer 401). */
  revokeAccessTokens(): void;
  /** Make every refresh token invalid (invalid_grant from then on). */
  revokeRefreshTokens(): void;
  set(o: Partial<FakeOAuthOptions>): void;
}

export const FAKE_CLIENT_ID = 'tollgate-test-client';

const DEFAULTS: FakeOAuthOptions = {
  pendingPolls: 1,
  slowDownOn: null,
  rateLimited: {},
  deny: false,
  expire: false,
  interval: 1,
  deviceExpiresIn: 600,
  tokenExpiresIn: 3600,
  issueRefreshToken: true,
  rotateRefreshTokens: true,
  clientSecret: null,
  refreshDelayMs: 0,
  complete: true,
};

interface DeviceCode {
  readonly userCode: string;
  polls: number;
  used: boolean;
}

interface AccessToken {
  readonly chain: number;
  readonly expiresAt: number | null;
  revoked: boolean;
}

async function readForm(req: IncomingMessage): Promise<Record<string, string> | null> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (!/^application\/x-www-form-urlencoded\b/.test(req.headers['content-type'] ?? '')) return null;
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

const oauthError = (res: ServerResponse, status: number, error: string, description: string) =>
  json(res, status, { error, error_description: description });

export async function startFakeOAuth(t: { teardown(fn: () => unknown): void }, options: Partial<FakeOAuthOptions> = {}): Promise<FakeOAuth> {
  const o: FakeOAuthOptions = { ...DEFAULTS, ...options };
  const requests = { device: 0, token: 0 };
  const deviceRequests: Record<string, string>[] = [];
  const grants: Grant[] = [];
  const userCodes: string[] = [];
  const devices = new Map<string, DeviceCode>();
  const access = new Map<string, AccessToken>();
  const refresh = new Map<string, number>(); // refresh token -> chain
  let serial = 0;
  let chains = 0;

  /** Tokens for `chain`; `presented` is the refresh token of a refresh grant. */
  function issue(chain: number, presented?: string): Record<string, unknown> {
    for (const a of access.values()) if (a.chain === chain) a.revoked = true;
    const token = `at-${++serial}-${chain}`;
    access.set(token, { chain, expiresAt: o.tokenExpiresIn === null ? null : Date.now() + o.tokenExpiresIn * 1000, revoked: false });
    let next: string | undefined;
    if (presented === undefined ? o.issueRefreshToken : o.rotateRefreshTokens) {
      if (presented !== undefined) refresh.delete(presented);
      next = `rt-${++serial}-${chain}`;
      refresh.set(next, chain);
    }
    return {
      access_token: token,
      token_type: 'Bearer',
      ...(o.tokenExpiresIn === null ? {} : { expires_in: o.tokenExpiresIn }),
      // a refresh that does not rotate leaves refresh_token out, as most servers do
      ...(next === undefined ? {} : { refresh_token: next }),
      scope: 'chat',
    };
  }

  const clientOk = (f: Record<string, string>) => f.client_id === FAKE_CLIENT_ID && (o.clientSecret === null || f.client_secret === o.clientSecret);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const form = req.method === 'POST' ? await readForm(req) : null;
    if (req.method !== 'POST' || (path !== '/device/code' && path !== '/token')) return json(res, 404, { error: 'not_found' });
    if (form === null) return oauthError(res, 400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');

    if (path === '/device/code') {
      requests.device++;
      deviceRequests.push(form);
      if (!clientOk(form)) return oauthError(res, 401, 'invalid_client', 'unknown client or wrong secret');
      const n = devices.size + 1;
      const deviceCode = `dc-${n}-${Math.random().toString(36).slice(2)}`;
      const userCode = `WDJB-MJH${n}`;
      devices.set(deviceCode, { userCode, polls: 0, used: false });
      userCodes.push(userCode);
      const verification = `http://127.0.0.1:${loop.port}/device`;
      return json(res, 200, {
        device_code: deviceCode,
        user_code: userCode,
        verification_uri: verification,
        ...(o.complete ? { verification_uri_complete: `${verification}?user_code=${userCode}` } : {}),
        expires_in: o.deviceExpiresIn,
        ...(o.interval === null ? {} : { interval: o.interval }),
      });
    }

    requests.token++;
    const record = (answer: string, accessToken?: string) =>
      grants.push({ grant_type: form.grant_type ?? '', params: form, answer, at: Date.now(), ...(accessToken === undefined ? {} : { access_token: accessToken }) });
    const fail = (status: number, error: string, description: string) => {
      record(error);
      oauthError(res, status, error, description);
    };
    if (!clientOk(form)) return fail(401, 'invalid_client', 'unknown client or wrong secret');

    if (form.grant_type === 'urn:ietf:params:oauth:grant-type:device_code') {
      const d = devices.get(form.device_code ?? '');
      if (d === undefined || d.used) return fail(400, 'invalid_grant', 'unknown or used device code');
      d.polls++;
      const limited = d.polls <= o.pendingPolls ? o.rateLimited[d.polls] : undefined;
      if (limited !== undefined) {
        record('429');
        const retryAfter = limited.retryAfter === null ? {} : { 'retry-after': limited.retryAfter };
        if (limited.json === undefined) {
          res.writeHead(429, { 'content-type': 'text/plain', ...retryAfter });
          return void res.end('Too Many Requests');
        }
        res.writeHead(429, { 'content-type': 'application/json', ...retryAfter });
        return void res.end(JSON.stringify({ error: limited.json }));
      }
      if (d.polls <= o.pendingPolls) {
        return d.polls === o.slowDownOn
          ? fail(400, 'slow_down', 'polling too fast')
          : fail(400, 'authorization_pending', 'the user has not approved yet');
      }
      if (o.deny) return fail(400, 'access_denied', 'The user said no');
      if (o.expire) return fail(400, 'expired_token', 'The device code has expired');
      d.used = true;
      const body = issue(++chains, undefined);
      record('issued', body.access_token as string);
      return json(res, 200, body);
    }

    if (form.grant_type === 'refresh_token') {
      if (o.refreshDelayMs > 0) await new Promise((r) => setTimeout(r, o.refreshDelayMs));
      const chain = refresh.get(form.refresh_token ?? '');
      if (chain === undefined) return fail(400, 'invalid_grant', 'the refresh token is invalid or was revoked');
      const body = issue(chain, form.refresh_token);
      record('issued', body.access_token as string);
      return json(res, 200, body);
    }
    return fail(400, 'unsupported_grant_type', `grant_type ${form.grant_type ?? '(none)'}`);
  }

  const loop = await listenLoopback(t, handle, (err, res) => {
    if (!res.headersSent) oauthError(res, 500, 'server_error', String(err));
    else res.destroy();
  });
  const base = `http://127.0.0.1:${loop.port}`;
  const now = () => Date.now();
  return {
    deviceAuthorizationUrl: `${base}/device/code`,
    tokenUrl: `${base}/token`,
    settings: (extra = {}) => ({
      device_authorization_url: `${base}/device/code`,
      token_url: `${base}/token`,
      client_id: FAKE_CLIENT_ID,
      scope: 'chat',
      ...(o.clientSecret === null ? {} : { client_secret: o.clientSecret }),
      ...extra,
    }),
    requests,
    deviceRequests,
    grants,
    userCodes,
    validAccessTokens: () => [...access].filter(([, a]) => !a.revoked && (a.expiresAt === null || a.expiresAt > now())).map(([k]) => k),
    issuedAccessTokens: () => [...access.keys()],
    validRefreshTokens: () => [...refresh.keys()],
    revokeAccessTokens: () => {
      for (const a of access.values()) a.revoked = true;
    },
    revokeRefreshTokens: () => refresh.clear(),
    set: (patch) => Object.assign(o, patch),
  };
}
