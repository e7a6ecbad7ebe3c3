// Local calendars in an IANA zone (src/core/tz.ts), the one module budgets, alerts and the hourly report use:
// days and months as UTC instants, daylight-saving days of 23 and 25 hours, a half-hour zone, and zone names.

import fc from 'fast-check';
import t from 'tap';
import { dayBounds, localDate, localDay, localHours, localTime, monthBounds, parseTimeZone, timeZoneAsNamed, UTC_NAMES } from '../../src/core/tz.js';

const H = 3_600_000;

t.test('days: UTC, a half-hour zone, and both daylight-saving changes', async (t) => {
  t.same(dayBounds(Date.UTC(2026, 10, 21, 12), 'UTC'), { from: Date.UTC(2026, 10, 21), to: Date.UTC(2026, 10, 22), date: '2026-11-21' });
  // Kolkata is +05:30: its 2026-11-21 runs from 2026-11-20T18:30Z.
  t.same(dayBounds(Date.UTC(2026, 10, 20, 20), 'Asia/Kolkata'), { from: Date.UTC(2026, 10, 20, 18, 30), to: Date.UTC(2026, 10, 21, 18, 30), date: '2026-11-21' });
  // Paris: 2026-03-29 has 23 hours (clocks go forward), 2026-10-25 has 25 (they go back).
  const spring = dayBounds(Date.UTC(2026, 2, 29, 12), 'Europe/Paris');
  t.same([spring.from, spring.to - spring.from], [Date.UTC(2026, 2, 28, 23), 23 * H]);
  const autumn = dayBounds(Date.UTC(2026, 9, 25, 12), 'Europe/Paris');
  t.same([autumn.from, autumn.to - autumn.from], [Date.UTC(2026, 9, 24, 22), 25 * H]);
});

t.test('months: bounds, length and the day of the month, across a year end and in a zone ahead of UTC', async (t) => {
  t.same(monthBounds(Date.UTC(2028, 1, 29, 12), 'UTC'), { from: Date.UTC(2028, 1, 1), to: Date.UTC(2028, 2, 1), month: '2028-02', days: 29, dayOfMonth: 29 });
  // 2026-12-31T20:00Z is already 2027-01-01 05:00 in Tokyo (+09:00).
  t.same(monthBounds(Date.UTC(2026, 11, 31, 20), 'Asia/Tokyo'), { from: Date.UTC(2026, 11, 31, 15), to: Date.UTC(2027, 0, 31, 15), month: '2027-01', days: 31, dayOfMonth: 1 });
  const dec = monthBounds(Date.UTC(2026, 11, 15), 'UTC');
  t.same([dec.from, dec.to, dec.days], [Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1), 31]);
});

t.test('zone names: canonical when known, null otherwise', async (t) => {
  t.equal(parseTimeZone('UTC'), 'UTC');
  t.equal(parseTimeZone('Europe/Paris'), 'Europe/Paris');
  t.equal(parseTimeZone('Mars/Olympus'), null);
  t.equal(parseTimeZone('../etc/passwd'), null);
});

t.test('zone names as named: the name given, in the canonical spelling when it is the canonical name', async (t) => {
  t.same(['Asia/Kolkata', 'asia/kolkata', 'Asia/Calcutta', 'europe/PARIS', 'utc', 'Etc/UTC', 'Mars/Olympus'].map(timeZoneAsNamed),
    ['Asia/Kolkata', 'asia/kolkata', 'Asia/Calcutta', 'Europe/Paris', 'UTC', 'Etc/UTC', null]);
  t.equal(parseTimeZone('asia/kolkata'), 'Asia/Calcutta', 'and the name to query with: the canonical one');
});

t.test('a local day asked again is the same answer (kept), and a copy the caller may change', async (t) => {
  const a = dayBounds(Date.UTC(2026, 2, 29, 12), 'Europe/Paris');
  const b = dayBounds(Date.UTC(2026, 2, 29, 20), 'Europe/Paris');
  t.same(b, a, 'the same day');
  t.equal(a.to - a.from, 23 * 3_600_000, 'the spring-forward day is 23 hours');
  (a as { from: number }).from = 0;
  t.same(dayBounds(Date.UTC(2026, 2, 29, 12), 'Europe/Paris').from, Date.UTC(2026, 2, 28, 23), 'changing an answer does not change the kept one');
  const month = monthBounds(Date.UTC(2026, 2, 15), 'Europe/Paris');
  t.equal(month.from, Date.UTC(2026, 1, 28, 23));
  t.equal(month.to, Date.UTC(2026, 2, 31, 22));
});

