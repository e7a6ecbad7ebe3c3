// The series of what the config names exist from the start at 0 (src/telemetry/metrics.ts, declareConfigured): a
// series made at its first event is first scraped with that event already in it, which Prometheus's increase() and
// rate() never count, so after every start the dashboards missed each model's first requests (a fresh gateway that
// had answered 15 requests showed 0). A reload declares what it adds.

import t from 'tap';
import { spawnSync } from 'node:child_process';
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

// The GenAI histograms had no series until their first observation, while the counters beside them were at 0: a
// panel or a rule on histogram_quantile() or rate(..._count) had nothing to show 0 on.
t.test('before any request: each listed model\'s histograms exist at 0 (buckets, _sum, _count), and the text is valid', async (t) => {
  const text = await gw.metrics();
  const genai = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'demo', gen_ai_request_model: 'echo-1' };
  const histograms: [string, Record<string, string>, number][] = [
    ['gen_ai_client_operation_duration_seconds', { ...genai, error_type: '' }, 14],
    ['gen_ai_client_token_usage', { ...genai, gen_ai_token_type: 'input' }, 14],
    ['gen_ai_client_token_usage', { ...genai, gen_ai_token_type: 'output' }, 14],
    ['gen_ai_server_time_to_first_token_seconds', genai, 16],
  ];
  for (const [name, labels, bounds] of histograms) {
    const what = `${name} ${labels.gen_ai_token_type ?? ''}`;
    t.same(metricSamples(text, `${name}_count`, labels), [0], `${what}: _count`);
    t.same(metricSamples(text, `${name}_sum`, labels), [0], `${what}: _sum`);
    t.same(metricSamples(text, `${name}_bucket`, labels), new Array(bounds + 1).fill(0), `${what}: every bucket, +Inf included`);
  }
  // promtool (Debian's prometheus package; .ci/run installs it) reads the exposition as a scrape would.
  const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  t.equal(check.status, 0, 'promtool check metrics: a valid exposition');
  t.equal(check.stdout + check.stderr, '', 'with nothing to say about it');
});

t.test('a reload declares the models it adds', async (t) => {
  gw.holder.replace(testConfig(raw({ more: { ...DEMO_PROVIDER, models: { m2: { kind: 'llm' } } } }), dataDir));
  const text = await gw.metrics();
  t.same(metricSamples(text, 'tollgate_requests_total', { provider: 'more', model: 'more/m2', status: 'success' }), [0]);
});
