// What an upstream failure means for routing: may a combo move on to its next member, does the connection cool
// down (and for how long at least), and did the provider say its quota is used up. Pure.
//
// | failure                                   | next member | cooldown                         |
// | ----------------------------------------- | ----------- | -------------------------------- |
// | connection error, timeout, stall (no byte) | yes         | exponential                      |
// | 5xx, 408                                   | yes         | exponential                      |
// | 429                                        | yes         | exponential, at least Retry-After |
// | 401, 403 (key or token refused)            | yes         | exponential                      |
// | 402, or a body saying the quota is used up | yes         | the longest (max_s)              |
// | any other 4xx (the request itself is bad)  | no          | none                             |

import type { TollgateError } from '../core/errors.js';
import { retryAfterMs } from './cooldown.js';

export interface UpstreamFailure {
  /** The HTTP status the client gets if this is the last failure. */
  readonly status: number;
  /** The upstream's error body, relayed as it came; null for a failure of the gateway's own (then `error`). */
  readonly body: string | null;
  /** Headers relayed with the body (content-type, retry-after). */
  readonly headers: Readonly<Record<string, string>>;
  readonly error: TollgateError | null;
  /** Another member may be tried. */
  readonly retryable: boolean;
  readonly cool: boolean;
  readonly quotaExhausted: boolean;
  readonly retryAfterMs: number | null;
  /** For the cooldown state and the row: the status or the error code. */
  readonly reason: string;
}

const QUOTA_WORDS = /insufficient_quota|quota_exhausted|quota exhausted|exceeded your current quota|billing_hard_limit/i;

export function httpFailure(status: number, headers: Readonly<Record<string, string>>, body: string): UpstreamFailure {
  const quotaExhausted = status === 402 || ((status === 429 || status === 403) && QUOTA_WORDS.test(body));
  const serverSide = status >= 500 || status === 408 || status === 429 || status === 401 || status === 403 || status === 402;
  return {
    status, body, headers, error: null, retryable: serverSide, cool: serverSide, quotaExhausted,
    retryAfterMs: retryAfterMs(headers), reason: quotaExhausted ? 'quota_exhausted' : String(status),
  };
}

export function errorFailure(e: TollgateError): UpstreamFailure {
  const upstream = e.code.startsWith('TOLLGATE_ERR_UPSTREAM_') || e.code === 'TOLLGATE_ERR_PROVIDER_AUTH' || e.code === 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED';
  // A parameter this member's format cannot carry (n > 1 to Anthropic...) is the member's limit, not the request's
  // fault: the next member may carry it. Nothing is wrong with the provider, so it does not cool.
  const memberLimit = e.code === 'TOLLGATE_ERR_NOT_SUPPORTED';
  return { status: e.status, body: null, headers: {}, error: e, retryable: upstream || memberLimit, cool: upstream, quotaExhausted: false, retryAfterMs: null, reason: e.code };
}
