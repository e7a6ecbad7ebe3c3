// Reporting periods in UTC: calendar periods start at a UTC boundary (the week on Monday 00:00), rolling ones
// end now; `date` is the day the report is about.

import t from 'tap';
import { PERIODS, isPeriod, isoDate, periodWindow, type Period } from '../../src/ledger/periods.js';

const U = (iso: string) => Date.parse(iso);
const DAY = 86_400_000;

function win(period: Period, nowIso: string) {
  const w = periodWindow(period, U(nowIso));
  return { period: w.period, from: new Date(w.from).toISOString(), to: new Date(w.to).toISOString(), date: w.date };
}

t.test('every period on an ordinary Wednesday afternoon', async (t) => {
  const now = '2024-05-15T13:45:30.123Z'; // a Wednesday
  t.same(win('today', now), { period: 'today', from: '2024-05-15T00:00:00.000Z', to: now, date: '2024-05-15' });
  t.same(win('yesterday', now), { period: 'yesterday', from: '2024-05-14T00:00:00.000Z', to: '2024-05-15T00:00:00.000Z', date: '2024-05-14' });
  t.same(win('24h', now), { period: '24h', from: '2024-05-14T13:45:30.123Z', to: now, date: '2024-05-15' });
  t.same(win('week', now), { period: 'week', from: '2024-05-13T00:00:00.000Z', to: now, date: '2024-05-15' }, 'week starts Monday 00:00 UTC');
  t.same(win('7d', now), { period: '7d', from: '2024-05-08T13:45:30.123Z', to: now, date: '2024-05-15' });
  t.same(win('month', now), { period: 'month', from: '2024-05-01T00:00:00.000Z', to: now, date: '2024-05-15' });
  t.same(win('30d', now), { period: '30d', from: '2024-04-15T13:45:30.123Z', to: now, date: '2024-05-15' });
});

t.test('week: Monday 00:00 UTC on every day of the week', async (t) => {
  // 2024-05-13 is a Monday.
  for (let d = 0; d < 7; d++) {
    for (const time of ['00:00:00.000', '12:00:00.000', '23:59:59.999']) {
      const now = `2024-05-${String(13 + d).padStart(2, '0')}T${time}Z`;
      t.equal(win('week', now).from, '2024-05-13T00:00:00.000Z', now);
    }
  }
  t.equal(win('week', '2024-05-20T00:00:00.000Z').from, '2024-05-20T00:00:00.000Z', 'Monday midnight starts a new week');
  t.equal(win('week', '2024-05-19T23:59:59.999Z').from, '2024-05-13T00:00:00.000Z', 'Sunday night is still the old week');
  t.equal(win('week', '2025-01-01T08:00:00.000Z').from, '2024-12-30T00:00:00.000Z', 'a week that starts in the previous year');
  t.equal(win('week', '2024-03-01T08:00:00.000Z').from, '2024-02-26T00:00:00.000Z', 'a week that starts in the previous month');
});

t.test('month and yesterday across boundaries', async (t) => {
  t.equal(win('month', '2024-03-01T00:00:00.000Z').from, '2024-03-01T00:00:00.000Z', 'first instant of a month');
  t.equal(win('month', '2024-02-29T23:59:59.999Z').from, '2024-02-01T00:00:00.000Z', 'leap day');
  t.equal(win('month', '2024-12-31T23:59:59.999Z').from, '2024-12-01T00:00:00.000Z');
  t.equal(win('month', '2025-01-01T00:00:00.001Z').from, '2025-01-01T00:00:00.000Z');
  t.same(win('yesterday', '2024-03-01T05:00:00.000Z'), {
    period: 'yesterday', from: '2024-02-29T00:00:00.000Z', to: '2024-03-01T00:00:00.000Z', date: '2024-02-29',
  });
  t.same(win('yesterday', '2025-01-01T00:00:00.000Z'), {
    period: 'yesterday', from: '2024-12-31T00:00:00.000Z', to: '2025-01-01T00:00:00.000Z', date: '2024-12-31',
  });
  t.same(win('today', '2025-01-01T00:00:00.000Z'), {
    period: 'today', from: '2025-01-01T00:00:00.000Z', to: '2025-01-01T00:00:00.000Z', date: '2025-01-01',
  }, 'at midnight today is empty');
});

t.test('windows are well formed for every period', async (t) => {
  const nows = ['2024-05-15T13:45:30.123Z', '2024-02-29T00:00:00.000Z', '2023-12-31T23:59:59.999Z', '1970-01-08T00:00:00.000Z'].map(U);
  for (const period of PERIODS) {
    for (const now of nows) {
      const w = periodWindow(period, now);
      t.equal(w.period, period);
      t.ok(w.from <= w.to, `${period} @ ${new Date(now).toISOString()}: from <= to`);
      t.ok(w.to <= now, 'never ends in the future');
      t.match(w.date, /^\d{4}-\d{2}-\d{2}$/);
      if (period === 'yesterday') t.equal(w.to - w.from, DAY, 'yesterday is one whole day');
      if (['24h', '7d', '30d'].includes(period)) t.equal(w.to - w.from, { '24h': 1, '7d': 7, '30d': 30 }[period as '24h' | '7d' | '30d'] * DAY);
    }
  }
});

t.test('isPeriod and isoDate', async (t) => {
  t.same([...PERIODS], ['today', 'yesterday', '24h', 'week', '7d', 'month', '30d']);
  for (const p of PERIODS) t.ok(isPeriod(p), p);
  for (const s of ['', 'Today', 'TODAY', 'week ', 'day', '1d', 'months', 'constructor', 'toString', 'length']) t.notOk(isPeriod(s), JSON.stringify(s));
  t.equal(isoDate(U('2024-05-15T23:59:59.999Z')), '2024-05-15');
  t.equal(isoDate(0), '1970-01-01');
});
