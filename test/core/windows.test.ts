// Quota time math: reset times with explicit UTC offsets, daily resets, Mondays, calendar months, anchor days
// clamped to the month's length, and window lengths. Every expected instant is worked out by hand in a comment.

import t from 'tap';
import {
  DAY_MS, anchorReset, daysInMonth, lastDailyReset, lastMonday, monthStart, nextAnchorReset, nextDailyReset,
  nextMonday, nextMonthStart, parseResetTime, parseWindow,
} from '../../src/core/windows.js';

const U = (iso: string) => Date.parse(iso);
const I = (ms: number) => new Date(ms).toISOString();

t.test('parseResetTime: local minute, offset and the UTC minute', async (t) => {
  t.strictSame(parseResetTime('10:00+08:00'), { localMinute: 600, offsetMinutes: 480, utcMinute: 120 }, '10:00 at UTC+8 is 02:00Z');
  t.strictSame(parseResetTime('00:00Z'), { localMinute: 0, offsetMinutes: 0, utcMinute: 0 });
  // 23:30 at UTC-5:30 is 23:30 + 5:30 = 29:00 = 05:00Z the next day.
  t.strictSame(parseResetTime('23:30-05:30'), { localMinute: 1410, offsetMinutes: -330, utcMinute: 300 });
  // 02:00 at UTC+8 is 02:00 - 8:00 = -6:00 = 18:00Z the previous day.
  t.strictSame(parseResetTime('02:00+08:00'), { localMinute: 120, offsetMinutes: 480, utcMinute: 1080 });
  t.strictSame(parseResetTime('00:00+14:00'), { localMinute: 0, offsetMinutes: 840, utcMinute: 600 }, '10:00Z the day before');
  t.strictSame(parseResetTime('12:00-12:00'), { localMinute: 720, offsetMinutes: -720, utcMinute: 0 }, '00:00Z the day after');
  t.strictSame(parseResetTime('00:00+00:00'), parseResetTime('00:00Z'));
  for (const bad of ['24:00Z', '10:60Z', '10:00', '10:00+15:00', '10:00+14:01', '10:00+08:60', '1:00Z', '10:00+0800', '10:00z', '']) {
    t.throws(() => parseResetTime(bad), RangeError, `rejects '${bad}'`);
  }
});

t.test('daily resets with the default +08:00 offset: 01:59Z vs 02:00Z', async (t) => {
  const time = '10:00+08:00'; // 02:00Z every day
  t.equal(I(lastDailyReset(U('2024-05-15T01:59:59.999Z'), time)), '2024-05-14T02:00:00.000Z');
  t.equal(I(nextDailyReset(U('2024-05-15T01:59:59.999Z'), time)), '2024-05-15T02:00:00.000Z');
  t.equal(I(lastDailyReset(U('2024-05-15T02:00:00.000Z'), time)), '2024-05-15T02:00:00.000Z', 'the reset instant starts the new day');
  t.equal(I(nextDailyReset(U('2024-05-15T02:00:00.000Z'), time)), '2024-05-16T02:00:00.000Z');
});

t.test('daily resets whose UTC instant falls on another date than the local one', async (t) => {
  // 02:00+08:00 = 18:00Z the previous UTC day. 2024-05-15T17:59Z is 05-16 01:59 local: the last local 02:00 was
  // 05-15 02:00 local = 05-14T18:00Z.
  t.equal(I(lastDailyReset(U('2024-05-15T17:59:00.000Z'), '02:00+08:00')), '2024-05-14T18:00:00.000Z');
  t.equal(I(nextDailyReset(U('2024-05-15T17:59:00.000Z'), '02:00+08:00')), '2024-05-15T18:00:00.000Z');
  t.equal(I(lastDailyReset(U('2024-05-15T18:00:00.000Z'), '02:00+08:00')), '2024-05-15T18:00:00.000Z');
  // 23:30-05:30 = 05:00Z the next UTC day.
  t.equal(I(lastDailyReset(U('2024-05-15T04:59:59.999Z'), '23:30-05:30')), '2024-05-14T05:00:00.000Z');
  t.equal(I(lastDailyReset(U('2024-05-15T05:00:00.000Z'), '23:30-05:30')), '2024-05-15T05:00:00.000Z');
});

