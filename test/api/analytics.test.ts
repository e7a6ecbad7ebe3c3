// The usage reports (/api/usage with filters, cost, projection, combos, hourly, overview) against the known rows of
// test/helpers/usage-rows.ts on a fixed clock. Each expectation is worked out by hand from the fixture's table.

import t from 'tap';
import { NOW, startFixture } from '../helpers/usage-rows.js';
import { aggregate } from '../../src/store/aggregate.js';

const fx = await startFixture(t);
const money = (v: number): number => Number(v.toFixed(12));

t.test('/api/usage keeps its shape and numbers; filters narrow both counts and echo back', async (t) => {
  const all = await fx.get('/fixed/api/usage');
  t.equal(all.status, 200);
  // Today: client requests R1 R2 R3 R5 C1 C2 C3; upstream calls R1 R2 R3 R5 A1-A4 B1-B3.
  t.same(all.json, {
    period: 'today', date: '2026-12-01', from: '2026-12-01T00:00:00.000Z', to: '2026-12-01T10:30:00.000Z', filters: {},
    summary: { requests: 7, tokens: 4010, cost: 0.01236 },
    byModel: [
      { model: 'paid/big', requests: 5, tokens: 2160, cost: 0.01206 },
      { model: 'sub/m1', requests: 3, tokens: 1500, cost: 0 },
      { model: 'paid/small', requests: 1, tokens: 200, cost: 0.0003 },
      { model: 'free/llama', requests: 2, tokens: 150, cost: 0 },
    ],
  });

  // A combo request counts under the provider and model that answered it last (C2: paid/big; C3: sub/m1).
  const paid = await fx.get('/fixed/api/usage?provider=paid');
  t.same(paid.json.filters, { provider: 'paid' });
  t.same(paid.json.summary, { requests: 3, tokens: 2360, cost: 0.01236 });
  t.same(paid.json.byModel.map((m: { model: string }) => m.model), ['paid/big', 'paid/small']);

  const smart = await fx.get('/fixed/api/usage?combo=smart');
  t.same(smart.json.summary, { requests: 2, tokens: 500, cost: 0 }, 'C1 and C3; their four attempts');
  t.same(smart.json.byModel, [{ model: 'sub/m1', requests: 2, tokens: 500, cost: 0 }, { model: 'paid/big', requests: 2, tokens: 0, cost: 0 }]);

  const bob = await fx.get('/fixed/api/usage?api_key=bob&period=today');
  t.same(bob.json.summary, { requests: 2, tokens: 1060, cost: 0.00006 });
  t.same(bob.json.filters, { api_key: 'bob' });

  const big = await fx.get('/fixed/api/usage?model=paid%2Fbig');
  t.same(big.json.summary, { requests: 3, tokens: 2160, cost: 0.01206 }, 'R1, R5 and C2 (its judge answered)');

  const none = await fx.get('/fixed/api/usage?provider=nobody');
  t.same(none.json.summary, { requests: 0, tokens: 0, cost: 0 });
  t.same(none.json.byModel, []);

  const pings = await fx.get('/fixed/api/usage?include_keepalive=true');
  t.same(pings.json.summary, { requests: 7, tokens: 4022, cost: 0.01238 }, 'pings add tokens and cost, never client requests');
  t.same(pings.json.byModel.find((m: { model: string }) => m.model === 'paid/small'), { model: 'paid/small', requests: 2, tokens: 210, cost: 0.00032 });

  const week = await fx.get('/fixed/api/usage?period=week');
  t.same(week.json.summary, { requests: 8, tokens: 4110, cost: 0.01246 }, 'week began Monday 11-30: R4 at 23:59:59.999 is in');
  const month = await fx.get('/fixed/api/usage?period=month');
  t.same(month.json.summary, { requests: 7, tokens: 4010, cost: 0.01236 }, 'the month began at 12-01 00:00: R4 is out, R3 is in');
});

