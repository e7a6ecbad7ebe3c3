// The console's sign-in for a provider whose `auth.oauth.flow` is pkce (admin only: /api/settings/* is admin in the
// gate). Two steps, so that the code verifier never leaves the gateway:
//
//   POST /api/settings/providers/:id/connect            { redirect_uri? }       -> { authorization_url, state, ... }
//   POST /api/settings/providers/:id/connect/complete   { callback_url } | { code, state }   -> { connected: true, ... }
//
// The browser opens authorization_url; the provider redirects to redirect_uri (the console's callback page, or the
// one registered for the client, whose address the user pastes back); the console posts what came back. A pending
// sign-in lives 10 minutes, in this process, and completes once; a second complete while one is under way is a 400
// and sends nothing (a code used twice makes a strict provider revoke the tokens it bought). Tokens are saved
// encrypted, as `tollgate connect` saves them (docs/connections.md).
//
// What the client posts is checked before anything is sent: a malformed callback or code is a 400 naming the field,
// and the pending sign-in stays, so a typo costs a retry, not a new sign-in. The token endpoint's `invalid_grant`
// (a wrong, expired or used code: the client's input) is a 400 too and keeps it, for MAX_EXCHANGES refusals at
// most; an unreachable or failing (5xx) endpoint is a 502 and keeps it. It ends on success, on an `error` in the
// callback (the provider ended the authorization), and on any other failure of the endpoint (a 502: the client
// registration or the provider is at fault, so the same sign-in cannot succeed). The credentials directory is made
// writable before the browser is sent away and before the code is sent; a save that fails after the exchange keeps
// the tokens with the sign-in, so the same callback posted again saves them (the code is spent).

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import type { OAuthSettings } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { own } from '../core/own.js';
import { CredentialStore, type OAuthTokens } from '../providers/credentials.js';
import { OAuthError, printable } from '../providers/oauth.js';
import { authorizationRequest, exchangeCode } from '../providers/pkce.js';

const PENDING_MS = 10 * 60_000;
const MAX_PENDING = 64;
/** Codes the token endpoint may refuse (invalid_grant) before the sign-in ends. */
const MAX_EXCHANGES = 5;
const MAX_CALLBACK = 8192;
/** RFC 6749 appendix A.11: code = 1*VSCHAR; 2048 is far above any provider's. */
const CODE = /^[\x20-\x7e]{1,2048}$/;

interface Pending {
  readonly providerId: string;
  readonly verifier: string;
  readonly redirectUri: string;
  readonly expiresAt: number;
  /** Codes refused so far. */
  refused: number;
  /** A complete is under way (from its first await to its answer): a second one of the same sign-in is refused. */
  busy: boolean;
  /** The tokens of an exchange whose save failed: a second complete saves them (the code is spent). */
  tokens?: OAuthTokens;
}

/** A disk error of the credentials directory as a 500 naming the file system's code only (no path, no token). */
function diskFailure(err: unknown, what: (code: string) => string): TollgateError {
  if (err instanceof TollgateError) return err;
  return new TollgateError('TOLLGATE_ERR_INTERNAL', what((err as NodeJS.ErrnoException | null)?.code ?? 'error'), { cause: err });
}

/** The credentials directory (and, without TOLLGATE_SECRET_KEY, its key) made and writable, or a clear 500. */
async function writable(config: ConfigHolder): Promise<void> {
  await new CredentialStore(config.started.storage.data_dir).init().catch((err: unknown) => {
    throw diskFailure(err, (code) => `storage.data_dir/credentials cannot be written (${code}): fix the directory, then start the sign-in`);
  });
}

const bad = (message: string, param?: string) => new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', message, param === undefined ? {} : { param });

function pkceSettings(config: ConfigHolder, id: string): OAuthSettings {
  const p = own(config.current.providers, id);
  if (p === undefined) throw new TollgateError('TOLLGATE_ERR_NOT_FOUND', `no provider '${id.slice(0, 100)}' is configured`);
  const o = p.auth.type === 'oauth' ? p.auth.oauth : undefined;
  if (o?.flow !== 'pkce') throw bad(`provider '${id}' does not sign in with auth.oauth.flow: pkce`);
  return o;
}

const httpUrl = (v: unknown): v is string => typeof v === 'string' && v.length <= 2048 && /^https?:\/\/[^\s]+$/.test(v);
const body = (b: unknown): Record<string, unknown> => (b !== null && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>) : {});

/** What came back, as the provider's redirect parameters; `field` is the request field they were read from. */
interface Answer {
  readonly field: 'callback_url' | 'code';
  readonly state: string;
  readonly code: string | null;
  /** The provider's `error` (RFC 6749 §4.1.2.1), printable. */
  readonly error: string | null;
}

/** The callback's query: a whole http(s) URL or its query string. Never throws anything but a 400. */
function callbackParams(raw: string): URLSearchParams {
  const text = raw.trim();
  const not = (why: string) => bad(`callback_url ${why}: give the address the browser was sent back to`, 'callback_url');
  if (text.length > MAX_CALLBACK) throw not(`is longer than ${MAX_CALLBACK} characters`);
  if (/^https?:\/\//i.test(text)) {
    try {
      return new URL(text).searchParams;
    } catch {
      throw not('is not a valid URL');
    }
  }
  if (/^\??([^=&\s]+=[^&\s]*)(&[^=&\s]+=[^&\s]*)*$/.test(text)) return new URLSearchParams(text.replace(/^\?/, ''));
  throw not('is neither an http(s) URL nor a query string');
}

