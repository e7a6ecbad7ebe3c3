// OAuth 2.0 for upstream providers: the token endpoint's requests and answers (shared by the device authorization
// grant, device-code.ts, and the authorization code grant, pkce.ts), the refresh grant (RFC 6749 §6), and
// OAuthSession, which hands out a current access token for one provider.
//
// Requests are application/x-www-form-urlencoded POSTs; a client_secret is sent in the body (client_secret_post).
// Answers are JSON; an OAuth error (`error`, `error_description`) is recognised whatever the HTTP status, since some
// servers (GitHub) send errors with 200. Bodies are never quoted in messages: a body may hold a token.

import type { OAuthSettings } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { retryAfterMs } from '../core/retry-after.js';
import { withoutSecrets } from '../core/secrets.js';
import { within } from '../core/within.js';
import type { CredentialStore, OAuthTokens } from './credentials.js';

/** A refusal from an authorization server (`oauthError` as RFC 6749 §5.2 names it), or no usable answer from it. */
export class OAuthError extends TollgateError {
  /** The server's `error` code; null when it gave none (unreachable, not JSON, no access_token). */
  readonly oauthError: string | null;
  /** The server could not be reached or failed (5xx; for a refresh, anything but a refusal): trying again later may work. */
  readonly transient: boolean;
  /** The server's Retry-After, in ms (null: none). */
  readonly retryAfterMs: number | null;

  constructor(message: string, opts: { oauthError?: string | null; transient?: boolean; retryAfterMs?: number | null; cause?: unknown } = {}) {
    super('TOLLGATE_ERR_PROVIDER_AUTH', message, { cause: opts.cause });
    this.name = 'OAuthError';
    this.oauthError = opts.oauthError ?? null;
    this.transient = opts.transient ?? false;
    this.retryAfterMs = opts.retryAfterMs ?? null;
  }
}

const REQUEST_TIMEOUT_MS = 15_000;
/** Tokens that expire within this are refreshed before use. */
export const REFRESH_MARGIN_MS = 60_000;
/** How long requests wait for the refresh of a token still good (a hanging endpoint: not its 15 s each). */
export const EARLY_REFRESH_WAIT_MS = 2000;
/** After a refresh that could not be done, the endpoint is not asked again for this long, or its Retry-After ... */
export const REFRESH_RETRY_MIN_MS = 5000;
/** ... up to this: the token that is about to expire is not kept waiting longer. */
export const REFRESH_RETRY_MAX_MS = 60_000;

/** `retryAfterMs`: the answer's Retry-After in ms, null without one. */
export type Reply =
  | { readonly kind: 'json'; readonly status: number; readonly body: Readonly<Record<string, unknown>>; readonly retryAfterMs: number | null }
  | { readonly kind: 'not-json'; readonly status: number; readonly contentType: string; readonly retryAfterMs: number | null }
  | { readonly kind: 'unreachable'; readonly reason: string };

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Server-supplied text made safe for a terminal or a log line: no control characters, bounded length. */
export function printable(s: string, max = 300): string {
  const clean = s.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

function unreachableReason(err: unknown): string {
  if ((err as Error)?.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}

export async function postForm(url: string, params: Readonly<Record<string, string | undefined>>, signal?: AbortSignal): Promise<Reply> {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) body.set(k, v);
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  let status: number;
  let contentType: string;
  let text: string;
  let retryAfter: number | null;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    status = res.status;
    contentType = res.headers.get('content-type') ?? '';
    retryAfter = retryAfterMs({ 'retry-after': res.headers.get('retry-after') ?? undefined, 'retry-after-ms': res.headers.get('retry-after-ms') ?? undefined });
    text = await res.text();
  } catch (err) {
    signal?.throwIfAborted();
    return { kind: 'unreachable', reason: unreachableReason(err) };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined; // the parse error would quote the body
  }
  return isRecord(parsed) ? { kind: 'json', status, body: parsed, retryAfterMs: retryAfter } : { kind: 'not-json', status, contentType, retryAfterMs: retryAfter };
}

