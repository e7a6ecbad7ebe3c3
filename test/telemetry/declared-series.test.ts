// The series of what the config names exist from the start at 0 (src/telemetry/metrics.ts, declareConfigured): a
// series made at its first event is first scraped with that event already in it, which Prometheus's increase() and
// rate() never count, so after every start the dashboards missed each model's first requests (a fresh gateway that
// had answered 15 requests showed 0). A reload declares what it adds.

import t from 'tap';
import { DEMO_PROVIDER, startApp, testConfig } from '../helpers/app.js';
import { metricSamples } from '../helpers/prom.js';
import { tempDir } from '../helpers/tmp.js';

const dataDir = tempDir(t);
const raw = (extra: Record<string, unknown> = {}) => ({
  providers: { demo: DEMO_PROVIDER, ...extra },
  combos: { duo: { strategy: 'fallback', models: ['demo/echo-1'] } },
});
const gw = await startApp(t, raw(), { dataDir });

t.test('before any request: each listed model and combo has its series at 0', async (t) => {
  const text = await gw.metrics();
  for (const status of ['success', 'failure', 'aborted']) {
    t.same(metricSamples(text, 'tollgate_requests_total', { provider: 'demo', model: 'demo/echo-1', status }), [0], `requests ${status}`);
    t.same(metricSamples(text, 'tollgate_combo_requests_total', { combo: 'duo', provider: 'demo', model: 'demo/echo-1', status }), [0], `combo requests ${status}, by the member that may answer`);
    t.same(metricSamples(text, 'tollgate_combo_attempts_total', { combo: 'duo', provider: 'demo', model: 'demo/echo-1', status }), [0], `a listed member's attempts ${status}`);
  }
  for (const type of ['input', 'cached', 'cache_write', 'output', 'reasoning']) {
    t.same(metricSamples(text, 'tollgate_tokens_total', { provider: 'demo', model: 'demo/echo-1', type }), [0], `tokens ${type}`);
  }
  t.same(metricSamples(text, 'tollgate_cost_usd_total', { provider: 'demo', model: 'demo/echo-1', group: 'paid' }), [0], 'cost');
});

t.test('a reload declares the models it adds', async (t) => {
  gw.holder.replace(testConfig(raw({ more: { ...DEMO_PROVIDER, models: { m2: { kind: 'llm' } } } }), dataDir));
  const text = await gw.metrics();
  t.same(metricSamples(text, 'tollgate_requests_total', { provider: 'more', model: 'more/m2', status: 'success' }), [0]);
});
