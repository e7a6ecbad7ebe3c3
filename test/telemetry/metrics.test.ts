// The Prometheus ledger and the span attribute mapping, both fed by finished usage records: exact values in the
// exposition text, GenAI semconv names and advisory buckets, '_other' for anything not configured, the writer's
// counters and queue gauge; and recordAttributes, which leaves unreported buckets out.

import t from 'tap';
import { Metrics, type RecordingState } from '../../src/telemetry/metrics.js';

const IDLE: RecordingState = { rows: 0, bytes: 0, oldestMs: null, up: true };
import { recordAttributes } from '../../src/telemetry/tracing.js';
import { makeRecord, type RecordInput, type UsageRecord } from '../../src/ledger/record.js';
import { NO_USAGE } from '../../src/ledger/types.js';
import { metricValue } from '../helpers/prom.js';

// Advisory bucket boundaries from the OpenTelemetry GenAI metric conventions, written out here independently.
const SEMCONV = {
  gen_ai_client_token_usage: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  gen_ai_client_operation_duration_seconds: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  gen_ai_server_time_to_first_token_seconds: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0],
};

function rec(over: Partial<RecordInput>): UsageRecord {
  return makeRecord({
    requestId: '018f7c1f-b1b8-7c06-9bf6-a0cf2144398c', startedAt: 1_715_774_400_000, endedAt: 1_715_774_401_500, endpoint: 'chat.completions',
    provider: 'openai', providerGroup: 'paid', model: 'openai/gpt-4o', requestedModel: 'openai/gpt-4o', modelKnown: true, apiKeyName: 'admin',
    stream: true, status: 'success', httpStatus: 200, errorType: '', usage: { input: 8, cached: 3, cacheWrite: null, output: 5, reasoning: 2 },
    usageSource: 'reported', cost: { cost: 0.00009375, listCost: 0.00009375 }, latency: { kind: 'stream', ttftMs: 250, totalMs: 1500 }, upstreamMs: 1400,
    ...over,
  });
}

const STREAMED = rec({});
const FAILED = rec({
  stream: false, status: 'failure', httpStatus: 429, errorType: '429', usage: NO_USAGE, usageSource: 'none', cost: { cost: 0, listCost: 0 },
  latency: { kind: 'unary', totalMs: 80 }, upstreamMs: 70,
});
const SUBSCRIPTION = rec({
  provider: 'anthropic', providerGroup: 'subscription', model: 'anthropic/claude-sonnet-4-5', requestedModel: 'anthropic/claude-sonnet-4-5', stream: false,
  usage: { input: 100, cached: 0, cacheWrite: 50, output: 20, reasoning: null }, cost: { cost: 0, listCost: 0.0006675 },
  latency: { kind: 'unary', totalMs: 3000 }, upstreamMs: 2990,
});
const UNLISTED = rec({ model: 'openai/gpt-9-preview', requestedModel: 'openai/gpt-9-preview', modelKnown: false, usage: { input: 1000, cached: null, cacheWrite: null, output: 100, reasoning: null }, cost: { cost: 0.0035, listCost: 0.0035 }, latency: { kind: 'stream', ttftMs: 30, totalMs: 500 }, upstreamMs: 495 });
const NOWHERE = rec({
  provider: '', providerGroup: '', model: '_other', requestedModel: 'nosuch/model', modelKnown: false, stream: false, status: 'failure', httpStatus: 404,
  errorType: 'TOLLGATE_ERR_MODEL_NOT_FOUND', usage: NO_USAGE, usageSource: 'none', cost: { cost: 0, listCost: 0 }, latency: { kind: 'unary', totalMs: 1 }, upstreamMs: null,
});

async function scrape(records: UsageRecord[], recording = () => IDLE): Promise<{ m: Metrics; text: string }> {
  const m = new Metrics(recording, { processMetrics: false });
  for (const r of records) m.observe(r);
  return { m, text: await m.registry.metrics() };
}

const OA = { provider: 'openai', model: 'openai/gpt-4o' };
const GA = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai', gen_ai_request_model: 'gpt-4o' };