t.test('cost report: a day', async (t) => {
  const r = await fx.get('/fixed/api/usage/cost');
  t.equal(r.status, 200);
  const c = r.json;
  t.equal(c.period, 'day');
  t.equal(c.date, '2026-12-01');
  t.equal(c.from, '2026-12-01T00:00:00.000Z');
  t.equal(c.to, '2026-12-02T00:00:00.000Z');
  // paid: R1 R5 A1 A3 B1 B3 (6 calls, 1600+60+200+500 tokens); sub: R2 A2 A4; free: R3 B2.
  t.same(c.totals, { requests: 7, upstream_calls: 11, tokens: 4010, cost: 0.01236, list_cost: 0.01836, avg_cost_per_1m_tokens: money((0.01236 / 4010) * 1e6) });
  t.same(c.groups, {
    subscription: { requests: 3, tokens: 1500, cost: 0, list_cost: 0.006 },
    paid: { requests: 6, tokens: 2360, cost: 0.01236, list_cost: 0.01236 },
    free: { requests: 2, tokens: 150, cost: 0, list_cost: 0 },
  });
  t.same(c.month_to_date, { from: '2026-12-01T00:00:00.000Z', to: '2026-12-02T00:00:00.000Z', requests: 7, upstream_calls: 11, tokens: 4010, cost: 0.01236, list_cost: 0.01836 });
  t.same(c.projection, { basis: 'day_x30', days: 1, daily_average: { tokens: 4010, cost: 0.01236 }, tokens_30d: 120300, cost_30d: 0.3708 });
  t.equal(c.share_basis, 'cost');
  t.same(c.providers, [
    { provider: 'paid', name: 'Paid Inc', group: 'paid', requests: 6, tokens: 2360, cost: 0.01236, list_cost: 0.01236, share_pct: 100, avg_cost_per_1m_tokens: money((0.01236 / 2360) * 1e6) },
    { provider: 'sub', name: 'Sub Co', group: 'subscription', requests: 3, tokens: 1500, cost: 0, list_cost: 0.006, share_pct: 0, avg_cost_per_1m_tokens: 0 },
    { provider: 'free', name: 'Free Org', group: 'free', requests: 2, tokens: 150, cost: 0, list_cost: 0, share_pct: 0, avg_cost_per_1m_tokens: 0 },
  ]);

  const pings = await fx.get('/fixed/api/usage/cost?include_keepalive=true');
  t.same([pings.json.totals.requests, pings.json.totals.upstream_calls, pings.json.totals.tokens, pings.json.totals.cost], [7, 13, 4022, 0.01238]);
});

t.test('cost report: a past day, its month to date, and shares of tokens when nothing was billed', async (t) => {
  const d = (await fx.get('/fixed/api/usage/cost?period=day&date=2026-11-30')).json;
  t.same(d.totals, { requests: 1, upstream_calls: 1, tokens: 100, cost: 0.0001, list_cost: 0.0001, avg_cost_per_1m_tokens: 1 });
  // November 1st to the end of the 30th: R4 R6 R7 R11 R8 R10 (R9 is October 31st, 23:59:59.999).
  t.same(d.month_to_date, { from: '2026-11-01T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z', requests: 6, upstream_calls: 6, tokens: 3320, cost: 0.5301, list_cost: 0.5321 });
  t.same(d.projection, { basis: 'day_x30', days: 1, daily_average: { tokens: 100, cost: 0.0001 }, tokens_30d: 3000, cost_30d: 0.003 });

  const z = (await fx.get('/fixed/api/usage/cost?date=2026-11-24')).json;
  t.equal(z.share_basis, 'tokens');
  t.same(z.providers.map((p: { provider: string; share_pct: number }) => [p.provider, p.share_pct]), [['free', 70], ['sub', 30]]);
  t.equal(z.totals.avg_cost_per_1m_tokens, 0);

  const empty = (await fx.get('/fixed/api/usage/cost?date=2026-01-05')).json;
  t.same(empty.totals, { requests: 0, upstream_calls: 0, tokens: 0, cost: 0, list_cost: 0, avg_cost_per_1m_tokens: null });
  t.same(empty.providers, []);
});

