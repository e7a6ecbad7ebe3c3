// GET /api/usage: the spec's shape, computed in ClickHouse, for every accepted period; unknown periods are 400.
// Rows are inserted with known timestamps so each period's window is checked against data, not against "now".

import t from 'tap';
import { request } from 'undici';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { testConfig, DEMO_PROVIDER } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

// Thursday 2026-11-19 15:00 UTC: the week began Monday 2026-11-16, the month on 2026-11-01.
const NOW = Date.UTC(2026, 10, 19, 15, 0, 0);
const H = 3_600_000;
const D = 24 * H;

const holder = new ConfigHolder(testConfig({ providers: { demo: DEMO_PROVIDER } }, tempDir(t)));
const app = await build({ config: holder, logger: false, processMetrics: false });
// Re-register the usage routes on a fixed clock: the production route reads Date.now.
await app.register((await import('../../src/api/usage.js')).usageRoutes, { store: app.tollgate.store, now: () => NOW, prefix: '/fixed' });
await app.listen({ host: '127.0.0.1', port: 0 });
await app.tollgate.storeReady;
t.teardown(() => app.close());
const addr = app.server.address();
const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

function row(at: number, model: string, input: number, output: number, cost: number) {
  const [provider] = model.split('/');
  return toRow(
    makeRecord({
      requestId: uuidv7(at), startedAt: at, endedAt: at + 100, endpoint: 'chat.completions', provider: provider!, providerGroup: 'paid',
      model, requestedModel: model, modelKnown: true, apiKeyName: 'anonymous', stream: false, status: 'success', httpStatus: 200,
      errorType: '', usage: { input, cached: null, cacheWrite: null, output, reasoning: null }, usageSource: 'reported',
      cost: { cost, listCost: cost }, latency: { kind: 'unary', totalMs: 100 }, upstreamMs: 90,
    }),
  );
}

const rows = [
  row(NOW - 1 * H, 'demo/echo-1', 100, 50, 0.0002), // today
  row(NOW - 2 * H, 'demo/echo-1', 10, 5, 0.00002), // today
  row(NOW - 3 * H, 'demo/other', 1000, 0, 0.001), // today
  row(NOW - 16 * H, 'demo/echo-1', 7, 3, 0.1), // yesterday 23:00, inside 24h
  row(NOW - 30 * H, 'demo/echo-1', 1, 1, 0.3), // yesterday 09:00
  row(NOW - 3 * D - 15 * H, 'demo/echo-1', 2, 2, 0.2), // Monday 00:00 exactly: in week, in 7d
  row(NOW - 3 * D - 15 * H - 1, 'demo/echo-1', 4, 4, 0.4), // Sunday 23:59:59.999: not in week, in 7d
  row(NOW - 10 * D, 'demo/echo-1', 8, 8, 0.8), // 2026-11-09: month, 30d, not 7d
  row(NOW - 25 * D, 'demo/echo-1', 16, 16, 1.6), // 2026-10-25: 30d only
];
await app.tollgate.store.insert('requests', rows, 'fixture-batch');
// The same batch again, as the writer retries it (same deduplication token): it must not count twice, in the raw
// table or in the hourly rollup the report reads.
await app.tollgate.store.insert('requests', rows, 'fixture-batch');

interface Usage {
  period: string;
  date: string;
  summary: { requests: number; tokens: number; cost: number };
  byModel: { model: string; requests: number; tokens: number; cost: number }[];
}

async function usage(period: string, prefix = '/fixed'): Promise<{ status: number; body: Usage & { error?: { code: string; message: string } } }> {
  const res = await request(`${base}${prefix}/api/usage?period=${encodeURIComponent(period)}`);
  return { status: res.statusCode, body: (await res.body.json()) as Usage & { error?: { code: string; message: string } } };
}

const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;

t.test('today: spec shape, byModel sorted by tokens, retried insert counted once', async (t) => {
  const { status, body } = await usage('today');
  t.equal(status, 200);
  t.equal(body.period, 'today');
  t.equal(body.date, '2026-11-19');
  t.same(body.summary, { requests: 3, tokens: 1165, cost: 0.00122 });
  t.same(body.byModel, [
    { model: 'demo/other', requests: 1, tokens: 1000, cost: 0.001 },
    { model: 'demo/echo-1', requests: 2, tokens: 165, cost: 0.00022 },
  ]);
});

const expected: Record<string, { requests: number; tokens: number; cost: number; date: string }> = {
  yesterday: { requests: 2, tokens: 12, cost: 0.4, date: '2026-11-18' },
  '24h': { requests: 4, tokens: 1175, cost: 0.10122, date: '2026-11-19' },
  week: { requests: 6, tokens: 1181, cost: 0.60122, date: '2026-11-19' },
  '7d': { requests: 7, tokens: 1189, cost: 1.00122, date: '2026-11-19' },
  month: { requests: 8, tokens: 1205, cost: 1.80122, date: '2026-11-19' },
  '30d': { requests: 9, tokens: 1237, cost: 3.40122, date: '2026-11-19' },
};

for (const [period, e] of Object.entries(expected)) {
  t.test(`period ${period}`, async (t) => {
    const { status, body } = await usage(period);
    t.equal(status, 200);
    t.equal(body.period, period);
    t.equal(body.date, e.date);
    t.equal(body.summary.requests, e.requests);
    t.equal(body.summary.tokens, e.tokens);
    t.ok(close(body.summary.cost, e.cost), `cost ${body.summary.cost} = ${e.cost}`);
    t.equal(body.byModel.reduce((a, m) => a + m.requests, 0), e.requests, 'byModel adds up to the summary');
  });
}

t.test('an unknown period is a 400 that lists the accepted ones', async (t) => {
  const { status, body } = await usage('fortnight');
  t.equal(status, 400);
  t.equal(body.error?.code, 'TOLLGATE_ERR_INVALID_PERIOD');
  for (const p of ['today', 'yesterday', '24h', 'week', '7d', 'month', '30d']) t.match(body.error?.message, p);
});

t.test('the production route answers on the real clock', async (t) => {
  const { status, body } = await usage('today', '');
  t.equal(status, 200);
  t.equal(body.date, new Date().toISOString().slice(0, 10));
});

t.test('/health and /ready', async (t) => {
  const h = await request(`${base}/health`);
  t.same(await h.body.json(), { status: 'ok' });
  const r = await request(`${base}/ready`);
  t.equal(r.statusCode, 200);
  t.same(await r.body.json(), { status: 'ready', store: 'embedded', spooled: 0 });
});
