// Calendar boundaries in an IANA time zone (budgets.timezone), as UTC instants. Pure; Intl does the zone rules, so
// daylight-saving days are 23 or 25 hours long as they really are.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    formatters.set(tz, f);
  }
  return f;
}

/** Is `tz` a time zone this runtime knows? */
export function isTimeZone(tz: string): boolean {
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

export interface LocalParts {
  readonly year: number;
  readonly month: number; // 1-12
  readonly day: number;
  readonly hour: number;
}

export function localParts(ms: number, tz: string): LocalParts & { minute: number; second: number } {
  const p = Object.fromEntries(formatter(tz).formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return { year: Number(p.year), month: Number(p.month), day: Number(p.day), hour: Number(p.hour), minute: Number(p.minute), second: Number(p.second) };
}

/** The zone's offset from UTC at `ms`, in ms (east positive). */
function offsetAt(ms: number, tz: string): number {
  const p = localParts(ms, tz);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The UTC instant of local wall time year-month-day 00:00 in `tz` (month 1-12; day may overflow, like Date.UTC). */
export function localMidnight(year: number, month: number, day: number, tz: string): number {
  const wall = Date.UTC(year, month - 1, day);
  let guess = wall - offsetAt(wall, tz);
  guess = wall - offsetAt(guess, tz); // once more: the offset at the instant itself (a DST change near midnight)
  return guess;
}

/** Start of the local day containing `ms`, and of the next one. */
export function dayBounds(ms: number, tz: string): { from: number; to: number; date: string } {
  const p = localParts(ms, tz);
  return { from: localMidnight(p.year, p.month, p.day, tz), to: localMidnight(p.year, p.month, p.day + 1, tz), date: ymd(p.year, p.month, p.day) };
}

/** Start of the local month containing `ms`, of the next one, its length in days and the day of month. */
export function monthBounds(ms: number, tz: string): { from: number; to: number; month: string; days: number; dayOfMonth: number } {
  const p = localParts(ms, tz);
  const days = new Date(Date.UTC(p.year, p.month, 0)).getUTCDate();
  return { from: localMidnight(p.year, p.month, 1, tz), to: localMidnight(p.year, p.month + 1, 1, tz), month: ymd(p.year, p.month).slice(0, 7), days, dayOfMonth: p.day };
}

function ymd(y: number, m: number, d = 1): string {
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}