t.test('cost report: a month', async (t) => {
  const m = (await fx.get('/fixed/api/usage/cost?period=month&date=2026-11')).json;
  t.equal(m.date, '2026-11');
  t.same([m.from, m.to], ['2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z']);
  t.same(m.groups, {
    subscription: { requests: 2, tokens: 500, cost: 0, list_cost: 0.002 },
    paid: { requests: 3, tokens: 2120, cost: 0.5301, list_cost: 0.5301 },
    free: { requests: 1, tokens: 700, cost: 0, list_cost: 0 },
  });
  t.same(m.month_to_date, { from: m.from, to: m.to, requests: 6, upstream_calls: 6, tokens: 3320, cost: 0.5301, list_cost: 0.5321 });
  // A past month: its average per day over its 30 days, x 30.
  t.same(m.projection, {
    basis: 'month_to_date_daily_average_x30', days: 30, daily_average: { tokens: Math.round(3320 / 30), cost: money(0.5301 / 30) },
    tokens_30d: 3320, cost_30d: 0.5301,
  });
  t.same(m.providers.map((p: { provider: string; share_pct: number }) => [p.provider, p.share_pct]), [['paid', 100], ['free', 0], ['sub', 0]]);

  // The current month: one day elapsed (today counts whole), so the daily average is today's.
  const cur = (await fx.get('/fixed/api/usage/cost?period=month')).json;
  t.equal(cur.date, '2026-12');
  t.same(cur.projection, { basis: 'month_to_date_daily_average_x30', days: 1, daily_average: { tokens: 4010, cost: 0.01236 }, tokens_30d: 120300, cost_30d: 0.3708 });
  t.same([cur.totals.requests, cur.totals.tokens, cur.totals.cost], [7, 4010, 0.01236], 'agrees with /api/usage?period=month');

  const future = (await fx.get('/fixed/api/usage/cost?period=month&date=2027-02')).json;
  t.same(future.projection, { basis: 'month_to_date_daily_average_x30', days: 0, daily_average: { tokens: 0, cost: 0 }, tokens_30d: 0, cost_30d: 0 });
});

t.test('projection: the 7 full days before today', async (t) => {
  const p = (await fx.get('/fixed/api/usage/projection')).json;
  t.same([p.basis, p.days, p.from, p.to], ['last_7_full_days', 7, '2026-11-24T00:00:00.000Z', '2026-12-01T00:00:00.000Z']);
  // R7 (11-24 00:00, in) R11 R6 R4 (11-30 23:59:59.999, in); R8 (11-23 23:59:59.999) and today's rows are out.
  t.same(p.totals, { requests: 4, tokens: 3100, cost: 0.0301 });
  t.same(p.daily_average, { requests: Number((4 / 7).toFixed(2)), tokens: Math.round(3100 / 7), cost: money(0.0301 / 7) });
  t.same(p.monthly, { tokens: Math.round((3100 * 30) / 7), cost: money((0.0301 * 30) / 7) });
  t.same(p.daily.map((d: { date: string; tokens: number }) => [d.date, d.tokens]), [
    ['2026-11-24', 1000], ['2026-11-25', 2000], ['2026-11-26', 0], ['2026-11-27', 0], ['2026-11-28', 0], ['2026-11-29', 0], ['2026-11-30', 100],
  ]);
  t.same(p.providers, [
    { provider: 'paid', name: 'Paid Inc', group: 'paid', tokens: 2100, cost: 0.0301, daily_average_tokens: 300, daily_average_cost: money(0.0301 / 7), monthly_tokens: 9000, monthly_cost: money((0.0301 * 30) / 7) },
    { provider: 'free', name: 'Free Org', group: 'free', tokens: 700, cost: 0, daily_average_tokens: 100, daily_average_cost: 0, monthly_tokens: 3000, monthly_cost: 0 },
    { provider: 'sub', name: 'Sub Co', group: 'subscription', tokens: 300, cost: 0, daily_average_tokens: Math.round(300 / 7), daily_average_cost: 0, monthly_tokens: Math.round(9000 / 7), monthly_cost: 0 },
  ]);
});

