// Conformance, what comes back and what is recorded: a whole answer (text, stop reason, the five usage buckets, the
// cost in the row, the span), parallel tool calls, a stream (time to first token, usage counted once, the client
// format's terminal event), and for every provider exactly one record per request with the row, /metrics and the
// span agreeing on tokens and status. Requests are OpenAI Chat clients'.

import t from 'tap';
import { metricValue } from '../helpers/prom.js';
import { chat, send } from './clients.js';
import { FIRST_ARGS, SECOND_ARGS, TOOL_NAME, costOf, totalOf } from './providers.js';
import { answered, bucketsOf, eachProvider, near, rowOf, spanOf, startSuite } from './suite.js';

const suite = await startSuite(t);
const { gw } = suite;
/** The request ids sent to each provider by this file, for the ledger case. */
const sent = new Map<string, string[]>();
const note = (provider: string, id: string) => sent.set(provider, [...(sent.get(provider) ?? []), id]);
const TOKEN_TYPES = ['input', 'cached', 'cache_write', 'output', 'reasoning'];
const tokensMetric = async (provider: string) => {
  const m = await gw.metrics();
  return TOKEN_TYPES.reduce((a, type) => a + metricValue(m, 'tollgate_tokens_total', { provider, type }), 0);
};

eachProvider(t, suite, 'whole-answer', async (t, p, up) => {
  up.script({ kind: 'text' });
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: false });
  note(p.id, r.requestId);
  answered(t, r);
  const a = chat.parse(r.text, false);
  t.equal(a.text, p.text, 'the text');
  t.equal(a.finish, 'stop', 'stop reason');
  const row = await rowOf(gw, r.requestId);
  t.match(row, { provider: p.id, model: `${p.id}/${p.models.main}`, status: 'success', http_status: 200, error_type: '', usage_source: 'reported', stream: false });
  t.same(bucketsOf(row), p.usage, 'the five buckets');
  t.equal(Number(row.total_tokens), totalOf(p.usage), 'total = sum of the buckets');
  t.ok(near(Number(row.cost), costOf(p.usage, p.price)), `cost ${String(row.cost)} = ${costOf(p.usage, p.price)}`);
  t.equal(row.ttft_ms, null, 'no time to first token for a whole answer');
  const span = spanOf(gw, r.requestId);
  t.ok(span, 'a span');
  t.equal(span?.attributes['tollgate.usage.total_tokens'], totalOf(p.usage), 'span tokens');
  t.ok(near(Number(span?.attributes['tollgate.cost_usd']), costOf(p.usage, p.price)), 'span cost');
});

eachProvider(t, suite, 'parallel-tools', async (t, p, up) => {
  for (const stream of [false, true]) {
    up.script({ kind: 'tools', args: [FIRST_ARGS, SECOND_ARGS] });
    const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream, tools: true });
    note(p.id, r.requestId);
    answered(t, r);
    const a = chat.parse(r.text, stream);
    t.same(a.calls, [{ name: TOOL_NAME, args: FIRST_ARGS }, { name: TOOL_NAME, args: SECOND_ARGS }], `stream=${stream}: both calls, in order, whole arguments`);
    t.equal(a.finish, 'tool_calls', `stream=${stream}: stop reason tool_calls`);
    if (!stream) {
      const ids = (JSON.parse(r.text) as { choices: { message: { tool_calls: { id: string }[] } }[] }).choices[0]!.message.tool_calls.map((c) => c.id);
      t.equal(new Set(ids).size, 2, 'two distinct call ids');
    }
    const row = await rowOf(gw, r.requestId);
    t.match(row, { status: 'success', usage_source: 'reported' });
    t.same(bucketsOf(row), p.usage, `stream=${stream}: usage`);
  }
});

eachProvider(t, suite, 'stream', async (t, p, up) => {
  const tokensBefore = await tokensMetric(p.id);
  up.script({ kind: 'text' });
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: true });
  note(p.id, r.requestId);
  answered(t, r);
  const a = chat.parse(r.text, true);
  t.equal(a.text, p.text, 'the streamed text');
  t.equal(a.end, 'done', 'the client gets data: [DONE]');
  t.ok(r.text.endsWith('data: [DONE]\n\n'), 'nothing after [DONE]');
  t.equal(r.text.match(/^data: \[DONE\]$/gm)?.length, 1, 'one [DONE]');
  t.equal(a.finish, 'stop');
  const row = await rowOf(gw, r.requestId);
  t.match(row, { status: 'success', stream: true, usage_source: 'reported' });
  const ttft = Number(row.ttft_ms);
  t.ok(row.ttft_ms !== null && ttft > 0 && ttft <= Number(row.duration_ms), `time to first delta recorded (${ttft} ms of ${String(row.duration_ms)})`);
  t.same(bucketsOf(row), p.usage, 'usage counted once: the buckets of the whole answer');
  t.equal((await tokensMetric(p.id)) - tokensBefore, totalOf(p.usage), 'tollgate_tokens_total grew by the total once');
  const span = spanOf(gw, r.requestId);
  t.equal(span?.attributes['tollgate.ttft_ms'], ttft, 'the span has the same time to first token');
});

eachProvider(t, suite, 'ledgers', async (t, p) => {
  const ids = sent.get(p.id) ?? [];
  t.ok(ids.length >= 2, `${ids.length} requests sent by this file`);
  await gw.flush();
  const rows = await gw.rows(`provider = '${p.id}'`);
  t.same(rows.map((r) => String(r.request_id)).sort(), [...ids].sort(), 'exactly one row per request, no other');
  const m = await gw.metrics();
  const requests = ['success', 'failure', 'aborted'].reduce((a, status) => a + metricValue(m, 'tollgate_requests_total', { provider: p.id, status }), 0);
  t.equal(requests, ids.length, 'tollgate_requests_total counts each once');
  t.equal(metricValue(m, 'tollgate_requests_total', { provider: p.id, status: 'success' }), rows.filter((r) => r.status === 'success').length, 'statuses agree');
  const rowTokens = rows.reduce((a, r) => a + Number(r.total_tokens), 0);
  t.equal(TOKEN_TYPES.reduce((a, type) => a + metricValue(m, 'tollgate_tokens_total', { provider: p.id, type }), 0), rowTokens, 'metric tokens = row tokens');
  const spans = ids.map((id) => spanOf(gw, id));
  t.ok(spans.every((s) => s !== undefined), 'one span per request');
  t.equal(spans.reduce((a, s) => a + Number(s!.attributes['tollgate.usage.total_tokens']), 0), rowTokens, 'span tokens = row tokens');
  t.same(spans.map((s) => s!.attributes['tollgate.status']), ids.map((id) => rows.find((r) => r.request_id === id)!.status), 'span status = row status');
  const rowCost = rows.reduce((a, r) => a + Number(r.cost), 0);
  t.ok(Math.abs(metricValue(m, 'tollgate_cost_usd_total', { provider: p.id }) - rowCost) < 1e-9, 'metric cost = row cost');
});
