// A fake OAuth 2.0 authorization server for the authorization code grant with PKCE, on a real socket (127.0.0.1,
// port 0), that enforces the RFCs the way a strict server does:
//
// - GET /authorize (RFC 6749 §4.1.1, RFC 7636 §4.3): a known client_id; response_type=code; a redirect_uri that is
//   registered exactly, or (RFC 8252 §7.3) a loopback http://127.0.0.1:<any port><path> when the registered one is
//   http://127.0.0.1<path> without a port; a code_challenge with method S256 (plain and none refused); state is
//   echoed. The "user" approves at once: 302 to redirect_uri with code and state (or error=access_denied with
//   `deny`; another state with `forgeState`, as an attacker's redirect would).
// - POST /token, grant_type=authorization_code (§4.1.3, RFC 7636 §4.6): the code is single-use (a second use is
//   invalid_grant and revokes the tokens it gave, §4.1.2), expires after `codeTtlMs`, was issued to this client for
//   this exact redirect_uri, and BASE64URL(SHA256(code_verifier)) equals its challenge.
// - POST /token, grant_type=refresh_token (§6): rotation: each refresh token works once; the answer carries a new one.
//
// It records every authorization request and token grant, and knows which access tokens are currently valid.

import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OAuthSettings } from '../../src/config/types.js';
import { listenLoopback } from './loopback.js';

export const PKCE_CLIENT_ID = 'tollgate-pkce-test-client';

export interface FakeAuthorizationServerOptions {
  /** Redirect URIs registered for the client (default: the loopback rule `http://127.0.0.1/callback`). */
  redirectUris: string[];
  /** How long a code can be exchanged (default 60 s). */
  codeTtlMs: number;
  /** The access tokens' expires_in in seconds (default 3600). */
  tokenExpiresIn: number;
  /** Answer the authorization with error=access_denied. */
  deny: boolean;
  /** Send back another state than the request's. */
  forgeState: boolean;
}

export interface TokenGrant {
  readonly grant_type: string;
  readonly params: Readonly<Record<string, string>>;
  /** 'issued' or the OAuth error code answered. */
  readonly answer: string;
}

export interface FakeAuthorizationServer {
  readonly authorizationUrl: string;
  readonly tokenUrl: string;
  settings(extra?: Partial<OAuthSettings>): OAuthSettings;
  set(o: Partial<FakeAuthorizationServerOptions>): void;
  /** Every /authorize request's query. */
  readonly authorizations: Readonly<Record<string, string>>[];
  readonly grants: TokenGrant[];
  isValidAccessToken(token: string): boolean;
  /** The browser's part: open `url` and return the Location the server redirects to (not followed). */
  authorize(url: string): Promise<string>;
}

interface CodeEntry {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly expiresAt: number;
  used: boolean;
  /** The access and refresh tokens issued for it (revoked if the code is replayed). */
  issued: string[];
}

const s256 = (v: string) => createHash('sha256').update(v, 'ascii').digest('base64url');
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