t.test('combos: requests, attempts and failures per model, token share and cost', async (t) => {
  const r = await fx.get('/fixed/api/usage/combos');
  t.equal(r.status, 200);
  t.same(r.json.combos, [
    {
      combo: 'smart', strategy: 'fallback', requests: 2, successes: 1, failures: 1, success_rate_pct: 50, attempts: 4, tokens: 500, cost: 0,
      models: [
        { model: 'sub/m1', attempts: 2, failures: 1, tokens: 500, cost: 0, token_share_pct: 100, cost_share_pct: 0 },
        { model: 'paid/big', attempts: 2, failures: 2, tokens: 0, cost: 0, token_share_pct: 0, cost_share_pct: 0 },
      ],
    },
    {
      combo: 'fuse', strategy: 'fusion', requests: 1, successes: 1, failures: 0, success_rate_pct: 100, attempts: 3, tokens: 850, cost: 0.0023,
      models: [
        { model: 'paid/big', attempts: 1, failures: 0, tokens: 500, cost: 0.002, token_share_pct: 58.82, cost_share_pct: 86.96 },
        { model: 'paid/small', attempts: 1, failures: 0, tokens: 200, cost: 0.0003, token_share_pct: 23.53, cost_share_pct: 13.04 },
        { model: 'free/llama', attempts: 1, failures: 0, tokens: 150, cost: 0, token_share_pct: 17.65, cost_share_pct: 0 },
      ],
    },
    { combo: 'idle', strategy: 'round-robin', requests: 0, successes: 0, failures: 0, success_rate_pct: null, attempts: 0, tokens: 0, cost: 0, models: [] },
  ]);
  const one = await fx.get('/fixed/api/usage/combos?combo=fuse&period=week');
  t.same(one.json.combos.map((c: { combo: string; requests: number }) => [c.combo, c.requests]), [['fuse', 1]]);
  const old = await fx.get('/fixed/api/usage/combos?period=yesterday');
  t.same(old.json.combos.map((c: { requests: number }) => c.requests), [0, 0, 0], 'every configured combo is listed, used or not');
});

t.test('hourly: a local day in Europe/Paris (+01:00)', async (t) => {
  const r = await fx.get('/fixed/api/usage/hourly?tz=Europe/Paris');
  t.equal(r.status, 200);
  const h = r.json;
  t.same([h.tz, h.date, h.from, h.to, h.hours], ['Europe/Paris', '2026-12-01', '2026-11-30T23:00:00.000Z', '2026-12-01T23:00:00.000Z', 24]);
  t.same(h.entries[0], { hour: '00:00', utc_offset: '+01:00', start: '2026-11-30T23:00:00.000Z', end: '2026-12-01T00:00:00.000Z', requests: 1, tokens: 100, cost: 0.0001 });
  const used = h.entries.filter((e: { requests: number }) => e.requests > 0).map((e: { hour: string; requests: number; tokens: number; cost: number }) => [e.hour, e.requests, e.tokens, e.cost]);
  t.same(used, [['00:00', 1, 100, 0.0001], ['01:00', 1, 0, 0], ['09:00', 1, 60, 0.00006], ['10:00', 2, 1500, 0], ['11:00', 3, 2450, 0.0123]]);
  t.same(h.totals, { requests: 8, tokens: 4110, cost: 0.01246 });
  t.equal(h.peak.hour, '11:00');
  t.equal(h.peak.tokens, 2450);
  t.equal(h.low.hour, '01:00', 'the first of the started hours with the fewest tokens (12:00 has not begun at 10:30Z)');

  const pings = (await fx.get('/fixed/api/usage/hourly?tz=Europe%2FParis&include_keepalive=true')).json;
  t.same([pings.entries[6].tokens, pings.entries[7].tokens, pings.entries[7].cost, pings.entries[7].requests], [2, 10, 0.00002, 0]);
});

