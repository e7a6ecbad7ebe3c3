// The quota engine: for each of the seven kinds, the plan (what to sum over which window) and the evaluated entry
// (used, percentage, remaining, nextReset, countdown, exhausted) at chosen instants, worked out by hand.

import t from 'tap';
import {
  QUOTA_DEFAULTS, QUOTA_KINDS, evaluateQuota, msToHours, planQuota, quotaConfigOf, type QuotaConfig, type QuotaPlan,
} from '../../src/config/quota-kinds.js';

const U = (iso: string) => Date.parse(iso);
const I = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A plan with its instants as ISO strings, for readable comparisons. */
function plan(q: QuotaConfig, now: string) {
  const p: QuotaPlan = planQuota(q, U(now));
  const { secondary, ...rest } = p;
  return {
    ...rest,
    from: I(p.from),
    to: I(p.to),
    nextReset: I(p.nextReset),
    ...(secondary ? { secondary: { ...secondary, from: I(secondary.from), to: I(secondary.to), nextReset: I(secondary.nextReset) } } : {}),
  };
}

function evaluate(q: QuotaConfig, now: string, used: number, oldest: string | null = null, secondaryUsed?: number) {
  const n = U(now);
  const sums = { used, oldest: oldest === null ? null : U(oldest), ...(secondaryUsed === undefined ? {} : { secondaryUsed }) };
  return evaluateQuota(planQuota(q, n), sums, n);
}

const WED = '2024-05-15T12:00:00.000Z'; // a Wednesday; the week began Monday 2024-05-13, the next is 2024-05-20

t.test('rolling_hours: plan on a Wednesday', async (t) => {
  // from = max(now - 5h + 1 ms, last Monday) = max(07:00:00.001Z, 05-13T00:00Z): the window is (07:00Z, 12:00Z], a call
  // at 07:00:00.000Z has left it at 12:00Z, when its expiry says; the cap is next Monday.
  t.strictSame(plan({ kind: 'rolling_hours' }, WED), {
    kind: 'rolling_hours', unit: 'hours', limit: 5, from: '2024-05-15T07:00:00.001Z', to: WED,
    reset: { type: 'rolling', window: '5h' }, nextReset: '2024-05-20T00:00:00.000Z', rollingMs: 5 * 3_600_000,
  });
  t.strictSame(plan({ kind: 'rolling_hours', limit: 10, window: '10h' }, WED).from, '2024-05-15T02:00:00.001Z', 'the higher tier');
});

t.test('rolling_hours: evaluated', async (t) => {
  // 1.5 h used, oldest at 08:30Z: it expires at 13:30Z, 1.5 h = 5400 s from now, before next Monday.
  t.strictSame(evaluate({ kind: 'rolling_hours' }, WED, 1.5, '2024-05-15T08:30:00.000Z'), {
    quota: { used: 1.5, limit: 5, unit: 'hours', percentage: 30, remaining: 3.5 },
    reset: { type: 'rolling', window: '5h', nextReset: '2024-05-15T13:30:00.000Z', countdown_s: 5400 },
    exhausted: false,
  });
  // No usage in the window: the next reset is the weekly one, Monday 2024-05-20 00:00Z = 4 d 12 h = 388800 s away.
  t.strictSame(evaluate({ kind: 'rolling_hours' }, WED, 0).reset, {
    type: 'rolling', window: '5h', nextReset: '2024-05-20T00:00:00.000Z', countdown_s: 388_800,
  });
  // Hours are shown to 4 decimals: 1.23456789 h -> 1.2346; 1.23456789 / 5 = 24.691...% -> 24.69; 5 - 1.23456789.
  const e = evaluate({ kind: 'rolling_hours' }, WED, 1.23456789, '2024-05-15T08:00:00.000Z');
  t.strictSame(e.quota, { used: 1.2346, limit: 5, unit: 'hours', percentage: 24.69, remaining: 3.7654 });
  // 10 h on the higher tier: used up.
  t.strictSame(evaluate({ kind: 'rolling_hours', limit: 10, window: '10h' }, WED, 10, '2024-05-15T02:30:00.000Z'), {
    quota: { used: 10, limit: 10, unit: 'hours', percentage: 100, remaining: 0 },
    reset: { type: 'rolling', window: '10h', nextReset: '2024-05-15T12:30:00.000Z', countdown_s: 1800 },
    exhausted: true,
  });
  t.equal(msToHours(5_400_000), 1.5);
});

