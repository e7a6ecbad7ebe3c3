// An upstream's Retry-After (RFC 9110 §10.2.3), and the `retry-after-ms` some providers send: used by cooldowns
// (routing/cooldown.ts), the reported quota and the OAuth token endpoint (providers/oauth.ts).

/**
 * Parse `retry-after-ms`, or `retry-after` as seconds or an HTTP date, in ms; null when absent or not a finite wait
 * (400 digits read as Infinity), or neither seconds nor an HTTP date (`-5`, `+5`, `1,5`: V8's Date.parse read those as
 * dates in 2001, a wait of 0). A huge finite wait is returned as said: each consumer bounds it (Cooldowns: max_s).
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
  const at = httpDate(ra.trim(), now);
  return at === null ? null : Math.max(0, at - now);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const DAY_LONG = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{1,2}):(\\d{2}):(\\d{2})';
/**
 * The three forms of RFC 9110 §5.6.7, each giving day, month, year, hours, minutes, seconds in that order. The
 * IMF-fixdate is read as RFC 9110 asks a recipient to be robust: what servers and proxies send beside the exact form
 * (a one-digit day, no day name, runs of spaces, no comma, `UTC` or a numeric zone such as `+0000` for `GMT`, or no
 * zone: GMT) is the date it says; a zone other than GMT moves it (`+0100`: an hour earlier in GMT).
 */
const IMF_FIXDATE = new RegExp(`^(?:${DAY},?\\s+)?(\\d{1,2})\\s+${MONTH}\\s+(\\d{4})\\s+${TIME}(?:\\s*(GMT|UTC|UT|Z|[+-]\\d{4}))?$`, 'i');
const RFC850_DATE = new RegExp(`^${DAY_LONG}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`, 'i');
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} (\\d{2}| \\d) ${TIME} (\\d{4})$`, 'i');

/**
 * An HTTP-date (IMF-fixdate, or the obsolete rfc850 and asctime forms) in ms since the epoch; null for any other
 * text, or a date that does not exist (31 Feb). An rfc850 two-digit year more than 50 years ahead of `now` is the
 * latest past year with those digits (RFC 9110 §5.6.7).
 */
function httpDate(text: string, now = Date.now()): number | null {
  let parts: { day: string; month: string; year: number; time: string[]; zone?: string } | null = null;
  let m = IMF_FIXDATE.exec(text);
  if (m !== null) parts = { day: m[1]!, month: m[2]!, year: Number(m[3]), time: m.slice(4, 7), ...(m[7] === undefined ? {} : { zone: m[7] }) };
  else if ((m = RFC850_DATE.exec(text)) !== null) {
    const thisYear = new Date(now).getUTCFullYear();
    let year = thisYear - (thisYear % 100) + Number(m[3]);
    if (year > thisYear + 50) year -= 100;
    parts = { day: m[1]!, month: m[2]!, year, time: m.slice(4, 7) };
  } else if ((m = ASCTIME_DATE.exec(text)) !== null) parts = { day: m[2]!, month: m[1]!, year: Number(m[6]), time: m.slice(3, 6) };
  if (parts === null) return null;
  const [hours, minutes, seconds] = parts.time.map(Number) as [number, number, number];
  const month = MONTHS.indexOf(parts.month.toLowerCase());
  const day = Number(parts.day);
  if (hours > 23 || minutes > 59 || seconds > 60) return null; // 60: a leap second
  const at = new Date(0);
  at.setUTCFullYear(parts.year, month, day);
  at.setUTCHours(hours, minutes, 0, 0);
  if (at.getUTCDate() !== day || at.getUTCMonth() !== month) return null;
  const zone = parts.zone !== undefined && /^[+-]\d{4}$/.test(parts.zone) ? parts.zone : null;
  // A numeric zone is a real offset or no date: hours up to 14 (the widest in use), minutes under 60 (`+9999` is none).
  if (zone !== null && (Number(zone.slice(1, 3)) > 14 || Number(zone.slice(3)) > 59)) return null;
  const offsetMs = zone === null ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(3))) * 60_000;
  return at.getTime() + seconds * 1000 - offsetMs;
}