export async function startFakeAuthorizationServer(
  t: { teardown(fn: () => unknown): void },
  options: Partial<FakeAuthorizationServerOptions> = {},
): Promise<FakeAuthorizationServer> {
  const o: FakeAuthorizationServerOptions = { redirectUris: ['http://127.0.0.1/callback'], codeTtlMs: 60_000, tokenExpiresIn: 3600, deny: false, forgeState: false, ...options };
  const codes = new Map<string, CodeEntry>();
  const refreshTokens = new Map<string, { used: boolean }>();
  const validAccess = new Set<string>();
  const authorizations: Record<string, string>[] = [];
  const grants: TokenGrant[] = [];
  let serial = 0;
  const next = (prefix: string) => `${prefix}-${++serial}-${Math.random().toString(36).slice(2, 10)}`;

  const redirectAllowed = (uri: string): boolean => {
    let u: URL;
    try {
      u = new URL(uri);
    } catch {
      return false;
    }
    return o.redirectUris.some((r) => {
      if (r === uri) return true;
      const reg = new URL(r);
      // RFC 8252 §7.3: a loopback redirect registered without a port matches any port
      return reg.hostname === '127.0.0.1' && reg.port === '' && u.protocol === 'http:' && u.hostname === '127.0.0.1' && u.pathname === reg.pathname && u.search === '';
    });
  };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
  };

  const issue = (res: ServerResponse, into: string[]) => {
    const access = next('at');
    const refresh = next('rt');
    validAccess.add(access);
    refreshTokens.set(refresh, { used: false });
    into.push(access, refresh);
    json(res, 200, { access_token: access, token_type: 'Bearer', expires_in: o.tokenExpiresIn, refresh_token: refresh });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const q = Object.fromEntries(url.searchParams);
      authorizations.push(q);
      // Errors before the redirect URI is trusted are shown to the user, never redirected (RFC 6749 §4.1.2.1).
      if (q.client_id !== PKCE_CLIENT_ID) return void res.writeHead(400).end('unknown client_id');
      if (!q.redirect_uri || !redirectAllowed(q.redirect_uri)) return void res.writeHead(400).end('redirect_uri not registered');
      const back = new URL(q.redirect_uri);
      const redirect = (params: Record<string, string>) => {
        for (const [k, v] of Object.entries(params)) back.searchParams.set(k, v);
        if (q.state !== undefined) back.searchParams.set('state', o.forgeState ? 'forged-state' : q.state);
        res.writeHead(302, { location: back.toString() }).end();
      };
      if (q.response_type !== 'code') return redirect({ error: 'unsupported_response_type' });
      if (!q.code_challenge || q.code_challenge_method !== 'S256') return redirect({ error: 'invalid_request', error_description: 'PKCE with S256 is required' });
      if (o.deny) return redirect({ error: 'access_denied', error_description: 'the user said no' });
      const code = next('code');
      codes.set(code, { clientId: q.client_id, redirectUri: q.redirect_uri, challenge: q.code_challenge, expiresAt: Date.now() + o.codeTtlMs, used: false, issued: [] });
      return redirect({ code });
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      let text = '';
      for await (const c of req) text += String(c);
      const p = Object.fromEntries(new URLSearchParams(text));
      const answer = (code: string, status = 400, description?: string) => {
        grants.push({ grant_type: p.grant_type ?? '', params: p, answer: code });
        json(res, status, { error: code, ...(description ? { error_description: description } : {}) });
      };
      if ((req.headers['content-type'] ?? '').split(';')[0] !== 'application/x-www-form-urlencoded') return answer('invalid_request', 400, 'form body required');
      if (p.client_id !== PKCE_CLIENT_ID) return answer('invalid_client', 401);
      if (p.grant_type === 'authorization_code') {
        const entry = p.code === undefined ? undefined : codes.get(p.code);
        if (entry === undefined) return answer('invalid_grant', 400, 'unknown code');
        if (entry.used) {
          for (const tok of entry.issued) {
            validAccess.delete(tok);
            refreshTokens.delete(tok);
          }
          return answer('invalid_grant', 400, 'code already used');
        }
        entry.used = true;
        if (Date.now() > entry.expiresAt) return answer('invalid_grant', 400, 'code expired');
        if (entry.clientId !== p.client_id) return answer('invalid_grant', 400, 'code issued to another client');
        if (p.redirect_uri !== entry.redirectUri) return answer('invalid_grant', 400, 'redirect_uri differs from the authorization request');
        if (p.code_verifier === undefined || !VERIFIER.test(p.code_verifier) || s256(p.code_verifier) !== entry.challenge) return answer('invalid_grant', 400, 'code_verifier does not match');
        grants.push({ grant_type: 'authorization_code', params: p, answer: 'issued' });
        return issue(res, entry.issued);
      }
      if (p.grant_type === 'refresh_token') {
        const rt = p.refresh_token === undefined ? undefined : refreshTokens.get(p.refresh_token);
        if (rt === undefined || rt.used) return answer('invalid_grant', 400, 'refresh token unknown or already used');
        rt.used = true;
        grants.push({ grant_type: 'refresh_token', params: p, answer: 'issued' });
        return issue(res, []);
      }
      return answer('unsupported_grant_type');
    }
    res.writeHead(404).end();
  };

  const { port } = await listenLoopback(t, handle, (err, res) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'server_error', error_description: (err as Error).message }));
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    authorizationUrl: `${base}/authorize`,
    tokenUrl: `${base}/token`,
    settings: (extra = {}) => ({ flow: 'pkce', authorization_url: `${base}/authorize`, token_url: `${base}/token`, client_id: PKCE_CLIENT_ID, scope: 'chat', ...extra }),
    set: (x) => Object.assign(o, x),
    authorizations,
    grants,
    isValidAccessToken: (token) => validAccess.has(token),
    authorize: async (url) => {
      const res = await fetch(url, { redirect: 'manual' });
      await res.arrayBuffer();
      const location = res.headers.get('location');
      if (res.status !== 302 || location === null) throw new Error(`authorization answered ${res.status} without a redirect`);
      return location;
    },
  };
}
