// Time math for quota windows and resets. Pure: every function takes `now` and returns epoch milliseconds.
//
// All boundaries are fixed instants in UTC. A daily reset time carries an explicit UTC offset ('10:00+08:00',
// '00:00Z', '23:30-05:30') and no time zone, so there is no daylight saving: the reset is the same UTC minute of
// every day. A period is half-open, [last reset, next reset): at exactly the reset instant the new period has begun.

export const SECOND_MS = 1000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;

/** 1970-01-05 was a Monday: the first Monday 00:00 UTC after the epoch. */
const FIRST_MONDAY_MS = 4 * DAY_MS;
const WINDOW_UNIT_MS = { s: SECOND_MS, m: MINUTE_MS, h: HOUR_MS, d: DAY_MS } as const;

/** Euclidean floor of `ms` to a multiple of `step` counted from `origin` (correct before the epoch too). */
function floorTo(ms: number, step: number, origin: number): number {
  return Math.floor((ms - origin) / step) * step + origin;
}

/** A daily reset time: local minute of the day, the offset of that local time from UTC, and the UTC minute. */
export interface ResetTime {
  /** Minutes after local midnight, 0..1439. */
  readonly localMinute: number;
  /** Local time minus UTC, in minutes: +480 for '+08:00', 0 for 'Z', -330 for '-05:30'. */
  readonly offsetMinutes: number;
  /** The same instant as minutes after UTC midnight, 0..1439. */
  readonly utcMinute: number;
}

const RESET_TIME = /^(\d{2}):(\d{2})(?:Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * `HH:MM` with `Z` or `±HH:MM`: '10:00+08:00' (UTC 02:00), '00:00Z', '23:30-05:30' (UTC 05:00).
 * Hours 00..23, minutes 00..59, an offset of at most 14:00 either way; anything else is a RangeError.
 */
export function parseResetTime(s: string): ResetTime {
  const m = RESET_TIME.exec(s);
  if (!m) throw new RangeError(`not a reset time: '${s}' (expected HH:MM followed by Z or ±HH:MM)`);
  const [h, min] = [Number(m[1]), Number(m[2])];
  const [oh, om] = [Number(m[4] ?? 0), Number(m[5] ?? 0)];
  if (h > 23 || min > 59 || om > 59 || oh * 60 + om > 14 * 60) {
    throw new RangeError(`not a reset time: '${s}' (hours 00-23, minutes 00-59, offset within ±14:00)`);
  }
  const localMinute = h * 60 + min;
  const offsetMinutes = (m[3] === '-' ? -1 : 1) * (oh * 60 + om);
  const utcMinute = (((localMinute - offsetMinutes) % 1440) + 1440) % 1440;
  return { localMinute, offsetMinutes, utcMinute };
}

/** The latest daily reset at or before `now`. */
export function lastDailyReset(now: number, time: string): number {
  return floorTo(now, DAY_MS, parseResetTime(time).utcMinute * MINUTE_MS);
}

/** The first daily reset after `now` (strictly later: at a reset instant, the one a day on). */
export function nextDailyReset(now: number, time: string): number {
  return lastDailyReset(now, time) + DAY_MS;
}

/** The latest Monday 00:00 UTC at or before `now`. */
export function lastMonday(now: number): number {
  return floorTo(now, WEEK_MS, FIRST_MONDAY_MS);
}

/** The first Monday 00:00 UTC after `now`. */
export function nextMonday(now: number): number {
  return lastMonday(now) + WEEK_MS;
}

/** The 1st of `now`'s UTC month, 00:00 UTC. */
export function monthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The 1st of the next UTC month, 00:00 UTC. */
export function nextMonthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** Days in a month; `month0` is 0-based and may run past 11 or below 0 (Date.UTC normalises it). */
export function daysInMonth(year: number, month0: number): number {
  return new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
}

/** 00:00 UTC of the anchor day in a month, clamped to the month's last day (31 -> 30 Apr, 28 or 29 Feb). */
function anchorIn(year: number, month0: number, anchorDay: number): number {
  return Date.UTC(year, month0, Math.min(anchorDay, daysInMonth(year, month0)));
}

function checkAnchorDay(anchorDay: number): void {
  if (!Number.isInteger(anchorDay) || anchorDay < 1 || anchorDay > 31) {
    throw new RangeError(`not an anchor day: ${anchorDay} (expected an integer 1-31)`);
  }
}

/** The latest monthly reset on `anchorDay` (1..31, clamped to each month's length) at or before `now`. */
export function anchorReset(now: number, anchorDay: number): number {
  checkAnchorDay(anchorDay);
  const d = new Date(now);
  const [y, m] = [d.getUTCFullYear(), d.getUTCMonth()];
  const here = anchorIn(y, m, anchorDay);
  return here <= now ? here : anchorIn(y, m - 1, anchorDay);
}

/** The first monthly reset on `anchorDay` after `now`. */
export function nextAnchorReset(now: number, anchorDay: number): number {
  checkAnchorDay(anchorDay);
  const d = new Date(now);
  const [y, m] = [d.getUTCFullYear(), d.getUTCMonth()];
  const here = anchorIn(y, m, anchorDay);
  return here > now ? here : anchorIn(y, m + 1, anchorDay);
}

/** A window length '30s', '90m', '5h', '7d' in milliseconds; zero or any other shape is a RangeError. */
export function parseWindow(s: string): number {
  const m = /^(\d+)([smhd])$/.exec(s);
  if (!m) throw new RangeError(`not a window: '${s}' (expected a number followed by s, m, h or d)`);
  const ms = Number(m[1]) * WINDOW_UNIT_MS[m[2] as keyof typeof WINDOW_UNIT_MS];
  if (ms <= 0) throw new RangeError(`not a window: '${s}' (must be longer than zero)`);
  return ms;
}