function answerOf(b: Record<string, unknown>): Answer {
  if (b.callback_url !== undefined) {
    if (typeof b.callback_url !== 'string') throw bad('callback_url must be a string', 'callback_url');
    const q = callbackParams(b.callback_url);
    const state = q.get('state');
    if (state === null || state === '') throw bad('callback_url carries no state: give the whole address the browser was sent back to', 'callback_url');
    const error = q.get('error');
    const desc = q.get('error_description');
    return { field: 'callback_url', state, code: q.get('code'), error: error === null ? null : `${printable(error, 100)}${desc ? `: ${printable(desc)}` : ''}` };
  }
  if (b.code === undefined && b.state === undefined) throw bad('give callback_url (the address the browser was sent back to), or code and state', 'callback_url');
  if (typeof b.code !== 'string') throw bad('code must be a string (the authorization code the provider sent back)', 'code');
  if (typeof b.state !== 'string' || b.state === '') throw bad('state must be the state the sign-in started with', 'state');
  return { field: 'code', state: b.state, code: b.code, error: null };
}

export const providerConnectRoutes: FastifyPluginAsync<{ config: ConfigHolder; now?: () => number }> = async (app, { config, now = Date.now }) => {
  const pending = new Map<string, Pending>();
  const sweep = () => {
    for (const [state, p] of pending) if (p.expiresAt <= now()) pending.delete(state);
  };

  app.post<{ Params: { id: string } }>('/api/settings/providers/:id/connect', async (req) => {
    const settings = pkceSettings(config, req.params.id);
    const b = body(req.body);
    const redirect = b.redirect_uri ?? settings.redirect_uri;
    if (redirect === undefined) throw bad('redirect_uri is required: the console page the provider sends the browser back to (or set auth.oauth.redirect_uri)', 'redirect_uri');
    if (!httpUrl(redirect)) throw bad('redirect_uri must be an http(s) URL', 'redirect_uri');
    sweep();
    if (pending.size >= MAX_PENDING) throw new TollgateError('TOLLGATE_ERR_RATE_LIMITED', 'too many sign-ins in progress; finish one or wait 10 minutes');
    await writable(config); // before the user authorises: an unwritable data_dir must not cost them a sign-in
    const ar = authorizationRequest(settings, redirect);
    const expiresAt = now() + PENDING_MS;
    pending.set(ar.state, { providerId: req.params.id, verifier: ar.verifier, redirectUri: ar.redirectUri, expiresAt, refused: 0, busy: false });
    return { provider: req.params.id, authorization_url: ar.url, state: ar.state, redirect_uri: ar.redirectUri, expires_at: new Date(expiresAt).toISOString() };
  });

  /** Exchange the code (unless an earlier save failed after it) and save the tokens; ends the sign-in unless it may be retried. */
  const exchangeAndSave = async (o: { providerId: string; settings: OAuthSettings; a: Answer; p: Pending }): Promise<OAuthTokens> => {
    const { a, p } = o;
    if (a.error !== null) {
      pending.delete(a.state); // the provider ended this authorization request
      throw bad(`the provider refused the authorization (${a.error}): start the sign-in again`, a.field);
    }
    const code = a.code?.trim() ?? '';
    if (code === '') throw bad(`${a.field === 'code' ? 'code is empty' : 'callback_url carries no code'}: give the address the browser was sent back to, or its code`, a.field);
    if (!CODE.test(code)) throw bad('the code must be 1 to 2048 printable ASCII characters (RFC 6749 appendix A.11)', a.field);
    let tokens = p.tokens;
    if (tokens === undefined) await writable(config); // the code is not spent yet: the sign-in stays
    try {
      tokens ??= await exchangeCode(o.settings, { code, verifier: p.verifier, redirectUri: p.redirectUri });
    } catch (err) {
      if (!(err instanceof OAuthError)) {
        pending.delete(a.state);
        throw err;
      }
      if (err.oauthError === 'invalid_grant') {
        p.refused += 1;
        const left = MAX_EXCHANGES - p.refused;
        if (left <= 0) pending.delete(a.state);
        throw bad(`${err.message}: the code is wrong, expired or already used; ${left > 0 ? 'check it and try again, or start again' : 'start the sign-in again'}`, a.field);
      }
      if (!err.transient) pending.delete(a.state);
      throw err;
    }
    try {
      await new CredentialStore(config.started.storage.data_dir).save(o.providerId, tokens);
    } catch (err) {
      // The code is spent: keep what it bought, so that the same complete saves it once the disk is fixed.
      p.tokens = tokens;
      throw diskFailure(err, (code) => `the tokens could not be saved under storage.data_dir/credentials (${code}); fix the directory, then post the same callback again within 10 minutes`);
    }
    pending.delete(a.state); // once
    return tokens;
  };

  app.post<{ Params: { id: string } }>('/api/settings/providers/:id/connect/complete', async (req) => {
    const settings = pkceSettings(config, req.params.id);
    const a = answerOf(body(req.body));
    sweep();
    const p = pending.get(a.state);
    if (p === undefined || p.providerId !== req.params.id) throw bad('no sign-in in progress with this state (unknown, already used, or older than 10 minutes): start again', 'state');
    if (p.busy) throw bad('this sign-in is being completed by another request: wait for its answer', 'state');
    // Claimed before the first await and held until the exchange and the save are over: a second complete (a double
    // click, a client's retry) never sends the code again, which a strict provider answers with invalid_grant and by
    // revoking the tokens the first exchange bought (RFC 6749 §4.1.2).
    p.busy = true;
    let tokens: OAuthTokens;
    try {
      tokens = await exchangeAndSave({ providerId: req.params.id, settings, a, p });
    } finally {
      p.busy = false; // the sign-in is over by now, or stays for another try
    }
    return {
      provider: req.params.id,
      connected: true,
      expires_at: tokens.expires_at === null ? null : new Date(tokens.expires_at).toISOString(),
      refreshable: tokens.refresh_token !== undefined,
    };
  });
};