t.test('hourly: UTC by default (budgets.timezone unset), any date', async (t) => {
  const h = (await fx.get('/fixed/api/usage/hourly?date=2026-11-30')).json;
  t.same([h.tz, h.date, h.hours], ['UTC', '2026-11-30', 24]);
  t.same(h.entries[23], { hour: '23:00', utc_offset: '+00:00', start: '2026-11-30T23:00:00.000Z', end: '2026-12-01T00:00:00.000Z', requests: 1, tokens: 100, cost: 0.0001 });
  t.same(h.low, h.entries[0], 'every hour of a past day has begun');
});

t.test('hourly: a half-hour zone splits UTC hours (Asia/Kolkata, +05:30)', async (t) => {
  const h = (await fx.get('/fixed/api/usage/hourly?tz=Asia/Kolkata&date=2026-12-01')).json;
  t.same([h.from, h.to, h.hours], ['2026-11-30T18:30:00.000Z', '2026-12-01T18:30:00.000Z', 24]);
  const used = h.entries.filter((e: { requests: number }) => e.requests > 0).map((e: { hour: string; utc_offset: string; requests: number; tokens: number }) => [e.hour, e.utc_offset, e.requests, e.tokens]);
  // 05:00 local is 23:30Z-00:30Z: R4 (23:59:59.999) and R3 (00:00); 15:00 local is 09:30Z-10:30Z: C1 R1 C2 C3.
  t.same(used, [['05:00', '+05:30', 2, 100], ['13:00', '+05:30', 1, 60], ['14:00', '+05:30', 1, 1000], ['15:00', '+05:30', 4, 2950]]);
  t.same(h.totals, { requests: 8, tokens: 4110, cost: 0.01246 });
});

t.test('hourly: the zone is echoed as the client named it; ClickHouse gets a name it takes', async (t) => {
  const entries = (h: { entries: { hour: string; requests: number; tokens: number; cost: number }[] }) => h.entries.map((e) => [e.hour, e.requests, e.tokens, e.cost]);
  const kolkata = (await fx.get('/fixed/api/usage/hourly?tz=Asia/Kolkata&date=2026-12-01')).json;
  t.equal(kolkata.tz, 'Asia/Kolkata', "not ICU's canonical Asia/Calcutta");
  const lower = await fx.get('/fixed/api/usage/hourly?tz=asia/kolkata&date=2026-12-01');
  t.equal(lower.status, 200, 'a lower-case name, which ClickHouse refuses, reaches it canonical');
  t.equal(lower.json.tz, 'asia/kolkata', 'a link name is echoed in the case given');
  t.same(entries(lower.json), entries(kolkata), 'the same hours');
  const calcutta = (await fx.get('/fixed/api/usage/hourly?tz=Asia/Calcutta&date=2026-12-01')).json;
  t.same([calcutta.tz, entries(calcutta)], ['Asia/Calcutta', entries(kolkata)], 'the old name names itself');
  const paris = (await fx.get('/fixed/api/usage/hourly?tz=europe/PARIS&date=2026-12-01')).json;
  t.same([paris.tz, paris.hours], ['Europe/Paris', 24], 'the canonical name in another case takes its spelling');
  t.equal((await fx.get('/fixed/api/usage/hourly?tz=utc&date=2026-12-01')).json.tz, 'UTC');
  const bad = await fx.get('/fixed/api/usage/hourly?tz=Asia/Nowhere');
  t.same([bad.status, bad.json.error.code, bad.json.error.param], [400, 'TOLLGATE_ERR_INVALID_QUERY', 'tz']);
});

