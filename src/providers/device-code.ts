// The OAuth 2.0 device authorization grant (RFC 8628) that `tollgate connect` runs for `flow: device_code`: ask for
// a device code and the user code to show, then poll the token endpoint until the user approves. The requests and
// the reading of answers are oauth.ts's, as for the PKCE flow (pkce.ts).

import { setTimeout as delay } from 'node:timers/promises';
import type { OAuthSettings } from '../config/types.js';
import type { OAuthTokens } from './credentials.js';
import { OAuthError, failure, oauthErrorOf, postForm, printable, seconds, tokensFrom } from './oauth.js';

export interface DeviceAuthorization {
  readonly device_code: string;
  readonly user_code: string;
  readonly verification_uri: string;
  readonly verification_uri_complete?: string;
  /** Seconds until device_code expires. */
  readonly expires_in: number;
  /** Seconds between polls: the server's (at least 1), or 5 when it gives none or one not positive (RFC 8628 §3.2). */
  readonly interval: number;
}

export interface PollOptions {
  /** Wait before each poll (default: a timer). Tests pass one that records the waits and moves their clock. */
  sleep?(ms: number): Promise<void>;
  now?(): number;
  signal?: AbortSignal;
}

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const DEFAULT_INTERVAL_S = 5;
const MIN_INTERVAL_S = 1;
/** setTimeout's longest wait (ms); a longer one fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const SLOW_DOWN_S = 5;

/**
 * Seconds between polls (RFC 8628 §3.2): the server's, at least 1; 5 when it gives none or one that is not positive
 * (an `"interval": 0` would poll in a tight loop). Undefined for a value that is not a finite number.
 */
function pollInterval(v: unknown): number | undefined {
  if (v === undefined || v === null) return DEFAULT_INTERVAL_S;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) return undefined;
  return n <= 0 ? DEFAULT_INTERVAL_S : Math.max(n, MIN_INTERVAL_S);
}

function httpUrl(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || u.protocol === 'http:' ? printable(v, 2048) : undefined;
  } catch {
    return undefined;
  }
}

/** RFC 8628 §3.1–3.2: ask for a device code and the user code to show. */
export async function startDeviceAuthorization(s: OAuthSettings, signal?: AbortSignal): Promise<DeviceAuthorization> {
  const url = s.device_authorization_url;
  if (url === undefined) throw new OAuthError('auth.oauth.device_authorization_url is not set (the device_code flow needs it)');
  const reply = await postForm(url, { client_id: s.client_id, client_secret: s.client_secret, scope: s.scope }, signal);
  if (reply.kind !== 'json') throw failure(reply, 'device authorization endpoint', url);
  const refused = oauthErrorOf(reply.body, [s.client_secret]);
  if (refused !== null) throw new OAuthError(`device authorization endpoint ${url} refused the request (${refused.text})`, { oauthError: refused.code });
  if (reply.status < 200 || reply.status > 299) throw failure(reply, 'device authorization endpoint', url);
  const b = reply.body;
  // Google's endpoint says verification_url
  const verificationUri = httpUrl(b.verification_uri ?? b.verification_url);
  const complete = httpUrl(b.verification_uri_complete);
  const expiresIn = seconds(b.expires_in);
  const interval = pollInterval(b.interval);
  const missing = [
    typeof b.device_code === 'string' && b.device_code !== '' ? null : 'device_code',
    typeof b.user_code === 'string' && b.user_code !== '' ? null : 'user_code',
    verificationUri === undefined ? 'verification_uri (an http(s) URL)' : null,
    expiresIn === undefined || expiresIn === 0 ? 'expires_in' : null,
    interval === undefined ? 'interval (seconds)' : null,
  ].filter((m) => m !== null);
  if (missing.length > 0) throw new OAuthError(`device authorization endpoint ${url} answered without a valid ${missing.join(', ')}`);
  return {
    device_code: b.device_code as string,
    user_code: printable(b.user_code as string, 100),
    verification_uri: verificationUri!,
    ...(complete === undefined ? {} : { verification_uri_complete: complete }),
    expires_in: expiresIn!,
    interval: interval!,
  };
}

/**
 * RFC 8628 §3.4–3.5: poll the token endpoint every `interval` seconds until the user approves. authorization_pending
 * polls again; slow_down adds 5 s to the interval for this and every later poll; a 429 (whatever its body) is a
 * slow_down too unless it says its Retry-After, which the next poll then waits for (at least the interval); an
 * unreachable endpoint (or a 5xx without an OAuth error) doubles the interval (§3.5's back-off); any other error
 * ends the flow, as does the device code's expires_in running out.
 */
export async function pollForToken(s: OAuthSettings, da: DeviceAuthorization, opts: PollOptions = {}): Promise<OAuthTokens> {
  const sleep = opts.sleep ?? ((ms: number) => delay(ms, undefined, { signal: opts.signal }));
  const now = opts.now ?? Date.now;
  const url = s.token_url;
  const deadline = now() + da.expires_in * 1000;
  let interval = pollInterval(da.interval) ?? DEFAULT_INTERVAL_S; // a caller's DeviceAuthorization too
  let askedMs = 0; // a 429's Retry-After, for the next wait only
  for (;;) {
    // the interval (or a 429's longer Retry-After), never past the code's expiry (a server's interval of days, or one
    // longer than expires_in, ends the flow at the expiry instead of sleeping past it) nor setTimeout's limit (past it
    // Node waits 1 ms: a tight loop)
    await sleep(Math.min(Math.max(interval * 1000, askedMs), Math.max(0, deadline - now()), MAX_TIMER_MS));
    askedMs = 0;
    opts.signal?.throwIfAborted();
    if (now() >= deadline) {
      throw new OAuthError(`the code ${da.user_code} expired after ${da.expires_in} s without being approved`, { oauthError: 'expired_token' });
    }
    const reply = await postForm(
      url,
      { grant_type: DEVICE_CODE_GRANT, device_code: da.device_code, client_id: s.client_id, client_secret: s.client_secret },
      opts.signal,
    );
    if (reply.kind !== 'unreachable' && reply.status === 429) {
      // Too many requests: never the end of the flow. Its Retry-After (seconds or an HTTP date) is waited for, else
      // it is taken as slow_down, as is a body saying slow_down.
      const slowDown = reply.kind === 'json' && oauthErrorOf(reply.body)?.code === 'slow_down';
      if (reply.retryAfterMs === null || slowDown) interval += SLOW_DOWN_S;
      askedMs = reply.retryAfterMs ?? 0;
      continue;
    }
    const refused = reply.kind === 'json' ? oauthErrorOf(reply.body, [da.device_code, s.client_secret]) : null;
    if (refused === null && (reply.kind === 'unreachable' || reply.status >= 500)) {
      interval *= 2;
      continue;
    }
    if (refused !== null) {
      switch (refused.code) {
        case 'authorization_pending':
          continue;
        case 'slow_down':
          interval += SLOW_DOWN_S;
          continue;
        case 'access_denied':
          throw new OAuthError(`authorization was denied (${refused.text})`, { oauthError: refused.code });
        case 'expired_token':
          throw new OAuthError(`the code ${da.user_code} expired before it was approved (${refused.text})`, { oauthError: refused.code });
        default:
          throw new OAuthError(`token endpoint ${url} refused the device code (${refused.text})`, { oauthError: refused.code });
      }
    }
    if (reply.kind !== 'json' || reply.status < 200 || reply.status > 299) throw failure(reply, 'token endpoint', url);
    return tokensFrom(reply.body, now(), url);
  }
}
