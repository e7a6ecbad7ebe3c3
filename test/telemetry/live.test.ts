// The in-flight registry (src/telemetry/live.ts), fed through a real Ledger: client requests only, progress and
// cost so far from the announced snapshot, gone when their record is published, and the two gauges.

import t from 'tap';
import { Ledger } from '../../src/ledger/ledger.js';
import { makeRecord, type RecordInput, type UsageRecord } from '../../src/ledger/record.js';
import { NO_USAGE } from '../../src/ledger/types.js';
import { parseConfig } from '../../src/config/load.js';
import { Metrics } from '../../src/telemetry/metrics.js';
import { LiveRequests, watchInflight } from '../../src/telemetry/live.js';
import { metricValue } from '../helpers/prom.js';

const config = parseConfig({
  providers: { openai: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1/v1', price: { input: 2, output: 10 }, models: { 'gpt-4o': { kind: 'llm' } } } },
});
const T0 = 1_764_000_000_000;

const rec = (over: Partial<RecordInput>): UsageRecord => makeRecord({
  requestId: 'r1', startedAt: T0, endedAt: T0, endpoint: 'chat.completions', provider: 'openai', providerGroup: 'paid', model: 'openai/gpt-4o',
  requestedModel: 'openai/gpt-4o', modelKnown: true, apiKeyName: 'admin', stream: true, status: 'success', httpStatus: 200, errorType: '',
  usage: { ...NO_USAGE, input: 1000 }, usageSource: 'estimated', cost: { cost: 0, listCost: 0 }, latency: { kind: 'stream', ttftMs: null, totalMs: 0 }, upstreamMs: null,
  ...over,
});

const NONE = () => ({ streamedTokens: 0, estimatedTotal: null, estimatedInput: null });

t.test('a request in flight: listed with progress and cost so far; gone with its record', async (t) => {
  const ledger = new Ledger((err) => t.fail(String(err)));
  let now = T0 + 1500;
  const live = new LiveRequests(() => config, () => now);
  live.attach(ledger);
  const changes: number[] = [];
  live.onChange(() => changes.push(live.size));
  const metrics = new Metrics(() => ({ rows: 0, bytes: 0, oldestMs: null, up: true }), { processMetrics: false });
  watchInflight(metrics, live);

  let streamed = 40;
  ledger.begin('r1', () => rec({}), () => ({ streamedTokens: streamed, estimatedTotal: 200, estimatedInput: null }));
  ledger.begin('a1', () => rec({ requestId: 'a1', kind: 'attempt', parentId: 'r1' }), NONE);
  ledger.begin('k1', () => rec({ requestId: 'k1', kind: 'keepalive' }), NONE);
  t.equal(live.size, 1, 'attempts and keep-alive pings are not listed');
  t.same(live.list(), [{
    request_id: 'r1', model: 'openai/gpt-4o', requested_model: 'openai/gpt-4o', provider: 'openai', combo: null, endpoint: 'chat.completions',
    stream: true, api_key_name: 'admin', started_at: new Date(T0).toISOString(), duration_s: 1.5, streamed_tokens: 40, estimated_total: 200,
    // 1000 input x $2 + 40 output x $10 per 1M
    cost_so_far: 0.0024,
  }]);
  streamed = 120;
  now += 500;
  t.match(live.list()[0], { streamed_tokens: 120, duration_s: 2, cost_so_far: 0.0032 });
  let text = await metrics.registry.metrics();
  t.equal(metricValue(text, 'tollgate_inflight_requests', {}), 1);
  t.equal(metricValue(text, 'tollgate_inflight_tokens', {}), 120);

  ledger.publish(rec({ requestId: 'a1', kind: 'attempt', parentId: 'r1' }));
  t.equal(live.size, 1, 'an attempt\'s record does not end its request');
  ledger.publish(rec({}));
  t.same(live.list(), []);
  t.same(changes, [1, 0], 'told when it came and when it went');
  text = await metrics.registry.metrics();
  t.equal(metricValue(text, 'tollgate_inflight_requests', {}), 0);
  t.equal(metricValue(text, 'tollgate_inflight_tokens', {}), 0);
});

t.test('nothing streamed yet, no max tokens: 0 tokens, no estimate, cost of nothing known', async (t) => {
  const ledger = new Ledger((err) => t.fail(String(err)));
  const live = new LiveRequests(() => config, () => T0);
  live.attach(ledger);
  ledger.begin('r2', () => rec({ requestId: 'r2', stream: false, model: '_other', provider: '_other', requestedModel: 'nosuch/x' }), NONE);
  t.match(live.list()[0], { request_id: 'r2', streamed_tokens: 0, estimated_total: null, cost_so_far: 0 });
});

t.test('a paid model no price covers: its cost so far is unknown (null), not $0, once it spends tokens', async (t) => {
  const unpriced = parseConfig({
    providers: {
      vendor: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1/v1', catalog: '', models: { m: { kind: 'llm' } } },
      sub: { group: 'subscription', format: 'openai', base_url: 'http://127.0.0.1:1/v1', catalog: '', models: { m: { kind: 'llm' } } },
    },
  });
  const ledger = new Ledger((err) => t.fail(String(err)));
  const live = new LiveRequests(() => unpriced, () => T0);
  live.attach(ledger);
  let streamed = 0;
  const empty = { ...NO_USAGE };
  ledger.begin('p1', () => rec({ requestId: 'p1', model: 'vendor/m', provider: 'vendor', usage: empty }), () => ({ streamedTokens: streamed, estimatedTotal: null, estimatedInput: null }));
  t.match(live.list()[0], { request_id: 'p1', cost_so_far: 0 }, 'nothing spent yet: a known 0');
  streamed = 30;
  t.match(live.list()[0], { request_id: 'p1', cost_so_far: null }, 'tokens spent, no price: unknown');
  ledger.begin('s1', () => rec({ requestId: 's1', model: 'sub/m', provider: 'sub', providerGroup: 'subscription' }), () => ({ streamedTokens: 30, estimatedTotal: null, estimatedInput: null }));
  t.match(live.list().find((r) => r.request_id === 's1'), { cost_so_far: 0 }, 'a subscription bills nothing: a known 0');
});

t.test('a price edited while a request runs: its cost so far stays at the prices it began with, as its row does', async (t) => {
  const dearer = parseConfig({
    providers: { openai: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:1/v1', price: { input: 200, output: 1000 }, models: { 'gpt-4o': { kind: 'llm' } } } },
  });
  let current = config;
  const ledger = new Ledger((err) => t.fail(String(err)));
  const live = new LiveRequests(() => current, () => T0);
  live.attach(ledger);
  ledger.begin('e1', () => rec({ requestId: 'e1' }), () => ({ streamedTokens: 40, estimatedTotal: null, estimatedInput: null }));
  current = dearer; // a live edit
  ledger.begin('e2', () => rec({ requestId: 'e2' }), () => ({ streamedTokens: 40, estimatedTotal: null, estimatedInput: null }));
  const by = Object.fromEntries(live.list().map((r) => [r.request_id, r.cost_so_far]));
  // 1000 input x $2 + 40 output x $10 per 1M; before, the new prices: 0.24
  t.equal(by.e1, 0.0024, 'begun before the edit: the old prices');
  t.equal(by.e2, 0.24, 'begun after it: the new ones');
});

t.test('the input: as reported once it is, else as estimated from the request sent (Progress.estimatedInput)', async (t) => {
  const ledger = new Ledger((err) => t.fail(String(err)));
  const live = new LiveRequests(() => config, () => T0);
  live.attach(ledger);
  // OpenAI streams report usage at their end: until then the input is the estimate of the request sent.
  ledger.begin('i1', () => rec({ requestId: 'i1', usage: NO_USAGE, usageSource: 'none' }), () => ({ streamedTokens: 40, estimatedTotal: null, estimatedInput: 20_000 }));
  // Anthropic reports the input when its stream opens: the report is what counts.
  ledger.begin('i2', () => rec({ requestId: 'i2', usage: { ...NO_USAGE, input: 1000 }, usageSource: 'reported' }), () => ({ streamedTokens: 40, estimatedTotal: null, estimatedInput: 20_000 }));
  const by = Object.fromEntries(live.list().map((r) => [r.request_id, r.cost_so_far]));
  t.equal(by.i1, 0.0404, '20,000 estimated input x $2 + 40 output x $10 per 1M');
  t.equal(by.i2, 0.0024, '1,000 reported input x $2 + 40 output x $10 per 1M');
});

t.test('a combo: the member in flight, and its finished attempts\' cost plus the one in flight\'s so far', async (t) => {
  const ledger = new Ledger((err) => t.fail(String(err)));
  const live = new LiveRequests(() => config, () => T0);
  live.attach(ledger);
  // Its record so far: one attempt finished ($0.01), no route taken yet.
  const combo = () => rec({ requestId: 'c1', kind: 'combo', combo: 'pair', requestedModel: 'pair', model: '_other', provider: '_other', providerGroup: '', cost: { cost: 0.01, listCost: 0.01 } });
  const attempt = { model: 'openai/gpt-4o', provider: 'openai', usage: NO_USAGE, streamedTokens: 40, estimatedInput: 1000 };
  ledger.begin('c1', combo, () => ({ streamedTokens: 40, estimatedTotal: null, estimatedInput: null, attempts: [attempt] }));
  // $0.01 + 1000 estimated input x $2 + 40 output x $10 per 1M
  t.match(live.list()[0], { request_id: 'c1', combo: 'pair', model: 'openai/gpt-4o', provider: 'openai', cost_so_far: 0.0124 });
});