t.test('daily resets across month ends, year ends and leap days', async (t) => {
  // 2024 is a leap year: the day before 2024-03-01 is 02-29.
  t.equal(I(lastDailyReset(U('2024-03-01T01:00:00.000Z'), '10:00+08:00')), '2024-02-29T02:00:00.000Z');
  t.equal(I(nextDailyReset(U('2024-03-01T01:00:00.000Z'), '10:00+08:00')), '2024-03-01T02:00:00.000Z');
  t.equal(I(lastDailyReset(U('2024-12-31T23:59:59.999Z'), '00:00Z')), '2024-12-31T00:00:00.000Z');
  t.equal(I(nextDailyReset(U('2024-12-31T23:59:59.999Z'), '00:00Z')), '2025-01-01T00:00:00.000Z');
  t.equal(I(lastDailyReset(U('2025-01-01T01:00:00.000Z'), '10:00+08:00')), '2024-12-31T02:00:00.000Z');
  t.equal(I(lastDailyReset(U('2028-02-29T12:00:00.000Z'), '00:00Z')), '2028-02-29T00:00:00.000Z');
  t.equal(I(nextDailyReset(U('2028-02-29T12:00:00.000Z'), '00:00Z')), '2028-03-01T00:00:00.000Z');
  t.equal(I(lastDailyReset(U('2028-02-29T04:59:00.000Z'), '23:30-05:30')), '2028-02-28T05:00:00.000Z');
  t.equal(I(nextDailyReset(U('2028-02-29T04:59:00.000Z'), '23:30-05:30')), '2028-02-29T05:00:00.000Z');
});

t.test('daily resets: every minute of a day lies in [last, next) and next - last is one day', async (t) => {
  let bad = 0;
  for (const time of ['10:00+08:00', '00:00Z', '23:30-05:30', '02:00+08:00']) {
    for (let now = U('2028-02-28T00:00:00.000Z'); now < U('2028-03-02T00:00:00.000Z'); now += 60_000) {
      const [last, next] = [lastDailyReset(now, time), nextDailyReset(now, time)];
      if (!(last <= now && now < next && next - last === DAY_MS)) bad++;
    }
  }
  t.equal(bad, 0);
});

t.test('Mondays 00:00 UTC', async (t) => {
  // 2024-05-13 and 2024-05-20 are Mondays.
  t.equal(I(lastMonday(U('2024-05-20T00:00:00.000Z'))), '2024-05-20T00:00:00.000Z', 'Monday 00:00:00.000 is its own last Monday');
  t.equal(I(nextMonday(U('2024-05-20T00:00:00.000Z'))), '2024-05-27T00:00:00.000Z');
  t.equal(I(lastMonday(U('2024-05-19T23:59:00.000Z'))), '2024-05-13T00:00:00.000Z', 'Sunday 23:59 is still the old week');
  t.equal(I(nextMonday(U('2024-05-19T23:59:00.000Z'))), '2024-05-20T00:00:00.000Z');
  t.equal(I(lastMonday(U('2024-05-19T23:59:59.999Z'))), '2024-05-13T00:00:00.000Z');
  for (let d = 0; d < 7; d++) {
    const now = U('2024-05-13T13:00:00.000Z') + d * DAY_MS;
    t.equal(I(lastMonday(now)), '2024-05-13T00:00:00.000Z', `day ${d} of the week`);
  }
  // 2025-01-01 is a Wednesday: the week began on Monday 2024-12-30.
  t.equal(I(lastMonday(U('2025-01-01T08:00:00.000Z'))), '2024-12-30T00:00:00.000Z');
  t.equal(I(nextMonday(U('2025-01-01T08:00:00.000Z'))), '2025-01-06T00:00:00.000Z');
  // 2028-02-29 is a Tuesday.
  t.equal(I(lastMonday(U('2028-02-29T12:00:00.000Z'))), '2028-02-28T00:00:00.000Z');
  t.equal(I(nextMonday(U('2028-02-29T12:00:00.000Z'))), '2028-03-06T00:00:00.000Z');
  // Before the epoch (floor, not truncation): 1969-12-31 was a Wednesday, its Monday 1969-12-29.
  t.equal(I(lastMonday(U('1969-12-31T12:00:00.000Z'))), '1969-12-29T00:00:00.000Z');
});

t.test('calendar months', async (t) => {
  t.equal(I(monthStart(U('2024-12-31T23:59:59.999Z'))), '2024-12-01T00:00:00.000Z');
  t.equal(I(nextMonthStart(U('2024-12-31T23:59:59.999Z'))), '2025-01-01T00:00:00.000Z', 'across the year end');
  t.equal(I(monthStart(U('2028-02-29T23:59:00.000Z'))), '2028-02-01T00:00:00.000Z');
  t.equal(I(nextMonthStart(U('2028-02-29T23:59:00.000Z'))), '2028-03-01T00:00:00.000Z');
  t.equal(I(monthStart(U('2024-03-01T00:00:00.000Z'))), '2024-03-01T00:00:00.000Z', 'the 1st at 00:00 starts the month');
  t.equal(I(nextMonthStart(U('2024-03-01T00:00:00.000Z'))), '2024-04-01T00:00:00.000Z');
  t.strictSame(
    [daysInMonth(2028, 1), daysInMonth(2027, 1), daysInMonth(2000, 1), daysInMonth(2100, 1), daysInMonth(2024, 3), daysInMonth(2024, 11)],
    [29, 28, 29, 28, 30, 31],
    'leap years: 2028 and 2000 yes, 2027 and 2100 no; April 30, December 31',
  );
});

