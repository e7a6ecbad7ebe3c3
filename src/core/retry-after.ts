// An upstream's Retry-After (RFC 9110 §10.2.3), and the `retry-after-ms` some providers send: used by cooldowns
// (routing/cooldown.ts), the reported quota and the OAuth token endpoint (providers/oauth.ts).

/**
 * Parse `retry-after-ms`, or `retry-after` as seconds or an HTTP date, in ms; null when absent or not a finite wait
 * (400 digits read as Infinity). A huge finite wait is returned as said: each consumer bounds it (Cooldowns: max_s).
 */
export function retryAfterMs(headers: Readonly<Record<string, string | string[] | undefined>>, now = Date.now()): number | null {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const ms = Number(first(headers['retry-after-ms']));
  if (Number.isFinite(ms) && ms >= 0 && first(headers['retry-after-ms']) !== undefined) return ms;
  const ra = first(headers['retry-after']);
  if (ra === undefined || ra.trim() === '') return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(ra)) {
    const seconds = Number(ra) * 1000;
    return Number.isFinite(seconds) ? seconds : null;
  }
  const at = Date.parse(ra);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