// What Intl says the local time is: the zone rules' reference, computed here without tz.ts.
function intlLocalTime(tz: string, ms: number): { date: string; hour: number; offsetMin: number } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(new Date(ms)).map((p) => [p.type, p.value]),
  );
  const asUtc = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return { date: `${parts.year}-${parts.month}-${parts.day}`, hour: Number(parts.hour), offsetMin: Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000) };
}

t.test('UTC and its aliases: every name Intl resolves to UTC, in any case, and the same local times as Intl', async (t) => {
  const names = ['UTC', ...UTC_NAMES, ...[...UTC_NAMES].map((n) => n.toUpperCase()), 'Etc/Zulu', 'Gmt0'];
  for (const n of names) {
    t.equal(new Intl.DateTimeFormat('en-US', { timeZone: n }).resolvedOptions().timeZone, 'UTC', `Intl resolves ${n} to UTC`);
    t.equal(parseTimeZone(n), 'UTC', n);
  }
  t.equal(parseTimeZone('Etc/GMT+1'), 'Etc/GMT+1', 'a fixed offset that is not UTC goes to Intl');
  t.same(localTime('Etc/GMT+1', Date.UTC(2026, 10, 21, 0, 30)), { date: '2026-11-20', hour: 23, offsetMin: -60 });
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2200, 0, 1) }), (tz, ms) =>
        JSON.stringify(localTime(tz, ms)) === JSON.stringify(intlLocalTime(tz, ms))),
      { numRuns: 2000 },
    ), 'the same date, hour and offset as Intl at 2000 instants from 1970 to 2200');
  t.same(localHours('utc', Date.UTC(2026, 10, 21, 22), Date.UTC(2026, 10, 22, 1)).map((h) => [h.hour, h.to - h.from, h.offsetMin]), [[22, H, 0], [23, H, 0], [0, H, 0]]);
});

t.test('UTC never builds an Intl formatter (its first one maps ICU data into the process)', async (t) => {
  // A fresh copy of the module: the tests above have filled this one's formatters.
  const tz = (await import(new URL('../../src/core/tz.ts?no-intl', import.meta.url).href)) as typeof import('../../src/core/tz.js');
  const Real = Intl.DateTimeFormat;
  let built = 0;
  Intl.DateTimeFormat = new Proxy(Real, { construct: (target, args) => { built++; return Reflect.construct(target, args); } });
  t.teardown(() => { Intl.DateTimeFormat = Real; });
  const now = Date.UTC(2026, 10, 21, 13, 7);
  t.same(tz.dayBounds(now, 'UTC'), { from: Date.UTC(2026, 10, 21), to: Date.UTC(2026, 10, 22), date: '2026-11-21' });
  t.same(tz.monthBounds(now, 'Etc/UTC').days, 30);
  t.equal(tz.localHours('UTC', Date.UTC(2026, 10, 21), Date.UTC(2026, 10, 22)).length, 24);
  t.equal(tz.parseTimeZone('GMT'), 'UTC');
  t.equal(built, 0, 'no formatter for UTC');
  t.same(tz.dayBounds(now, 'Asia/Kolkata').from, Date.UTC(2026, 10, 20, 18, 30));
  t.ok(built > 0, 'a zone off UTC still goes to Intl (the count sees it)');
});

t.test('the last day of the year 9999 ends: the next day is the year 10000, after it in order (not before, as text)', async (t) => {
  // Before, the walk compared dates as text: "10000-01-01" < "9999-12-31", so it never found the day's end and
  // GET /api/usage/hourly?date=9999-12-31 held the process at 100 % CPU for good (any key could ask it).
  for (const tz of ['UTC', 'Europe/Paris', 'Pacific/Kiritimati', 'America/Los_Angeles']) {
    const day = localDay(tz, '9999-12-31');
    t.equal(day.to - day.from, 24 * 3_600_000, `${tz}: 24 hours`);
    t.equal(localDate(tz, day.from), '9999-12-31', `${tz}: starts on the day`);
    t.equal(localDate(tz, day.to), '10000-01-01', `${tz}: ends when the year 10000 begins`);
  }
});