t.test('rolling_hours: the Monday refresh cuts the window', async (t) => {
  // Monday 02:00Z: now - 5h is Sunday 21:00Z, but usage before Monday 00:00Z never counts.
  const mon = '2024-05-20T02:00:00.000Z';
  t.equal(plan({ kind: 'rolling_hours' }, mon).from, '2024-05-20T00:00:00.000Z');
  t.equal(plan({ kind: 'rolling_hours' }, mon).nextReset, '2024-05-27T00:00:00.000Z');
  // Oldest counted usage at 00:30Z expires at 05:30Z, 3.5 h = 12600 s away.
  t.strictSame(evaluate({ kind: 'rolling_hours' }, mon, 0.5, '2024-05-20T00:30:00.000Z').reset, {
    type: 'rolling', window: '5h', nextReset: '2024-05-20T05:30:00.000Z', countdown_s: 12_600,
  });
  // Sunday 23:59Z: the window is (18:59Z, 23:59Z]; the oldest usage (20:00Z) would expire at 01:00Z Monday, but the
  // weekly refresh comes first, 60 s away.
  const sun = '2024-05-19T23:59:00.000Z';
  t.equal(plan({ kind: 'rolling_hours' }, sun).from, '2024-05-19T18:59:00.001Z');
  t.strictSame(evaluate({ kind: 'rolling_hours' }, sun, 4, '2024-05-19T20:00:00.000Z'), {
    quota: { used: 4, limit: 5, unit: 'hours', percentage: 80, remaining: 1 },
    reset: { type: 'rolling', window: '5h', nextReset: '2024-05-20T00:00:00.000Z', countdown_s: 60 },
    exhausted: false,
  });
  // Exactly Monday 00:00:00.000Z: the window is empty, [now, now); the next refresh is a week away.
  const midnight = '2024-05-20T00:00:00.000Z';
  const p = plan({ kind: 'rolling_hours' }, midnight);
  t.strictSame([p.from, p.to], [midnight, midnight]);
  t.strictSame(evaluate({ kind: 'rolling_hours' }, midnight, 0).reset, {
    type: 'rolling', window: '5h', nextReset: '2024-05-27T00:00:00.000Z', countdown_s: 604_800,
  });
});

t.test('daily_requests: plan with its monthly total', async (t) => {
  t.strictSame(plan({ kind: 'daily_requests' }, WED), {
    kind: 'daily_requests', unit: 'requests', limit: 1000, from: '2024-05-15T00:00:00.000Z', to: WED,
    reset: { type: 'daily', time: '00:00Z' }, nextReset: '2024-05-16T00:00:00.000Z', rollingMs: null,
    secondary: { period: 'month', limit: 180_000, from: '2024-05-01T00:00:00.000Z', to: WED, nextReset: '2024-06-01T00:00:00.000Z' },
  });
  // reset_time 00:00+08:00 = 16:00Z: at 12:00Z the day began yesterday at 16:00Z.
  const p = plan({ kind: 'daily_requests', limit: 500, monthly_limit: 30_000, reset_time: '00:00+08:00' }, WED);
  t.strictSame([p.limit, p.from, p.nextReset, p.secondary?.limit], [500, '2024-05-14T16:00:00.000Z', '2024-05-15T16:00:00.000Z', 30_000]);
});

t.test('daily_requests: evaluated', async (t) => {
  // 250 of 1000 today (12 h = 43200 s to go); 90000 of 180000 this month (06-01 is 16.5 d = 1425600 s away).
  t.strictSame(evaluate({ kind: 'daily_requests' }, WED, 250, null, 90_000), {
    quota: { used: 250, limit: 1000, unit: 'requests', percentage: 25, remaining: 750 },
    reset: { type: 'daily', time: '00:00Z', nextReset: '2024-05-16T00:00:00.000Z', countdown_s: 43_200 },
    exhausted: false,
    secondary: {
      period: 'month', used: 90_000, limit: 180_000, unit: 'requests', percentage: 50, remaining: 90_000,
      nextReset: '2024-06-01T00:00:00.000Z', countdown_s: 1_425_600, exhausted: false,
    },
  });
  // Exhausted by the monthly total while the daily count (10 of 1000) is fine.
  const m = evaluate({ kind: 'daily_requests' }, WED, 10, null, 180_000);
  t.equal(m.exhausted, true);
  t.strictSame(m.quota, { used: 10, limit: 1000, unit: 'requests', percentage: 1, remaining: 990 });
  t.strictSame([m.secondary?.percentage, m.secondary?.remaining, m.secondary?.exhausted], [100, 0, true]);
  // Exhausted by the daily count.
  const d = evaluate({ kind: 'daily_requests' }, WED, 1000, null, 5000);
  t.strictSame([d.exhausted, d.secondary?.exhausted], [true, false]);
  // New Year's Eve 23:30Z: the day and the month both reset at 2025-01-01T00:00Z, 1800 s away.
  const nye = evaluate({ kind: 'daily_requests' }, '2024-12-31T23:30:00.000Z', 1, null, 1);
  t.strictSame([nye.reset.nextReset, nye.reset.countdown_s], ['2025-01-01T00:00:00.000Z', 1800]);
  t.strictSame([nye.secondary?.nextReset, nye.secondary?.countdown_s], ['2025-01-01T00:00:00.000Z', 1800]);
  t.throws(() => evaluate({ kind: 'daily_requests' }, WED, 1), TypeError, 'the monthly sum is required');
});

