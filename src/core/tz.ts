// Local calendar days, months and hours in an IANA time zone, as UTC instants (pure; Intl does the zone rules): the
// one module the budgets, the alert evaluator and the hourly report take their local calendars from. A local day
// is 24 hours long except on daylight-saving days (23 or 25); a local hour need not start on a UTC hour (+05:30).
// Every offset in use is a multiple of 15 minutes, and zone transitions happen on that grid, so walking it finds
// every local midnight and hour boundary.
//
// UTC, the default zone, and its aliases are answered without Intl: the first zoned Intl.DateTimeFormat of a process
// maps about 5 MiB of ICU's zone and locale data from the node binary (resident from then on) and takes about 18 ms.
// A gateway whose budgets keep UTC never pays either (docs/benchmarks.md, "What the footprint is made of").

const Q = 15 * 60_000;
const formats = new Map<string, Intl.DateTimeFormat>();

function format(tz: string): Intl.DateTimeFormat {
  let f = formats.get(tz);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formats.set(tz, f);
  }
  return f;
}

/** The names Intl resolves to UTC, lower-cased (Intl takes zone names in any case); test/core/tz.test.ts checks them. */
export const UTC_NAMES: ReadonlySet<string> = new Set([
  'utc', 'etc/utc', 'uct', 'etc/uct', 'gmt', 'etc/gmt', 'gmt0', 'etc/gmt0', 'gmt+0', 'etc/gmt+0', 'gmt-0', 'etc/gmt-0',
  'greenwich', 'etc/greenwich', 'universal', 'etc/universal', 'zulu', 'etc/zulu',
]);

const isUtc = (tz: string): boolean => tz === 'UTC' || UTC_NAMES.has(tz.toLowerCase());

/** A valid IANA time zone name (as Intl knows it, canonicalised), or null. */
export function parseTimeZone(s: string): string | null {
  if (isUtc(s)) return 'UTC';
  if (!/^[A-Za-z0-9_+\-/]{1,64}$/.test(s)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: s }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/**
 * A valid IANA time zone name as it was given, to echo to whoever named it, or null: `Asia/Kolkata` stays
 * `Asia/Kolkata` (parseTimeZone gives ICU's canonical `Asia/Calcutta`); a name that is the canonical one in another
 * case takes its spelling (`europe/paris` is `Europe/Paris`), any other is echoed in the case given. Compute and query
 * with either: Intl takes any case, and the store hands ClickHouse parseTimeZone's name (which takes none but its own).
 */
export function timeZoneAsNamed(s: string): string | null {
  const zone = parseTimeZone(s);
  if (zone === null) return null;
  return zone.toLowerCase() === s.toLowerCase() ? zone : s;
}

const ymd = (y: number, mo: number, d: number): string =>
  `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}`;

export interface LocalTime {
  /** `YYYY-MM-DD` */
  readonly date: string;
  readonly hour: number;
  /** Minutes east of UTC. */
  readonly offsetMin: number;
}

export function localTime(tz: string, ms: number): LocalTime {
  if (isUtc(tz)) {
    const d = new Date(ms);
    return { date: ymd(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()), hour: d.getUTCHours(), offsetMin: 0 };
  }
  const parts: Record<string, string> = {};
  for (const p of format(tz).formatToParts(new Date(ms))) parts[p.type] = p.value;
  const y = Number(parts.year);
  const mo = Number(parts.month);
  const d = Number(parts.day);
  const h = Number(parts.hour);
  const asUtc = Date.UTC(y, mo - 1, d, h, Number(parts.minute), Number(parts.second));
  return { date: ymd(y, mo, d), hour: h, offsetMin: Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000) };
}

/** `+01:00`, `-03:30`, `+00:00`. */
export function offsetLabel(min: number): string {
  const a = Math.abs(min);
  return `${min < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

/** The local calendar date at `ms`. */
export function localDate(tz: string, ms: number): string {
  return localTime(tz, ms).date;
}

/** localDay's answers, by zone and date (a pure function, asked every second by the budget and the evaluator). */
const days = new Map<string, { readonly from: number; readonly to: number }>();
const DAYS_KEPT = 512;

/** [start, end) of the local day `date` (YYYY-MM-DD), in epoch ms. */
export function localDay(tz: string, date: string): { from: number; to: number } {
  const key = `${tz} ${date}`;
  const known = days.get(key);
  if (known !== undefined) return { from: known.from, to: known.to };
  const day = walkDay(tz, date);
  if (days.size >= DAYS_KEPT) days.clear();
  days.set(key, day);
  return { from: day.from, to: day.to };
}

/** Calendar dates in order: by length first, so that the year 10000 (`10000-01-01`) comes after `9999-12-31`. */
function dateOrder(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}

/** The most 15-minute steps a walk takes: the local day starts within 17 hours of where it begins, and lasts at most 25. */
const MAX_STEPS = 4 * 48;

function walkDay(tz: string, date: string): { from: number; to: number } {
  const noon = Date.parse(`${date}T12:00:00Z`);
  // Offsets lie within -12:00..+14:00: the local day starts between noon-26h and noon-10h UTC (the walk starts an hour earlier), and ends a day later.
  const first = (lo: number, want: (order: number) => boolean): number => {
    let t = Math.floor(lo / Q) * Q;
    for (let steps = 0; !want(dateOrder(localDate(tz, t), date)); steps++) {
      // Never a loop without end: a date the walk cannot reach (a bug) is an error, not a process at 100 % CPU.
      if (steps > MAX_STEPS) throw new Error(`the local day ${date} in ${tz} was not found`);
      t += Q;
    }
    return t;
  };
  const from = first(noon - 27 * 3_600_000, (order) => order >= 0);
  const to = first(from + 20 * 3_600_000, (order) => order > 0);
  return { from, to };
}

export interface LocalHour {
  readonly from: number;
  readonly to: number;
  /** Local hour of day, 0-23 (twice on the day clocks go back). */
  readonly hour: number;
  readonly offsetMin: number;
}

/** The local hours of [from, to): runs of equal local hour and offset on the 15-minute grid. */
export function localHours(tz: string, from: number, to: number): LocalHour[] {
  const out: LocalHour[] = [];
  let cur: { from: number; hour: number; offsetMin: number } | null = null;
  for (let t = from; t < to; t += Q) {
    const l = localTime(tz, t);
    if (cur === null || l.hour !== cur.hour || l.offsetMin !== cur.offsetMin) {
      if (cur !== null) out.push({ ...cur, to: t });
      cur = { from: t, hour: l.hour, offsetMin: l.offsetMin };
    }
  }
  if (cur !== null) out.push({ ...cur, to });
  return out;
}

/** The local day containing `ms`: [from, to) and its date. */
export function dayBounds(ms: number, tz: string): { from: number; to: number; date: string } {
  const date = localDate(tz, ms);
  return { ...localDay(tz, date), date };
}

/** The local month containing `ms`: [from, to), `YYYY-MM`, its length in days and the day of the month. */
export function monthBounds(ms: number, tz: string): { from: number; to: number; month: string; days: number; dayOfMonth: number } {
  const date = localDate(tz, ms);
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
  const next = m === 12 ? `${String(y + 1).padStart(4, '0')}-01-01` : `${String(y).padStart(4, '0')}-${String(m + 1).padStart(2, '0')}-01`;
  return { from: localDay(tz, `${date.slice(0, 7)}-01`).from, to: localDay(tz, next).from, month: date.slice(0, 7), days, dayOfMonth: d };
}
