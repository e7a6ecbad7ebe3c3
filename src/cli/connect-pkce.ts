// `tollgate connect <provider>` for `auth.oauth.flow: pkce`: the authorization code grant with PKCE. Without a
// `redirect_uri` the code comes back to a loopback listener (127.0.0.1, a port the system picks; RFC 8252 §7.3);
// with one (a redirect URI registered for the client) the user pastes back the address the browser was sent to, or
// the code. Prints the URL to open; never a code, a verifier or a token.

import { createInterface } from 'node:readline';
import type { OAuthSettings } from '../config/types.js';
import type { OAuthTokens } from '../providers/credentials.js';
import { authorizationRequest, codeFromCallback, exchangeCode, listenForRedirect, newState } from '../providers/pkce.js';

export interface PkceOptions {
  /** Called with the authorization URL after it is printed (e.g. to open a browser; tests follow it). */
  readonly openUrl?: (url: string) => void | Promise<void>;
  /** Where a pasted answer is read (default: standard input). */
  readonly input?: NodeJS.ReadableStream;
  /** How long to wait for the browser to come back (default 5 minutes). */
  readonly timeoutMs?: number;
  readonly now?: () => number;
  readonly signal?: AbortSignal;
}

async function firstLine(input: NodeJS.ReadableStream): Promise<string> {
  const rl = createInterface({ input, terminal: false });
  try {
    for await (const line of rl) if (line.trim() !== '') return line;
  } finally {
    rl.close();
  }
  throw new Error('nothing was pasted (standard input ended)');
}

/** Sign in with PKCE and return the tokens (the caller saves them). */
export async function signInWithPkce(
  providerId: string,
  settings: OAuthSettings,
  out: { write(s: string): void },
  opts: PkceOptions = {},
): Promise<OAuthTokens> {
  const timeoutMs = opts.timeoutMs ?? 5 * 60_000;
  const exchange = { ...(opts.now === undefined ? {} : { now: opts.now }), ...(opts.signal === undefined ? {} : { signal: opts.signal }) };
  if (settings.redirect_uri !== undefined) {
    const req = authorizationRequest(settings, settings.redirect_uri);
    out.write(`To connect provider '${providerId}', open\n\n  ${req.url}\n\nsign in, then paste here the address your browser was sent to (or the code it shows):\n`);
    await opts.openUrl?.(req.url);
    const pasted = await firstLine(opts.input ?? process.stdin);
    const code = codeFromCallback(pasted, req.state, { allowBareCode: true });
    return exchangeCode(settings, { code, verifier: req.verifier, redirectUri: req.redirectUri }, exchange);
  }
  const state = newState();
  const listener = await listenForRedirect({ state, timeoutMs, ...(opts.signal === undefined ? {} : { signal: opts.signal }) });
  try {
    const req = authorizationRequest(settings, listener.redirectUri, state);
    out.write(`To connect provider '${providerId}', open\n\n  ${req.url}\n\nin a browser on this machine and sign in; waiting for it to come back to ${listener.redirectUri}...\n`);
    await opts.openUrl?.(req.url);
    const code = await listener.code;
    return await exchangeCode(settings, { code, verifier: req.verifier, redirectUri: req.redirectUri }, exchange);
  } finally {
    await listener.close();
  }
}