t.test('monthly: without a limit, with one, and on an anchor day', async (t) => {
  // Leap day 2028-02-29 12:00Z: the month began 02-01, the next is 03-01, 12 h = 43200 s away.
  const leap = '2028-02-29T12:00:00.000Z';
  t.strictSame(plan({ kind: 'monthly' }, leap), {
    kind: 'monthly', unit: 'tokens', limit: null, from: '2028-02-01T00:00:00.000Z', to: leap,
    reset: { type: 'monthly' }, nextReset: '2028-03-01T00:00:00.000Z', rollingMs: null,
  });
  t.strictSame(evaluate({ kind: 'monthly' }, leap, 123_456), {
    quota: { used: 123_456, limit: null, unit: 'tokens', percentage: null, remaining: null },
    reset: { type: 'monthly', nextReset: '2028-03-01T00:00:00.000Z', countdown_s: 43_200 },
    exhausted: false,
  });
  t.strictSame(evaluate({ kind: 'monthly', limit: 100, unit: 'hours' }, leap, 25.5).quota, {
    used: 25.5, limit: 100, unit: 'hours', percentage: 25.5, remaining: 74.5,
  });
  const p = plan({ kind: 'monthly', anchor_day: 15, unit: 'requests' }, '2024-05-10T00:00:00.000Z');
  t.strictSame([p.unit, p.from, p.nextReset], ['requests', '2024-04-15T00:00:00.000Z', '2024-05-15T00:00:00.000Z']);
});

t.test('daily_tokens: 01:59Z vs 02:00Z with the default 10:00+08:00', async (t) => {
  // 01:59Z is 09:59 at UTC+8: the day began yesterday 02:00Z and resets in 60 s.
  const before = '2024-05-15T01:59:00.000Z';
  t.strictSame(plan({ kind: 'daily_tokens' }, before), {
    kind: 'daily_tokens', unit: 'tokens', limit: 10_000_000, from: '2024-05-14T02:00:00.000Z', to: before,
    reset: { type: 'daily', time: '10:00+08:00' }, nextReset: '2024-05-15T02:00:00.000Z', rollingMs: null,
  });
  // 9,999,999 / 10,000,000 = 99.99999...% shows as 100 after rounding, but is not exhausted.
  t.strictSame(evaluate({ kind: 'daily_tokens' }, before, 9_999_999), {
    quota: { used: 9_999_999, limit: 10_000_000, unit: 'tokens', percentage: 100, remaining: 1 },
    reset: { type: 'daily', time: '10:00+08:00', nextReset: '2024-05-15T02:00:00.000Z', countdown_s: 60 },
    exhausted: false,
  });
  // 02:00:00.000Z: a new day, [now, now) is empty; the next reset is a day away.
  const at = '2024-05-15T02:00:00.000Z';
  t.strictSame(plan({ kind: 'daily_tokens' }, at).from, at);
  t.strictSame(evaluate({ kind: 'daily_tokens' }, at, 0), {
    quota: { used: 0, limit: 10_000_000, unit: 'tokens', percentage: 0, remaining: 10_000_000 },
    reset: { type: 'daily', time: '10:00+08:00', nextReset: '2024-05-16T02:00:00.000Z', countdown_s: 86_400 },
    exhausted: false,
  });
  t.equal(evaluate({ kind: 'daily_tokens' }, at, 10_000_000).exhausted, true);
});