t.test('anchor days, clamped to the month length', async (t) => {
  const at = (now: string, day: number) => [I(anchorReset(U(now), day)), I(nextAnchorReset(U(now), day))];
  // Day 31: April has 30 days, so April resets on the 30th; March's reset was the 31st.
  t.strictSame(at('2024-04-15T00:00:00.000Z', 31), ['2024-03-31T00:00:00.000Z', '2024-04-30T00:00:00.000Z']);
  t.strictSame(at('2024-04-29T23:59:59.999Z', 31), ['2024-03-31T00:00:00.000Z', '2024-04-30T00:00:00.000Z']);
  t.strictSame(at('2024-04-30T00:00:00.000Z', 31), ['2024-04-30T00:00:00.000Z', '2024-05-31T00:00:00.000Z'], 'the reset instant starts the period');
  t.strictSame(at('2024-12-31T00:00:00.000Z', 31), ['2024-12-31T00:00:00.000Z', '2025-01-31T00:00:00.000Z'], 'across the year end');
  // Day 30 in leap February 2028: clamped to the 29th.
  t.strictSame(at('2028-02-28T12:00:00.000Z', 30), ['2028-01-30T00:00:00.000Z', '2028-02-29T00:00:00.000Z']);
  t.strictSame(at('2028-02-29T00:00:00.000Z', 30), ['2028-02-29T00:00:00.000Z', '2028-03-30T00:00:00.000Z']);
  // Day 29 in February 2027 (not a leap year): clamped to the 28th.
  t.strictSame(at('2027-03-01T00:00:00.000Z', 29), ['2027-02-28T00:00:00.000Z', '2027-03-29T00:00:00.000Z']);
  t.strictSame(at('2027-02-27T23:00:00.000Z', 29), ['2027-01-29T00:00:00.000Z', '2027-02-28T00:00:00.000Z']);
  t.strictSame(at('2025-01-10T00:00:00.000Z', 15), ['2024-12-15T00:00:00.000Z', '2025-01-15T00:00:00.000Z'], 'back into the previous year');
  for (const now of ['2024-12-31T23:59:59.999Z', '2028-02-29T12:00:00.000Z', '2024-03-01T00:00:00.000Z']) {
    t.strictSame(at(now, 1), [I(monthStart(U(now))), I(nextMonthStart(U(now)))], `day 1 is the calendar month at ${now}`);
  }
  for (const bad of [0, 32, 1.5, Number.NaN]) t.throws(() => anchorReset(0, bad), RangeError, `rejects ${bad}`);
  t.throws(() => nextAnchorReset(0, 0), RangeError);
});

t.test('anchor days: every hour of two years lies in [last, next), and next is the following month', async (t) => {
  let bad = 0;
  for (const day of [1, 15, 28, 29, 30, 31]) {
    for (let now = U('2027-01-01T00:00:00.000Z'); now < U('2029-01-01T00:00:00.000Z'); now += 3_600_000) {
      const [last, next] = [anchorReset(now, day), nextAnchorReset(now, day)];
      const [l, n] = [new Date(last), new Date(next)];
      const monthsApart = (n.getUTCFullYear() - l.getUTCFullYear()) * 12 + n.getUTCMonth() - l.getUTCMonth();
      const clamped = (d: Date) => d.getUTCDate() === Math.min(day, daysInMonth(d.getUTCFullYear(), d.getUTCMonth()));
      if (!(last <= now && now < next && monthsApart === 1 && clamped(l) && clamped(n))) bad++;
    }
  }
  t.equal(bad, 0);
});

t.test('parseWindow', async (t) => {
  t.equal(parseWindow('5h'), 5 * 3_600_000);
  t.equal(parseWindow('10h'), 10 * 3_600_000);
  t.equal(parseWindow('30s'), 30_000);
  t.equal(parseWindow('90m'), 5_400_000);
  t.equal(parseWindow('7d'), 7 * DAY_MS);
  for (const bad of ['0h', '0s', '5', 'h', '5w', '-5h', '5.5h', '5H', ' 5h', '']) {
    t.throws(() => parseWindow(bad), RangeError, `rejects '${bad}'`);
  }
});
