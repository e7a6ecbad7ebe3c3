// The quota entry's connection-problem flag (docs/quota.md, "Connection problems"): a provider at 0 % whose calls of
// the last 15 minutes all failed, and why, from the latest failure (quota.ts reads the recent calls).

import type { ProviderConfig } from '../config/types.js';
import type { RecentOutcomes } from '../store/quota-windows.js';

export interface ConnectionProblem {
  readonly reason: 'invalid_key' | 'oauth_reconnect' | 'provider_down' | 'unknown';
  readonly failures: number;
  readonly last_error: string;
}

/** At 0% with failing calls (and no success) in the last 15 minutes: say why, from the latest failure. */
export function connectionProblem(p: ProviderConfig, recent: RecentOutcomes | undefined): ConnectionProblem | null {
  if (recent === undefined || recent.failures === 0 || recent.successes > 0) return null;
  const e = recent.errorType;
  const status = recent.httpStatus;
  let reason: ConnectionProblem['reason'] = 'unknown';
  if (e === 'TOLLGATE_ERR_PROVIDER_AUTH' || (p.auth.type === 'oauth' && (status === 401 || status === 403))) reason = 'oauth_reconnect';
  else if (status === 401 || status === 403) reason = 'invalid_key';
  // the token endpoint failing (TOKEN_REFRESH_FAILED) is the provider down, not a connection to make again
  else if (status >= 500 || e.startsWith('TOLLGATE_ERR_UPSTREAM_') || e === 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED') reason = 'provider_down';
  return { reason, failures: recent.failures, last_error: e || String(status) };
}