t.test('daily_tokens: across a leap month end and with a reset on the previous UTC day', async (t) => {
  // 2024-02-29T20:00Z is 03-01 04:00 at UTC+8: the day began 02-29 10:00 local = 02-29T02:00Z.
  const p = plan({ kind: 'daily_tokens' }, '2024-02-29T20:00:00.000Z');
  t.strictSame([p.from, p.nextReset], ['2024-02-29T02:00:00.000Z', '2024-03-01T02:00:00.000Z']);
  // 02:00+08:00 = 18:00Z the previous UTC day; at 17:00Z the reset is an hour away.
  const e = evaluate({ kind: 'daily_tokens', reset_time: '02:00+08:00', limit: 1000 }, '2024-05-15T17:00:00.000Z', 333);
  t.strictSame(e, {
    quota: { used: 333, limit: 1000, unit: 'tokens', percentage: 33.3, remaining: 667 },
    reset: { type: 'daily', time: '02:00+08:00', nextReset: '2024-05-15T18:00:00.000Z', countdown_s: 3600 },
    exhausted: false,
  });
  t.equal(plan({ kind: 'daily_tokens', reset_time: '02:00+08:00' }, '2024-05-15T17:00:00.000Z').from, '2024-05-14T18:00:00.000Z');
});

t.test('rolling_tokens: the next reset is when the oldest usage expires', async (t) => {
  t.strictSame(plan({ kind: 'rolling_tokens' }, WED), {
    kind: 'rolling_tokens', unit: 'tokens', limit: 5_000_000, from: '2024-05-15T07:00:00.001Z', to: WED,
    reset: { type: 'rolling', window: '5h' }, nextReset: null, rollingMs: 5 * 3_600_000,
  });
  // Oldest at 09:15:30Z expires at 14:15:30Z: 2 h 15 m 30 s = 8130 s away.
  t.strictSame(evaluate({ kind: 'rolling_tokens' }, WED, 1_250_000, '2024-05-15T09:15:30.000Z'), {
    quota: { used: 1_250_000, limit: 5_000_000, unit: 'tokens', percentage: 25, remaining: 3_750_000 },
    reset: { type: 'rolling', window: '5h', nextReset: '2024-05-15T14:15:30.000Z', countdown_s: 8130 },
    exhausted: false,
  });
  // Nothing in the window: nothing is due to expire.
  t.strictSame(evaluate({ kind: 'rolling_tokens' }, WED, 0).reset, { type: 'rolling', window: '5h', nextReset: null, countdown_s: null });
  // Over the limit: 6M of 5M = 120 %, nothing remaining.
  t.strictSame(evaluate({ kind: 'rolling_tokens' }, WED, 6_000_000, '2024-05-15T07:00:00.000Z').quota, {
    used: 6_000_000, limit: 5_000_000, unit: 'tokens', percentage: 120, remaining: 0,
  });
  t.equal(evaluate({ kind: 'rolling_tokens' }, WED, 6_000_000, '2024-05-15T07:00:00.000Z').exhausted, true);
  // A 1-day window across the leap day: (02-29T06:00Z, 03-01T06:00Z]; the oldest (02-29T07:00Z) expires in 3600 s.
  const leap = '2024-03-01T06:00:00.000Z';
  t.equal(plan({ kind: 'rolling_tokens', window: '1d', limit: 1_000_000 }, leap).from, '2024-02-29T06:00:00.001Z');
  t.strictSame(evaluate({ kind: 'rolling_tokens', window: '1d', limit: 1_000_000 }, leap, 1, '2024-02-29T07:00:00.000Z').reset, {
    type: 'rolling', window: '1d', nextReset: '2024-03-01T07:00:00.000Z', countdown_s: 3600,
  });
  // No weekly refresh: on Monday 02:00Z the window reaches back to Sunday 21:00Z (not included).
  t.equal(plan({ kind: 'rolling_tokens' }, '2024-05-20T02:00:00.000Z').from, '2024-05-19T21:00:00.001Z');
});

