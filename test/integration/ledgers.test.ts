// The official `openai` client against Tollgate against a fake OpenAI upstream on a real socket. For streamed,
// non-streamed, failed and aborted requests, the ClickHouse row, the /metrics text and the span agree on tokens
// and cost, and the numbers are the ones the upstream reported, bucketed without double counting.

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { DEFAULT_USAGE, DEFAULT_WORDS, fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, { providers: { fake: fakeProvider(up.baseUrl) } });
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });

// DEFAULT_USAGE: prompt 11 (3 cached), completion 7 (2 reasoning). Price: input 2.5, cached 1.25, output 10 per 1M.
const EXPECT = { input: 8, cached: 3, output: 5, reasoning: 2, total: 18 };
const EXPECT_COST = (8 * 2.5 + 3 * 1.25 + 5 * 10 + 2 * 10) / 1e6;

function spanFor(requestId: string) {
  return gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === requestId);
}

t.test('non-streamed: response passes through, row + metrics + span agree', async (t) => {
  const res = await client.chat.completions.create({ model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.choices[0]?.message.content, 'Hello from the fake upstream');
  t.equal(res.usage?.prompt_tokens, DEFAULT_USAGE.prompt_tokens, 'client sees upstream usage unchanged');
  const sent = up.received.at(-1)!;
  t.equal(sent.body.model, 'gpt-4o', 'provider prefix removed before sending upstream');
  t.equal(sent.headers.authorization, 'Bearer sk-upstream-secret-123', 'auth injected from config');
  t.notOk(sent.body.stream_options, 'no stream_options on a non-streamed request');
  t.match(sent.headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, 'trace context propagated upstream');

  const [row] = await gw.rows(`model = 'fake/gpt-4o' AND stream = false`);
  t.ok(row, 'row written');
  t.match(row, {
    provider: 'fake', provider_group: 'paid', requested_model: 'fake/gpt-4o', api_key_name: 'anonymous',
    status: 'success', http_status: 200, error_type: '', usage_source: 'reported', endpoint: 'chat.completions',
  });
  t.same(
    [row!.input_tokens, row!.cached_tokens, row!.cache_write_tokens, row!.output_tokens, row!.reasoning_tokens].map((v) => (v === null ? null : Number(v))),
    [EXPECT.input, EXPECT.cached, null, EXPECT.output, EXPECT.reasoning],
    'five buckets: cached out of input, reasoning out of output, cache write not reported',
  );
  t.equal(Number(row!.total_tokens), EXPECT.total);
  t.equal(Number(row!.cost), EXPECT_COST);
  t.equal(Number(row!.list_cost), EXPECT_COST);
  t.match(String(row!.request_id), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'UUIDv7');
  t.equal(row!.ttft_ms, null, 'no time to first token for a unary request');
  t.ok(Number(row!.upstream_ms) > 0 && Number(row!.upstream_ms) <= Number(row!.duration_ms), 'upstream time within duration');

  const span = spanFor(String(row!.request_id));
  t.ok(span, 'span recorded');
  t.equal(span!.name, 'chat fake/gpt-4o');
  t.equal(span!.attributes['gen_ai.usage.input_tokens'], EXPECT.input + EXPECT.cached);
  t.equal(span!.attributes['gen_ai.usage.output_tokens'], EXPECT.output + EXPECT.reasoning);
  t.equal(span!.attributes['tollgate.usage.total_tokens'], EXPECT.total);
  t.equal(span!.attributes['tollgate.cost_usd'], EXPECT_COST);
  t.equal(span!.attributes['gen_ai.response.id'], res.id);
  const child = gw.spans.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === span!.spanContext().spanId);
  t.ok(child, 'child span for the upstream call');
  t.equal(child!.attributes['http.response.status_code'], 200);
  t.equal(String(sent.headers.traceparent).split('-')[2], child!.spanContext().spanId, 'upstream sees the child span as parent');
});

