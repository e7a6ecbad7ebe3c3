// OAuth 2.0 authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636 with S256) for native apps (RFC 8252): the
// user's browser opens the authorization URL; the code comes back to a loopback listener on 127.0.0.1 with an
// ephemeral port (RFC 8252 §7.3), or is pasted back from a registered redirect URI (§7.1's out-of-band cousin).
// The code is exchanged with its verifier at the token endpoint; refresh is OAuthSession's (oauth.ts), as for the
// device flow. PKCE and state are node:crypto (32 random bytes each, base64url; S256 = base64url(SHA-256)): two
// lines that need no library. Codes, verifiers and tokens never appear in a message.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthSettings } from '../config/types.js';
import type { OAuthTokens } from './credentials.js';
import { OAuthError, failure, oauthErrorOf, postForm, printable, tokensFrom } from './oauth.js';

const base64url = (b: Buffer): string => b.toString('base64url');

/** A code verifier (RFC 7636 §4.1: 43 characters of [A-Za-z0-9-_]) and its S256 challenge (§4.2). */
export function createPkce(): { verifier: string; challenge: string } {
  const verifier = base64url(randomBytes(32));
  return { verifier, challenge: s256(verifier) };
}

export const s256 = (verifier: string): string => base64url(createHash('sha256').update(verifier, 'ascii').digest());

/** An unguessable `state` (RFC 6749 §10.12): the callback must bring it back. */
export const newState = (): string => base64url(randomBytes(16));

export interface AuthorizationRequest {
  /** The URL the user opens. */
  readonly url: string;
  readonly state: string;
  /** Kept by whoever exchanges the code; never sent to the browser. */
  readonly verifier: string;
  readonly redirectUri: string;
}

/** The authorization request (RFC 6749 §4.1.1 with RFC 7636 §4.3): response_type=code, S256. */
export function authorizationRequest(s: OAuthSettings, redirectUri: string, state: string = newState()): AuthorizationRequest {
  if (s.authorization_url === undefined) throw new OAuthError('auth.oauth.authorization_url is not set (the pkce flow needs it)');
  const { verifier, challenge } = createPkce();
  const url = new URL(s.authorization_url);
  for (const [k, v] of Object.entries(s.authorization_params ?? {})) url.searchParams.set(k, v);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', s.client_id);
  url.searchParams.set('redirect_uri', redirectUri);
  if (s.scope !== undefined) url.searchParams.set('scope', s.scope);
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  return { url: url.toString(), state, verifier, redirectUri };
}

const sameState = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The code from what came back: the redirect's query (`code`, `state`, or `error`), as a whole URL, a query string,
 * or `<code>#<state>`; the state must be the one sent. A bare code (no state to check) is accepted only when
 * `allowBareCode` (the user pasted it from a page of the provider).
 */
export function codeFromCallback(input: string, expectedState: string, opts: { allowBareCode?: boolean } = {}): string {
  const text = input.trim();
  let params: URLSearchParams | null = null;
  if (/^https?:\/\//i.test(text)) params = URL.canParse(text) ? new URL(text).searchParams : null;
  else if (text.startsWith('?') || /(^|&)(code|error)=/.test(text)) params = new URLSearchParams(text.replace(/^\?/, ''));
  else if (/^[^#\s]+#[^#\s]+$/.test(text)) {
    const [code, state] = text.split('#') as [string, string];
    params = new URLSearchParams({ code, state });
  }
  if (params === null) {
    if (opts.allowBareCode === true && /^[\x21-\x7e]{1,2048}$/.test(text)) return text;
    throw new OAuthError('what came back is not an authorization response (expected the address you were sent to, or its code)');
  }
  // The state first, an error response's too (RFC 6749 §4.1.2.1: it carries the request's state): a redirect that does
  // not carry it is not the authorization server's answer to this sign-in, whatever it says.
  const state = params.get('state');
  if (state === null || !sameState(state, expectedState)) {
    throw new OAuthError('the authorization response carries another state than the request sent: refused (RFC 6749 §10.12); start the sign-in again', { oauthError: 'state_mismatch' });
  }
  const error = params.get('error');
  if (error !== null) {
    const desc = params.get('error_description');
    throw new OAuthError(`authorization was refused (${printable(error, 100)}${desc ? `: ${printable(desc)}` : ''})`, { oauthError: printable(error, 100) });
  }
  const code = params.get('code');
  if (code === null || code === '') throw new OAuthError('the authorization response carries no code');
  return code;
}

/** RFC 6749 §4.1.3 with RFC 7636 §4.5: the code, its redirect URI and the verifier, for tokens. */
export async function exchangeCode(
  s: OAuthSettings,
  grant: { code: string; verifier: string; redirectUri: string },
  opts: { now?: () => number; signal?: AbortSignal } = {},
): Promise<OAuthTokens> {
  const url = s.token_url;
  const reply = await postForm(
    url,
    {
      grant_type: 'authorization_code', code: grant.code, redirect_uri: grant.redirectUri, code_verifier: grant.verifier,
      client_id: s.client_id, client_secret: s.client_secret,
    },
    opts.signal,
  );
  const refused = reply.kind === 'json' ? oauthErrorOf(reply.body, [grant.code, grant.verifier, s.client_secret]) : null;
  if (refused !== null) throw new OAuthError(`token endpoint ${url} refused the authorization code (${refused.text})`, { oauthError: refused.code });
  if (reply.kind !== 'json' || reply.status < 200 || reply.status > 299) throw failure(reply, 'token endpoint', url);
  return tokensFrom(reply.body, (opts.now ?? Date.now)(), url);
}

export interface LoopbackRedirect {
  /** `http://127.0.0.1:<port>/callback`: the redirect URI to send. */
  readonly redirectUri: string;
  /** The code, once the browser came back with the right state; rejects on an error, another state, or the timeout. */
  readonly code: Promise<string>;
  close(): Promise<void>;
}

const PAGE = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><p>${text.replace(/[<>&]/g, '')}</p>`;

/**
 * RFC 8252 §7.3: a listener on 127.0.0.1 with a port the system picks, for one redirect to `/callback`. It answers
 * the browser with a short page, then closes. Any other path is a 404, and a target that is not a URL a 400: neither
 * ends the wait.
 */
export async function listenForRedirect(opts: { state: string; timeoutMs: number; signal?: AbortSignal }): Promise<LoopbackRedirect> {
  let settle!: { resolve: (code: string) => void; reject: (err: Error) => void };
  const code = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  code.catch(() => undefined); // the caller awaits it; an early failure is not unhandled meanwhile
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // Anything may connect to the port: a request line the URL parser refuses (`GET //[`) is a 400, and the wait goes on.
    const url = URL.canParse(req.url ?? '/', 'http://127.0.0.1') ? new URL(req.url ?? '/', 'http://127.0.0.1') : null;
    if (url === null) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('bad request');
      return;
    }
    if (req.method !== 'GET' || url.pathname !== '/callback') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    try {
      const got = codeFromCallback(url.search, opts.state);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE('Signed in', 'Signed in: you can close this tab and return to the terminal.'));
      settle.resolve(got);
    } catch (err) {
      res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE('Sign-in failed', (err as Error).message));
      settle.reject(err as Error);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const timer = setTimeout(() => settle.reject(new OAuthError(`no sign-in came back within ${Math.round(opts.timeoutMs / 1000)} s`)), opts.timeoutMs);
  timer.unref();
  const onAbort = () => settle.reject(new OAuthError('sign-in cancelled'));
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const close = async () => {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { redirectUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, code, close };
}