t.test('monthly_tokens: anchor days, month ends and leap years', async (t) => {
  // Anchor 1, one second before the year ends.
  const nye = '2024-12-31T23:59:59.000Z';
  t.strictSame(plan({ kind: 'monthly_tokens' }, nye), {
    kind: 'monthly_tokens', unit: 'tokens', limit: 10_000_000, from: '2024-12-01T00:00:00.000Z', to: nye,
    reset: { type: 'monthly' }, nextReset: '2025-01-01T00:00:00.000Z', rollingMs: null,
  });
  t.strictSame(evaluate({ kind: 'monthly_tokens' }, nye, 10_000_000).reset, { type: 'monthly', nextReset: '2025-01-01T00:00:00.000Z', countdown_s: 1 });
  // Anchor 31 in April (30 days): the period began 03-31 and ends 04-30, 14 d 12 h = 1252800 s away.
  t.strictSame(evaluate({ kind: 'monthly_tokens', anchor_day: 31 }, '2024-04-15T12:00:00.000Z', 2_500_000), {
    quota: { used: 2_500_000, limit: 10_000_000, unit: 'tokens', percentage: 25, remaining: 7_500_000 },
    reset: { type: 'monthly', nextReset: '2024-04-30T00:00:00.000Z', countdown_s: 1_252_800 },
    exhausted: false,
  });
  t.equal(plan({ kind: 'monthly_tokens', anchor_day: 31 }, '2024-04-15T12:00:00.000Z').from, '2024-03-31T00:00:00.000Z');
  // Anchor 30 in leap February 2028: reset on the 29th; at 02-29T08:00Z the next is 03-30, 29 d 16 h = 2563200 s.
  const leap = plan({ kind: 'monthly_tokens', anchor_day: 30 }, '2028-02-29T08:00:00.000Z');
  t.strictSame([leap.from, leap.nextReset], ['2028-02-29T00:00:00.000Z', '2028-03-30T00:00:00.000Z']);
  t.equal(evaluate({ kind: 'monthly_tokens', anchor_day: 30 }, '2028-02-29T08:00:00.000Z', 0).reset.countdown_s, 2_563_200);
  // Anchor 29 in February 2027 (28 days): the period began on the 28th.
  const p = plan({ kind: 'monthly_tokens', anchor_day: 29 }, '2027-02-28T00:00:00.000Z');
  t.strictSame([p.from, p.nextReset], ['2027-02-28T00:00:00.000Z', '2027-03-29T00:00:00.000Z']);
});

t.test('unlimited: usage this month, no limit, no reset', async (t) => {
  t.strictSame(plan({ kind: 'unlimited', limit: 100 }, WED), {
    kind: 'unlimited', unit: 'tokens', limit: null, from: '2024-05-01T00:00:00.000Z', to: WED,
    reset: { type: 'none' }, nextReset: null, rollingMs: null,
  }, 'a configured limit is ignored');
  t.strictSame(evaluate({ kind: 'unlimited' }, WED, 42_000_000), {
    quota: { used: 42_000_000, limit: null, unit: 'tokens', percentage: null, remaining: null },
    reset: { type: 'none', nextReset: null, countdown_s: null },
    exhausted: false,
  });
});

t.test('a zero limit is used up from the start', async (t) => {
  t.strictSame(evaluate({ kind: 'daily_tokens', limit: 0 }, WED, 0).quota, { used: 0, limit: 0, unit: 'tokens', percentage: 100, remaining: 0 });
  t.equal(evaluate({ kind: 'daily_tokens', limit: 0 }, WED, 0).exhausted, true);
});

t.test('every kind with no options uses the defaults table', async (t) => {
  for (const kind of QUOTA_KINDS) {
    const p = planQuota({ kind }, U(WED));
    t.strictSame([p.limit, p.unit], [QUOTA_DEFAULTS[kind].limit, QUOTA_DEFAULTS[kind].unit], kind);
    t.ok(p.from <= p.to && p.to === U(WED), `${kind}: from <= to = now`);
    t.ok(p.nextReset === null || p.nextReset > U(WED), `${kind}: the next reset is in the future`);
  }
});

t.test('quotaConfigOf narrows and checks a provider quota', async (t) => {
  t.equal(quotaConfigOf({}), null, 'no quota');
  const q = { kind: 'daily_tokens', limit: 10_000_000, reset_time: '10:00+08:00' };
  t.equal(quotaConfigOf({ quota: q }), q);
  t.strictSame(quotaConfigOf({ quota: { kind: 'monthly_tokens', anchor_day: 31, unit: 'tokens' } }), { kind: 'monthly_tokens', anchor_day: 31, unit: 'tokens' });
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ kind: 'weekly' }, /quota\.kind/],
    [{}, /quota\.kind/],
    [{ kind: 'daily_tokens', limit: -1 }, /quota\.limit/],
    [{ kind: 'daily_requests', monthly_limit: '5' }, /quota\.monthly_limit/],
    [{ kind: 'rolling_tokens', window: 5 }, /quota\.window/],
    [{ kind: 'rolling_tokens', window: '0h' }, /quota\.window/],
    [{ kind: 'daily_tokens', reset_time: '25:00Z' }, /quota\.reset_time/],
    [{ kind: 'monthly_tokens', anchor_day: 0 }, /quota\.anchor_day/],
    [{ kind: 'monthly_tokens', anchor_day: 2.5 }, /quota\.anchor_day/],
    [{ kind: 'monthly', unit: 'bytes' }, /quota\.unit/],
  ];
  for (const [quota, message] of bad) t.throws(() => quotaConfigOf({ quota }), { message }, JSON.stringify(quota));
});