t.test('streamed: chunks pass through, usage asked for but not forwarded, ledgers agree', async (t) => {
  const stream = await client.chat.completions.create({ model: 'fake/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  let text = '';
  let chunks = 0;
  let usageSeen = false;
  for await (const c of stream) {
    chunks++;
    text += c.choices[0]?.delta?.content ?? '';
    if (c.usage) usageSeen = true;
  }
  t.equal(text, 'Hello from the fake upstream');
  t.notOk(usageSeen, 'the usage chunk the client did not ask for is not forwarded');
  t.equal(chunks, 7, 'role chunk + 5 content chunks + finish chunk');
  t.same(up.received.at(-1)!.body.stream_options, { include_usage: true }, 'gateway asked upstream for usage');

  const [row] = await gw.rows(`stream = true AND status = 'success'`);
  t.equal(Number(row!.total_tokens), EXPECT.total);
  t.equal(Number(row!.cost), EXPECT_COST);
  t.equal(row!.usage_source, 'reported');
  t.ok(Number(row!.ttft_ms) > 0, 'time to first token recorded');
  const span = spanFor(String(row!.request_id));
  t.equal(span!.attributes['tollgate.usage.total_tokens'], EXPECT.total);
});

t.test('streamed with include_usage from the client: the usage chunk is forwarded', async (t) => {
  const stream = await client.chat.completions.create({
    model: 'fake/gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }],
  });
  let usage: OpenAI.CompletionUsage | undefined | null;
  for await (const c of stream) if (c.usage) usage = c.usage;
  t.equal(usage?.prompt_tokens, 11);
  t.equal(usage?.completion_tokens_details?.reasoning_tokens, 2);
});

t.test('upstream error: status, body and Retry-After reach the client; recorded as failure', async (t) => {
  up.next({ kind: 'error', status: 429, body: { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }, headers: { 'retry-after': '7' } });
  const err = await client.chat.completions.create({ model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.RateLimitError, 'SDK sees a 429');
  const e = err as InstanceType<typeof OpenAI.RateLimitError>;
  t.equal(e.headers?.get('retry-after'), '7');
  t.equal((e.error as { message?: string }).message, 'Rate limit reached', 'upstream body unchanged');
  const [row] = await gw.rows(`http_status = 429`);
  t.match(row, { status: 'failure', error_type: '429', usage_source: 'none', total_tokens: 0 });
  t.equal(row!.input_tokens, null, 'not reported is null, not zero');
});

// The aborted stream's estimate (src/wire/estimate.ts, gpt-4o: o200k_base): the input from the request (3 per
// message + its role and text + 3 priming), the output from the three words streamed.
const ABORT_INPUT = 3 + countTokens('user') + countTokens('hi') + 3;
const ABORT_OUTPUT = countTokens(DEFAULT_WORDS.slice(0, 3).join(''));

t.test('client abort mid-stream: upstream call aborted, row says aborted with the tokens estimated', async (t) => {
  up.next({ kind: 'stall', chunks: 3 });
  const ac = new AbortController();
  const stream = await client.chat.completions.create(
    { model: 'fake/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    { signal: ac.signal },
  );
  let got = 0;
  const reading = (async () => {
    for await (const c of stream) if (c.choices[0]?.delta?.content) if (++got === 3) ac.abort();
  })().catch(() => undefined);
  await reading;
  t.equal(got, 3);
  await waitFor(async () => (await gw.rows(`status = 'aborted'`)).length === 1);
  const [row] = await gw.rows(`status = 'aborted'`);
  t.match(row, { status: 'aborted', error_type: 'client_closed', usage_source: 'estimated', stream: true });
  t.equal(Number(row!.input_tokens), ABORT_INPUT, 'input estimated from the request');
  t.equal(Number(row!.output_tokens), ABORT_OUTPUT, 'output estimated from the three streamed words');
  t.equal(Number(row!.cost), (ABORT_INPUT * 2.5 + ABORT_OUTPUT * 10) / 1e6);
  await waitFor(async () => up.aborted >= 1);
  t.ok(up.aborted >= 1, 'upstream saw the gateway hang up');
});

t.test('the three ledgers agree in total', async (t) => {
  await gw.flush();
  const s = gw.app.tollgate.store;
  const [sum] = await s.query<{ n: string; tokens: string; cost: string }>(
    `SELECT count() AS n, sum(total_tokens) AS tokens, toString(sum(cost)) AS cost FROM ${s.t('requests')} FINAL WHERE provider = 'fake'`,
  );
  const m = await gw.metrics();
  const metricRequests = ['success', 'failure', 'aborted'].reduce((a, st) => a + metricValue(m, 'tollgate_requests_total', { provider: 'fake', model: 'fake/gpt-4o', status: st }), 0);
  const metricTokens = ['input', 'cached', 'cache_write', 'output', 'reasoning'].reduce((a, ty) => a + metricValue(m, 'tollgate_tokens_total', { provider: 'fake', type: ty }), 0);
  const metricCost = metricValue(m, 'tollgate_cost_usd_total', { provider: 'fake', group: 'paid' });
  const spans = gw.spans.getFinishedSpans().filter((sp) => sp.attributes['tollgate.provider'] === 'fake' && sp.attributes['tollgate.request_id']);
  const spanTokens = spans.reduce((a, sp) => a + Number(sp.attributes['tollgate.usage.total_tokens']), 0);
  const spanCost = spans.reduce((a, sp) => a + Number(sp.attributes['tollgate.cost_usd']), 0);

  t.equal(Number(sum!.n), 5);
  t.equal(metricRequests, 5);
  t.equal(spans.length, 5);
  t.equal(Number(sum!.tokens), 3 * EXPECT.total + ABORT_INPUT + ABORT_OUTPUT);
  t.equal(metricTokens, Number(sum!.tokens));
  t.equal(spanTokens, Number(sum!.tokens));
  t.ok(Math.abs(metricCost - Number(sum!.cost)) < 1e-12, `metrics cost ${metricCost} = rows ${sum!.cost}`);
  t.ok(Math.abs(spanCost - Number(sum!.cost)) < 1e-12, `span cost ${spanCost} = rows ${sum!.cost}`);
  t.equal(metricValue(m, 'tollgate_usage_rows_written_total', {}), 5);
});

t.test('the span names the response the same way on the fast path and through the canonical model, streamed and not', async (t) => {
  const ids: string[] = [];
  for (const stream of [false, true]) {
    for (const model of ['fake/gpt-4o', 'fake/gpt-4o(auto)']) {
      // '(auto)' sends the same request through the canonical model (translated path) instead of the fast path.
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.text();
      ids.push(res.headers.get('x-request-id')!);
    }
  }
  await waitFor(() => ids.every((id) => spanFor(id) !== undefined));
  for (const id of ids) {
    const a = spanFor(id)!.attributes;
    t.same(a['gen_ai.response.finish_reasons'], ['stop'], `${id}: finish reason in the provider's vocabulary`);
    t.match(a['gen_ai.response.id'], /^chatcmpl-fake-/, `${id}: the upstream's response id`);
    t.equal(a['gen_ai.response.model'], 'gpt-4o');
  }
});