t.test('requests, tokens per type and cost counters', async (t) => {
  const { text } = await scrape([STREAMED, FAILED, SUBSCRIPTION, STREAMED]);
  t.equal(metricValue(text, 'tollgate_requests_total', { ...OA, status: 'success' }), 2);
  t.equal(metricValue(text, 'tollgate_requests_total', { ...OA, status: 'failure' }), 1);
  t.equal(metricValue(text, 'tollgate_requests_total', { provider: 'anthropic', model: 'anthropic/claude-sonnet-4-5', status: 'success' }), 1);

  const tokens = (labels: Record<string, string>, type: string) => metricValue(text, 'tollgate_tokens_total', { ...labels, type });
  t.same(['input', 'cached', 'cache_write', 'output', 'reasoning'].map((ty) => tokens(OA, ty)), [16, 6, 0, 10, 4], 'each bucket, two records');
  const AN = { provider: 'anthropic', model: 'anthropic/claude-sonnet-4-5' };
  t.same(['input', 'cached', 'cache_write', 'output', 'reasoning'].map((ty) => tokens(AN, ty)), [100, 0, 50, 20, 0]);
  const series = (name: string, ...parts: string[]) => text.split('\n').filter((l) => l.startsWith(`${name}{`) && parts.every((p) => l.includes(p)));
  t.equal(series('tollgate_tokens_total', 'model="openai/gpt-4o"').length, 4, 'four series for the four reported buckets');
  t.same(series('tollgate_tokens_total', 'model="openai/gpt-4o"', 'type="cache_write"'), [], 'a null bucket adds no series');
  t.same(series('tollgate_tokens_total', 'model="anthropic/claude-sonnet-4-5"', 'type="cached"'), [], 'a zero bucket adds no series either');

  t.equal(metricValue(text, 'tollgate_cost_usd_total', { ...OA, group: 'paid' }), 2 * 0.00009375);
  t.equal(metricValue(text, 'tollgate_list_cost_usd_total', { ...OA, group: 'paid' }), 2 * 0.00009375);
  t.equal(metricValue(text, 'tollgate_cost_usd_total', { ...AN, group: 'subscription' }), 0, 'subscription: nothing billed');
  t.equal(metricValue(text, 'tollgate_list_cost_usd_total', { ...AN, group: 'subscription' }), 0.0006675, 'but the list cost is counted');
  t.match(text, /\n# TYPE tollgate_requests_total counter\n/);
  t.match(text, /\n# TYPE tollgate_cost_usd_total counter\n/);
});

t.test('gen_ai_client_token_usage: input side and output side, not the buckets', async (t) => {
  const { text } = await scrape([STREAMED, FAILED, SUBSCRIPTION]);
  const h = (type: string, suffix: string, labels: Record<string, string> = GA) => metricValue(text, `gen_ai_client_token_usage${suffix}`, { ...labels, gen_ai_token_type: type });
  t.equal(h('input', '_sum'), 11, 'input = uncached 8 + cached 3');
  t.equal(h('output', '_sum'), 7, 'output = 5 + reasoning 2');
  t.equal(h('input', '_count'), 1, 'a request with no usage is not observed');
  t.equal(h('output', '_count'), 1);
  const AN = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'anthropic', gen_ai_request_model: 'claude-sonnet-4-5' };
  t.equal(h('input', '_sum', AN), 150, 'input includes cache writes');
  t.equal(h('output', '_sum', AN), 20);
  t.equal(h('input', '_bucket', { ...GA, le: '4' }), 0);
  t.equal(h('input', '_bucket', { ...GA, le: '16' }), 1, '11 tokens land in the le=16 bucket');
  t.equal(h('output', '_bucket', { ...GA, le: '4' }), 0);
  t.equal(h('output', '_bucket', { ...GA, le: '16' }), 1);
  t.equal(h('input', '_bucket', { ...AN, le: '64' }), 0);
  t.equal(h('input', '_bucket', { ...AN, le: '256' }), 1);
  t.match(text, /\n# TYPE gen_ai_client_token_usage histogram\n/);
});

t.test('operation duration, time to first token and overhead histograms', async (t) => {
  const { text } = await scrape([STREAMED, FAILED, SUBSCRIPTION]);
  const dur = 'gen_ai_client_operation_duration_seconds';
  t.equal(metricValue(text, `${dur}_count`, GA), 2, 'success and failure both observed');
  t.equal(metricValue(text, `${dur}_sum`, { ...GA, error_type: '' }), 1.5, 'seconds, not milliseconds');
  t.equal(metricValue(text, `${dur}_count`, { ...GA, error_type: '429' }), 1, 'failures carry error_type');
  t.equal(metricValue(text, `${dur}_sum`, { ...GA, error_type: '429' }), 0.08);
  t.equal(metricValue(text, `${dur}_bucket`, { ...GA, error_type: '', le: '1.28' }), 0);
  t.equal(metricValue(text, `${dur}_bucket`, { ...GA, error_type: '', le: '2.56' }), 1);

  const ttft = 'gen_ai_server_time_to_first_token_seconds';
  t.equal(metricValue(text, `${ttft}_count`, GA), 1, 'only the stream has a time to first token');
  t.equal(metricValue(text, `${ttft}_sum`, GA), 0.25);
  t.equal(metricValue(text, `${ttft}_bucket`, { ...GA, le: '0.1' }), 0);
  t.equal(metricValue(text, `${ttft}_bucket`, { ...GA, le: '0.25' }), 1, 'a bucket bound is inclusive');
  t.equal(metricValue(text, `${ttft}_count`, { gen_ai_provider_name: 'anthropic' }), 0, 'no ttft for a unary request');

  t.equal(metricValue(text, 'tollgate_overhead_seconds_count', {}), 3);
  t.ok(Math.abs(metricValue(text, 'tollgate_overhead_seconds_sum', {}) - (0.1 + 0.01 + 0.01)) < 1e-12, 'overhead = total - upstream, in seconds');
  t.equal(metricValue(text, 'tollgate_overhead_seconds_bucket', { le: '0.01' }), 2);
  t.equal(metricValue(text, 'tollgate_overhead_seconds_bucket', { le: '0.1' }), 3);
});

t.test('histogram buckets are the GenAI semconv advisory buckets', async (t) => {
  const { text } = await scrape([STREAMED]);
  for (const [name, expected] of Object.entries(SEMCONV)) {
    const les = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"`, 'gm'))].map((m) => m[1]!);
    t.ok(les.length > 0, `${name} is exported`);
    const bounds = [...new Set(les)].filter((b) => b !== '+Inf').map(Number);
    t.same(bounds, expected, name);
    t.ok(les.includes('+Inf'), `${name} has the +Inf bucket`);
  }
});

t.test('anything not configured is labelled _other', async (t) => {
  const { text } = await scrape([UNLISTED, NOWHERE]);
  t.equal(metricValue(text, 'tollgate_requests_total', { provider: 'openai', model: '_other', status: 'success' }), 1, 'an unlisted model of a known provider');
  t.equal(metricValue(text, 'tollgate_tokens_total', { provider: 'openai', model: '_other', type: 'input' }), 1000);
  t.equal(metricValue(text, 'tollgate_cost_usd_total', { provider: 'openai', model: '_other', group: 'paid' }), 0.0035);
  t.equal(metricValue(text, 'gen_ai_client_token_usage_sum', { gen_ai_provider_name: 'openai', gen_ai_request_model: '_other', gen_ai_token_type: 'input' }), 1000);
  t.equal(metricValue(text, 'tollgate_requests_total', { provider: '_other', model: '_other', status: 'failure' }), 1, 'no provider at all');
  t.equal(metricValue(text, 'tollgate_cost_usd_total', { provider: '_other', model: '_other', group: '_other' }), 0);
  t.equal(metricValue(text, 'gen_ai_client_operation_duration_seconds_count', { gen_ai_provider_name: '_other', gen_ai_request_model: '_other', error_type: 'TOLLGATE_ERR_MODEL_NOT_FOUND' }), 1);
  t.notMatch(text, /gpt-9-preview|nosuch/, 'the raw requested model never becomes a label value');
  t.notMatch(text, /provider=""/, 'no empty provider label');
});

t.test('writer counters and the spool and store gauges', async (t) => {
  let state: RecordingState = { rows: 7, bytes: 4096, oldestMs: Date.now() - 30_000, up: false };
  const { m, text: fresh } = await scrape([], () => state);
  t.ok(fresh.split('\n').includes('tollgate_usage_rows_dropped_total{reason="spool_full"} 0'), 'the spool_full series exists at 0 before any drop');
  t.ok(fresh.split('\n').includes('tollgate_usage_rows_written_total 0'));
  t.ok(fresh.split('\n').includes('tollgate_usage_rows_recovered_total 0'));
  m.rowsWritten.inc(5);
  m.rowsWritten.inc(3);
  m.rowsDropped.inc({ reason: 'spool_full' }, 2);
  m.rowsRecovered.inc(11);
  let text = await m.registry.metrics();
  t.equal(metricValue(text, 'tollgate_usage_rows_written_total', {}), 8);
  t.equal(metricValue(text, 'tollgate_usage_rows_dropped_total', { reason: 'spool_full' }), 2);
  t.equal(metricValue(text, 'tollgate_usage_rows_recovered_total', {}), 11);
  t.equal(metricValue(text, 'tollgate_spool_rows', {}), 7, 'the gauges read the spool at scrape time');
  t.equal(metricValue(text, 'tollgate_spool_bytes', {}), 4096);
  const age = metricValue(text, 'tollgate_spool_oldest_seconds', {});
  t.ok(age >= 30 && age < 40, `oldest ${age} s`);
  t.equal(metricValue(text, 'tollgate_store_up', {}), 0);
  t.match(text, /\n# TYPE tollgate_spool_rows gauge\n/);
  state = IDLE;
  text = await m.registry.metrics();
  t.same(['tollgate_spool_rows', 'tollgate_spool_bytes', 'tollgate_spool_oldest_seconds', 'tollgate_store_up'].map((n) => metricValue(text, n, {})), [0, 0, 0, 1], 'and follow it');
});

t.test('process metrics are optional and registries are per instance', async (t) => {
  const quiet = await scrape([STREAMED]);
  t.notMatch(quiet.text, /process_cpu_user_seconds_total/);
  const loud = new Metrics(() => IDLE);
  t.match(await loud.registry.metrics(), /process_cpu_user_seconds_total/);
  const other = await scrape([]);
  t.equal(metricValue(other.text, 'tollgate_requests_total', {}), 0, 'a second instance starts from zero');
  t.equal(metricValue(quiet.text, 'tollgate_requests_total', {}), 1);
});

t.test('recordAttributes: the span carries the record, unreported buckets left out', async (t) => {
  t.same(recordAttributes(STREAMED), {
    'tollgate.request_id': '018f7c1f-b1b8-7c06-9bf6-a0cf2144398c',
    'tollgate.kind': 'request',
    'tollgate.dispatched': true,
    'tollgate.provider': 'openai',
    'tollgate.provider_group': 'paid',
    'tollgate.api_key': 'admin',
    'tollgate.status': 'success',
    'tollgate.stream': true,
    'http.response.status_code': 200,
    'tollgate.usage.total_tokens': 18,
    'tollgate.usage.source': 'reported',
    'tollgate.cost_usd': 0.00009375,
    'tollgate.list_cost_usd': 0.00009375,
    'gen_ai.usage.input_tokens': 11,
    'gen_ai.usage.output_tokens': 7,
    'tollgate.usage.input_tokens': 8,
    'tollgate.usage.cached_tokens': 3,
    'tollgate.usage.output_tokens': 5,
    'tollgate.usage.reasoning_tokens': 2,
    'tollgate.upstream_ms': 1400,
    'tollgate.ttft_ms': 250,
  });
  const sub = recordAttributes(SUBSCRIPTION);
  t.equal(sub['gen_ai.usage.input_tokens'], 150, 'input + cached + cache write');
  t.equal(sub['tollgate.usage.cached_tokens'], 0, 'a reported zero is kept');
  t.equal(sub['tollgate.usage.cache_write_tokens'], 50);
  t.notOk('tollgate.usage.reasoning_tokens' in sub, 'a null bucket is left out');
  t.notOk('tollgate.ttft_ms' in sub, 'unary: no ttft');
  t.equal(sub['tollgate.cost_usd'], 0);
  t.equal(sub['tollgate.list_cost_usd'], 0.0006675);

  const failed = recordAttributes(FAILED);
  for (const k of ['gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens', 'tollgate.usage.input_tokens', 'tollgate.usage.cached_tokens', 'tollgate.usage.cache_write_tokens', 'tollgate.usage.output_tokens', 'tollgate.usage.reasoning_tokens']) {
    t.notOk(k in failed, `no usage reported: ${k} left out`);
  }
  t.equal(failed['error.type'], '429');
  t.equal(failed['tollgate.usage.total_tokens'], 0);
  t.equal(failed['tollgate.status'], 'failure');

  const nowhere = recordAttributes(NOWHERE);
  t.notOk('tollgate.upstream_ms' in nowhere, 'no upstream call: left out');
  t.equal(nowhere['error.type'], 'TOLLGATE_ERR_MODEL_NOT_FOUND');
  t.notOk('tollgate.ttft_ms' in recordAttributes(rec({ latency: { kind: 'stream', ttftMs: null, totalMs: 30_000 } })), 'a stream that never produced a token');
  t.notOk('error.type' in recordAttributes(STREAMED), 'no error.type on success');
});