t.test('aggregate() hands ClickHouse a zone it takes, whatever the case the config or a caller gave', async (t) => {
  const store = fx.app.tollgate.store;
  const day = { from: Date.parse('2026-11-30T18:30:00Z'), to: Date.parse('2026-12-01T18:30:00Z'), by: ['hour_epoch'] as const, sums: ['tokens'] as const };
  const named = await aggregate(store, { ...day, by: [...day.by], sums: [...day.sums], tz: 'Asia/Kolkata' });
  const lower = await aggregate(store, { ...day, by: [...day.by], sums: [...day.sums], tz: 'asia/kolkata' });
  t.same(lower, named, 'the budget day of a budgets.timezone written in lower case (the cost-anomaly alert reads so)');
  t.ok(named.length > 0);
});

t.test('hourly: daylight-saving days have 25 and 23 hours', async (t) => {
  const back = (await fx.get('/fixed/api/usage/hourly?tz=Europe/Paris&date=2026-10-25')).json;
  t.equal(back.hours, 25);
  t.same(back.entries.slice(1, 5).map((e: { hour: string; utc_offset: string; tokens: number }) => [e.hour, e.utc_offset, e.tokens]), [
    ['01:00', '+02:00', 0], ['02:00', '+02:00', 11], ['02:00', '+01:00', 22], ['03:00', '+01:00', 0],
  ]);
  t.equal(back.peak.utc_offset, '+01:00');
  const forward = (await fx.get('/fixed/api/usage/hourly?tz=Europe/Paris&date=2026-03-29')).json;
  t.equal(forward.hours, 23);
  t.same(forward.entries.slice(1, 3).map((e: { hour: string; utc_offset: string }) => [e.hour, e.utc_offset]), [['01:00', '+01:00'], ['03:00', '+02:00']]);
  t.equal(forward.peak, null, 'no hour used a token');
});

t.test('overview: today, week and month', async (t) => {
  const o = (await fx.get('/fixed/api/usage/overview')).json;
  t.equal(o.date, '2026-12-01');
  // Today: 7 client requests, 4 succeeded (R1 2.0 s, R2 1.0 s, C1 1.8 s, C2 3.0 s): 1.95 s on average.
  t.same(o.today, {
    from: '2026-12-01T00:00:00.000Z', to: '2026-12-01T10:30:00.000Z', requests: 7, tokens: 4010, cost: 0.01236, avg_response_s: 1.95,
    success_rate_pct: 57.14, top_model: { model: 'paid/big', tokens: 2160, share_pct: 53.87 },
  });
  // The week adds R4 (Monday 23:59:59.999, 0.8 s).
  t.same(o.week, {
    from: '2026-11-30T00:00:00.000Z', to: '2026-12-01T10:30:00.000Z', requests: 8, tokens: 4110, cost: 0.01246, avg_response_s: 1.72,
    success_rate_pct: 62.5, top_model: { model: 'paid/big', tokens: 2160, share_pct: 52.55 },
  });
  t.same({ ...o.month, from: undefined }, { ...o.today, from: undefined });
  t.equal(o.month.from, '2026-12-01T00:00:00.000Z');

  const usage = (await fx.get('/fixed/api/usage?period=week')).json;
  t.same([usage.summary.requests, usage.summary.tokens, usage.summary.cost], [o.week.requests, o.week.tokens, o.week.cost], 'agrees with /api/usage');

  const pings = (await fx.get('/fixed/api/usage/overview?include_keepalive=true')).json;
  t.same([pings.today.requests, pings.today.tokens, pings.today.cost, pings.today.top_model.share_pct], [7, 4022, 0.01238, 53.7]);
});

t.test('the production routes are registered and answer on the real clock', async (t) => {
  for (const path of ['/api/usage/overview', '/api/usage/cost', '/api/usage/projection', '/api/usage/combos', '/api/usage/hourly', '/api/usage/logs', '/api/usage/request-logs']) {
    const r = await fx.get(path);
    t.equal(r.status, 200, path);
  }
  t.not(NOW, Date.now());
});