/** A positive number of seconds, also as a numeric string (some servers quote them); undefined otherwise. */
export function seconds(v: unknown): number | undefined {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * `error: description` of an OAuth error body, or null when the body is not one. `sent`: the secrets the request
 * carried (a refresh token, a code and its verifier, a device code, the client secret), replaced by `[REDACTED]`
 * where the description quotes them ("Invalid refresh token: ...") before the text reaches a client or a log.
 */
export function oauthErrorOf(body: Readonly<Record<string, unknown>>, sent: readonly (string | undefined)[] = []): { code: string; text: string } | null {
  if (typeof body.error !== 'string' || body.error === '') return null;
  const code = printable(body.error, 100);
  const desc = typeof body.error_description === 'string' && body.error_description !== '' ? withoutSecrets(body.error_description, sent) : '';
  return { code, text: desc === '' ? code : `${code}: ${printable(desc)}` };
}

/** The failure a reply that is not a usable answer stands for; `what` names the endpoint. */
export function failure(reply: Exclude<Reply, { kind: 'json' }> | { kind: 'json'; status: number }, what: string, url: string): OAuthError {
  switch (reply.kind) {
    case 'unreachable':
      return new OAuthError(`${what} ${url} cannot be reached (${reply.reason})`, { transient: true });
    case 'not-json':
      return new OAuthError(
        `${what} ${url} answered HTTP ${reply.status} without a JSON object (content-type: ${printable(reply.contentType, 100) || 'none'})`,
        { transient: reply.status >= 500 },
      );
    case 'json':
      return new OAuthError(`${what} ${url} answered HTTP ${reply.status} without an OAuth error code`, { transient: reply.status >= 500 });
  }
}

/** The tokens of a successful token response (RFC 6749 §5.1); `obtainedAt` in ms. */
export function tokensFrom(body: Readonly<Record<string, unknown>>, obtainedAt: number, url: string): OAuthTokens {
  if (typeof body.access_token !== 'string' || body.access_token === '') {
    throw new OAuthError(`token endpoint ${url} answered without an access_token`);
  }
  const expiresIn = seconds(body.expires_in);
  return {
    access_token: body.access_token,
    ...(typeof body.refresh_token === 'string' && body.refresh_token !== '' ? { refresh_token: body.refresh_token } : {}),
    // RFC 6749 requires it; a server that leaves it out issues bearer tokens in practice
    token_type: typeof body.token_type === 'string' && body.token_type !== '' ? body.token_type : 'Bearer',
    expires_at: expiresIn === undefined ? null : obtainedAt + expiresIn * 1000,
    ...(typeof body.scope === 'string' ? { scope: body.scope } : {}),
    obtained_at: obtainedAt,
  };
}

/** RFC 6749 §6: new tokens for a refresh token. A server that does not rotate it leaves the old one in place. */
export async function refreshTokens(
  s: OAuthSettings,
  refreshToken: string,
  opts: { now?: () => number; signal?: AbortSignal } = {},
): Promise<OAuthTokens> {
  const url = s.token_url;
  const reply = await postForm(
    url,
    { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: s.client_id, client_secret: s.client_secret },
    opts.signal,
  );
  const refused = reply.kind === 'json' ? oauthErrorOf(reply.body, [refreshToken, s.client_secret]) : null;
  // A refusal is an OAuth error object (RFC 6749 §5.2: with a 400 or 401; GitHub's with a 200), not one of the codes
  // (§4.1.2.1) some endpoints also send for an outage. Anything else (a 429 or a 5xx, an error object or not; a page
  // that is not JSON, a proxy's or a firewall's; a 2xx without an access_token) says nothing about the refresh token:
  // the endpoint could not refresh now, and trying again later may work.
  const busy = reply.kind === 'unreachable' || reply.status === 429 || reply.status >= 500;
  if (refused !== null && !busy && refused.code !== 'temporarily_unavailable' && refused.code !== 'server_error') {
    throw new OAuthError(`token endpoint ${url} refused the refresh token (${refused.text})`, { oauthError: refused.code });
  }
  const retry = { transient: true, retryAfterMs: reply.kind === 'unreachable' ? null : reply.retryAfterMs };
  if (reply.kind === 'json' && refused !== null) {
    throw new OAuthError(`token endpoint ${url} could not refresh the token (HTTP ${reply.status}: ${refused.text})`, { oauthError: refused.code, ...retry });
  }
  if (reply.kind !== 'json' || reply.status < 200 || reply.status > 299) {
    throw new OAuthError(failure(reply, 'token endpoint', url).message, retry);
  }
  let tokens: OAuthTokens;
  try {
    tokens = tokensFrom(reply.body, (opts.now ?? Date.now)(), url);
  } catch (err) {
    throw new OAuthError((err as Error).message, retry);
  }
  return tokens.refresh_token === undefined ? { ...tokens, refresh_token: refreshToken } : tokens;
}

function notConnected(providerId: string, reason?: string): TollgateError {
  return new TollgateError(
    'TOLLGATE_ERR_PROVIDER_AUTH',
    `provider '${providerId}' is not connected: run \`tollgate connect ${providerId}\`${reason === undefined ? '' : ` (${reason})`}`,
  );
}

/**
 * The current access token of one OAuth provider. Tokens are read from the store on first use and kept in memory;
 * a token that expires within 60 s (or one `invalidate`d after an upstream 401) is refreshed first, once for all
 * concurrent callers (for at most 2 s while it is still good), and the new tokens are saved. Before a refresh, and
 * when the server refuses the refresh token, newer tokens in the file (a new `tollgate connect`, another process's)
 * win. Only an OAuth error object refuses the refresh token; when the refresh cannot be done (unreachable, 429, 5xx,
 * an answer that is not tokens) the tokens are kept, a token that has not expired is used, and the endpoint is asked
 * again after 5 s (or its Retry-After, at most 60 s), not by every call.
 */
export class OAuthSession {
  readonly #providerId: string;
  readonly #settings: OAuthSettings;
  readonly #store: CredentialStore;
  readonly #now: () => number;
  #tokens: OAuthTokens | null = null;
  #loading: Promise<OAuthTokens | null> | null = null;
  #refreshing: Promise<OAuthTokens> | null = null;
  /** When the refresh under way began (epoch ms). */
  #refreshStarted = 0;
  #stale = false;
  /** The last refresh could not be done: why, and when (epoch ms) the endpoint may be asked again. */
  #heldOff: { readonly until: number; readonly reason: string; readonly cause: unknown } | null = null;

  constructor(providerId: string, settings: OAuthSettings, store: CredentialStore, now: () => number = Date.now) {
    this.#providerId = providerId;
    this.#settings = settings;
    this.#store = store;
    this.#now = now;
  }

  async accessToken(): Promise<string> {
    const tokens = this.#tokens ?? (await this.#load());
    if (tokens === null) throw notConnected(this.#providerId);
    if (!this.#stale && !this.#expiresSoon(tokens)) return tokens.access_token;
    const refreshed = this.#refresh(tokens);
    // A token still good past the wait is used once the refresh has taken that long (it goes on for later calls).
    const good = !this.#stale && tokens.expires_at !== null && tokens.expires_at - this.#now() > EARLY_REFRESH_WAIT_MS;
    if (!good) return (await refreshed).access_token;
    return ((await within(refreshed, this.#refreshStarted + EARLY_REFRESH_WAIT_MS - this.#now())) ?? tokens).access_token;
  }

  /**
   * The next call refreshes (after the upstream answered 401). With `accessToken`, only when that is still the
   * current token: requests that failed with a token already replaced do not cause another refresh.
   */
  invalidate(accessToken?: string): void {
    if (this.#tokens === null) return;
    if (accessToken !== undefined && accessToken !== this.#tokens.access_token) return;
    this.#stale = true;
  }

  #expiresSoon(t: OAuthTokens): boolean {
    return t.expires_at !== null && t.expires_at - this.#now() <= REFRESH_MARGIN_MS;
  }

  // Nothing stored (or unreadable) is not remembered: a later `tollgate connect` is picked up without a restart.
  #load(): Promise<OAuthTokens | null> {
    this.#loading ??= this.#store
      .load(this.#providerId)
      .then((t) => {
        // Tokens read from the file are not the ones a 401 marked (a new `tollgate connect` wrote them, or the
        // session was dropped): they are used as they are, not refreshed first.
        this.#stale = false;
        return (this.#tokens = t);
      })
      .finally(() => (this.#loading = null));
    return this.#loading;
  }

  #refresh(current: OAuthTokens): Promise<OAuthTokens> {
    if (this.#refreshing === null) {
      this.#refreshStarted = this.#now();
      this.#refreshing = this.#doRefresh(current).finally(() => (this.#refreshing = null));
      this.#refreshing.catch(() => undefined); // a caller that stopped waiting (above) leaves no unhandled rejection
    }
    return this.#refreshing;
  }

  /** Not refused with a 401, and not expired. */
  #usable(t: OAuthTokens): boolean {
    return !this.#stale && (t.expires_at === null || t.expires_at > this.#now());
  }

  #couldNotRefresh(h: { readonly until: number; readonly reason: string; readonly cause: unknown }): TollgateError {
    const s = Math.max(1, Math.ceil((h.until - this.#now()) / 1000));
    return new TollgateError('TOLLGATE_ERR_TOKEN_REFRESH_FAILED', `provider '${this.#providerId}': the access token could not be refreshed (${h.reason}); the next request after ${s} s tries again`, { cause: h.cause });
  }

  /** Tokens from the file (newer than the ones held) are this session's from now; returned for the caller to use. */
  #adopt(tokens: OAuthTokens): OAuthTokens {
    this.#tokens = tokens;
    this.#stale = false;
    return tokens;
  }

  /** The tokens in the file when they were obtained after `than` (an unreadable file: none). */
  async #newerOnDisk(than: OAuthTokens): Promise<OAuthTokens | null> {
    const onDisk = await this.#store.load(this.#providerId).catch(() => null);
    return onDisk !== null && onDisk.obtained_at > than.obtained_at ? onDisk : null;
  }

  async #doRefresh(held: OAuthTokens): Promise<OAuthTokens> {
    const id = this.#providerId;
    const heldOff = this.#heldOff !== null && this.#heldOff.until > this.#now() ? this.#heldOff : null;
    // Nothing to refresh it with, or the endpoint failed a moment ago, and still good (its last minute): used as it
    // is. The file is not read here: this runs for every request of that minute, and a read with
    // TOLLGATE_SECRET_KEY runs scrypt.
    if ((held.refresh_token === undefined || heldOff !== null) && this.#usable(held)) return held;
    // A new `tollgate connect` (or another process sharing data_dir) may have replaced the tokens since they were
    // read: newer ones in the file win, so that refreshing the old grant does not overwrite the new one. They are
    // used as they are, and refreshed only when they too expire within the margin.
    const newer = await this.#newerOnDisk(held);
    if (newer !== null && !this.#expiresSoon(this.#adopt(newer))) return newer;
    const current = newer ?? held;
    const usable = this.#usable(current);
    if (current.refresh_token === undefined) {
      if (usable) return current; // within the last minute: nothing to refresh it with yet
      this.#tokens = null;
      throw notConnected(id, `the access token ${this.#stale ? 'was refused' : 'expired'} and the server issued no refresh token`);
    }
    if (heldOff !== null) {
      // the endpoint failed a moment ago (or asked for a wait): not asked again by every request
      if (usable) return current;
      throw this.#couldNotRefresh(heldOff);
    }
    let fresh: OAuthTokens;
    try {
      fresh = await refreshTokens(this.#settings, current.refresh_token, { now: this.#now });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (err instanceof OAuthError && err.transient) {
        const wait = Math.min(Math.max(err.retryAfterMs ?? 0, REFRESH_RETRY_MIN_MS), REFRESH_RETRY_MAX_MS);
        this.#heldOff = { until: this.#now() + wait, reason, cause: err };
        if (usable) return current;
        throw this.#couldNotRefresh(this.#heldOff);
      }
      // Another process sharing data_dir (or a new `tollgate connect`) may have replaced the tokens and so retired
      // this refresh token: use what the file holds now if it is newer.
      const onDisk = await this.#newerOnDisk(current);
      if (onDisk !== null && !this.#expiresSoon(onDisk)) return this.#adopt(onDisk);
      this.#tokens = null; // read the file again next time
      throw notConnected(id, reason);
    }
    const tokens: OAuthTokens = { ...fresh, ...(fresh.scope === undefined && current.scope !== undefined ? { scope: current.scope } : {}) };
    this.#heldOff = null;
    // A reconnect saved while the refresh was on its way (the new grant's tokens, obtained after the ones refreshed)
    // wins over the old grant's refreshed tokens, which are dropped, not saved over it.
    const reconnected = await this.#newerOnDisk(current);
    if (reconnected !== null) {
      // its own grant, never the old one saved over it: used while good, else refreshed (its file is the newest)
      return this.#usable(this.#adopt(reconnected)) ? reconnected : this.#doRefresh(reconnected);
    }
    this.#tokens = tokens;
    this.#stale = false;
    try {
      await this.#store.save(id, tokens);
    } catch (err) {
      // the new tokens are in memory and serve this process; the next refresh saves again. The client is told the
      // error's code, not its message: Node's file-system errors quote the server's paths (the log has the cause).
      throw new TollgateError('TOLLGATE_ERR_PROVIDER_AUTH', `provider '${id}': refreshed tokens could not be saved under storage.data_dir/credentials (${saveFailure(err)})`, { cause: err });
    }
    return tokens;
  }
}

/** Why a save failed, without a path: a file-system error's code (EACCES, ENOSPC, ...), or the store's own message. */
function saveFailure(err: unknown): string {
  if (err instanceof TollgateError) return err.message;
  return (err as NodeJS.ErrnoException | null)?.code ?? 'error';
}
