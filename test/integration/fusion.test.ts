// Fusion through the official `openai` client: three members (fake OpenAI upstreams a, b, c) answer in parallel and a
// judge (upstream j) synthesises the final answer, which is what the client gets, streamed and not. Members get no
// tools and the tool history as text; the judge gets every candidate. Every member call and the judge call is an
// attempt row; the client row carries their sum. A member past the quorum's grace period is cut off and recorded,
// its input estimated when its upstream's 2xx had come (nothing when no status had).

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { TOOL, bucketsOf, spyFetch, attemptRowsOf } from '../helpers/clients.js';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { metricValue } from '../helpers/prom.js';
import { upstreamAnswered } from '../helpers/upstream-answered.js';
import { computeCost } from '../../src/ledger/cost.js';
import { NO_USAGE } from '../../src/ledger/types.js';

const fakes = { a: await startFakeOpenAI(t), b: await startFakeOpenAI(t), c: await startFakeOpenAI(t), j: await startFakeOpenAI(t) };
const provider = (id: keyof typeof fakes) =>
  fakeProvider(fakes[id].baseUrl, { name: `Fake ${id}`, price: { input: 1, output: 2, cached: 0.5 }, timeouts: { connect_s: 2, stall_s: 5, request_s: 10 }, models: { m: { kind: 'llm', capabilities: ['tools'] } } });

const gw = await startApp(t, {
  providers: { a: provider('a'), b: provider('b'), c: provider('c'), j: provider('j') },
  combos: {
    panel: { strategy: 'fusion', models: ['a/m', 'b/m', 'c/m'], judge: 'j/m' },
    quick: { strategy: 'fusion', models: ['a/m', 'b/m', 'c/m'], judge: 'j/m', quorum: 2, grace_ms: 100, timeout_ms: 5000 },
  },
});
const spy = spyFetch();
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: spy.fetch });

const VERDICT = ['The', ' judged', ' answer'];
function script(): void {
  fakes.a.next({ kind: 'ok', words: ['Alpha says 4'] });
  fakes.b.next({ kind: 'ok', words: ['Bravo says four'] });
  fakes.c.next({ kind: 'ok', words: ['Charlie says 5'] });
  fakes.j.next({ kind: 'ok', words: VERDICT });
}

// A conversation with a tool declared and a tool call in its history: members must not see tools.
const conversation: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is the weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: TOOL.name, arguments: '{"city":"Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21 C' },
  { role: 'user', content: 'And what is 2 + 2?' },
];
const tools = [{ type: 'function' as const, function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }];

const rowsOf = (requestId: string, attempts: number) => attemptRowsOf(gw, requestId, attempts);

t.test("three members answer and the judge's answer is what the client gets (not streamed)", async (t) => {
  script();
  const res = await client.chat.completions.create({ model: 'panel', messages: conversation, tools });
  t.equal(res.choices[0]?.message.content, VERDICT.join(''), "the judge's answer");
  t.equal(res.model, 'j/m', 'shown under the judge that wrote the answer');

  for (const id of ['a', 'b', 'c'] as const) {
    const sent = fakes[id].received.at(-1)!.body as { tools?: unknown; messages: { role: string; content: unknown; tool_calls?: unknown }[]; stream?: boolean };
    t.equal(sent.tools, undefined, `${id}: no tools`);
    t.notOk(sent.messages.some((m) => m.role === 'tool' || m.tool_calls !== undefined), `${id}: no tool messages`);
    t.match(JSON.stringify(sent.messages), /called tool get_weather with \{\\"city\\":\\"Paris\\"\}/, `${id}: the call as text`);
    t.match(JSON.stringify(sent.messages), /sunny, 21 C/, `${id}: the result as text`);
    t.notOk(sent.stream, `${id}: not streamed`);
  }
  const judged = JSON.stringify(fakes.j.received.at(-1)!.body);
  for (const answer of ['Alpha says 4', 'Bravo says four', 'Charlie says 5']) t.match(judged, answer, `the judge saw "${answer}"`);
  t.match(judged, /And what is 2 \+ 2\?/, 'and the question');
  t.equal((fakes.j.received.at(-1)!.body as { tools?: unknown }).tools, undefined);

  const { parent, attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 4);
  t.same(attempts.map((r) => [Number(r.attempt), r.provider, r.status, r.combo]), [
    [1, 'a', 'success', 'panel'], [2, 'b', 'success', 'panel'], [3, 'c', 'success', 'panel'], [4, 'j', 'success', 'panel'],
  ], 'three member rows and the judge row');
  const sum = attempts.reduce((s, r) => s + Number(r.total_tokens), 0);
  t.equal(sum, 4 * 18);
  t.same(bucketsOf(parent), [32, 12, null, 20, 8, 72], 'the client row: the sum of four attempts');
  t.same([parent.kind, parent.model, parent.status], ['combo', 'j/m', 'success'], 'answered by the judge');
  t.equal(Number(Number(parent.cost).toFixed(12)), Number(attempts.reduce((s, r) => s + Number(r.cost), 0).toFixed(12)));
});

t.test("streamed: the judge's answer is streamed to the client", async (t) => {
  script();
  const stream = await client.chat.completions.create({ model: 'panel', messages: conversation, stream: true, stream_options: { include_usage: true } });
  const pieces: string[] = [];
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta.content;
    if (d) pieces.push(d);
    if (chunk.usage) usage = chunk.usage;
  }
  t.same(pieces, VERDICT, 'chunk by chunk, as the judge streamed it');
  t.equal((fakes.j.received.at(-1)!.body as { stream?: boolean }).stream, true, 'the judge was asked to stream');
  t.notOk((fakes.a.received.at(-1)!.body as { stream?: boolean }).stream, 'members were not');
  t.equal(usage?.total_tokens, 18, "the stream's usage is the judge's call");
  const { parent, attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 4);
  t.equal(attempts.length, 4);
  t.equal(Number(parent.total_tokens), 72, 'the row counts every attempt');
  t.equal(parent.stream, true);
});

t.test('a failing member is recorded but is not a candidate; the judge works with the others', async (t) => {
  fakes.a.next({ kind: 'ok', words: ['Alpha again'] });
  fakes.b.next({ kind: 'error', status: 500, body: { error: { message: 'b is down' } } });
  fakes.c.next({ kind: 'ok', words: ['Charlie, a bit later'], delayMs: 300 });
  fakes.j.next({ kind: 'ok', words: VERDICT });
  const res = await client.chat.completions.create({ model: 'quick', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.choices[0]?.message.content, VERDICT.join(''));
  const judged = JSON.stringify(fakes.j.received.at(-1)!.body);
  t.match(judged, 'Alpha again');
  t.match(judged, 'Charlie, a bit later', 'the quorum (2) waited for c');
  t.notMatch(judged, 'b is down', 'a failure is not a candidate');
  const { attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 4);
  t.same(attempts.map((r) => [r.provider, r.status, Number(r.http_status)]), [['a', 'success', 200], ['b', 'failure', 500], ['c', 'success', 200], ['j', 'success', 200]]);
  gw.app.tollgate.router.cooldowns.succeed('b#default');
});

t.test('past the quorum, the grace period cuts a slow member off (recorded as aborted)', async (t) => {
  fakes.a.next({ kind: 'ok', words: ['Alpha fast'] });
  fakes.b.next({ kind: 'ok', words: ['Bravo fast'] });
  fakes.c.next({ kind: 'ok', words: ['Charlie never'], delayMs: 3000 });
  fakes.j.next({ kind: 'ok', words: VERDICT });
  const started = Date.now();
  const res = await client.chat.completions.create({ model: 'quick', messages: [{ role: 'user', content: 'hi' }] });
  const took = Date.now() - started;
  t.equal(res.choices[0]?.message.content, VERDICT.join(''));
  t.ok(took < 2000, `quorum 2 plus 100 ms of grace, not c's 3 s (${took} ms)`);
  const judged = JSON.stringify(fakes.j.received.at(-1)!.body);
  t.match(judged, 'Alpha fast');
  t.match(judged, 'Bravo fast');
  t.notMatch(judged, 'Charlie never');
  const { attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 4);
  t.same(attempts.map((r) => [r.provider, r.status, r.error_type, r.http_status]), [['a', 'success', '', 200], ['b', 'success', '', 200], ['c', 'aborted', 'fusion_cut_off', 504], ['j', 'success', '', 200]],
    'the member cut off before its upstream answered: 504, not the 200 it never got');
  t.match(attempts[2], { usage_source: 'none', total_tokens: 0, cost: 0 }, 'nothing says its upstream accepted the prompt: nothing counted');
  t.equal(attempts[2]!.input_tokens, null, 'not reported, not estimated');
});

// The panel request of the user message 'hi' (model `m`: counted as o200k_base): 3 per message + its role and text
// + 3 that prime the reply (docs/recording.md, "Estimated usage").
const HI_INPUT = 3 + countTokens('user') + countTokens('hi') + 3;

t.test('a member cut after its upstream answered 2xx: its input is estimated, on its row, the combo row, the metrics and its span', async (t) => {
  // Before: the row said aborted, usage_source none, 0 tokens and 0 cost, although the provider had the prompt and
  // bills it; the combo row, the budget, /metrics and the span under-counted every fusion that cut a slow member.
  const answered = upstreamAnswered(fakes.c.baseUrl);
  fakes.c.next({ kind: 'stall', chunks: 0 }); // its 200 and half its JSON, then nothing more
  // The others answer once c's 200 has reached the gateway: the grace period then cuts c mid-body.
  fakes.a.next({ kind: 'ok', words: ['Alpha fast'], after: answered });
  fakes.b.next({ kind: 'ok', words: ['Bravo fast'], after: answered });
  fakes.j.next({ kind: 'ok', words: VERDICT });
  const metricsBefore = await gw.metrics();
  const res = await client.chat.completions.create({ model: 'quick', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.choices[0]?.message.content, VERDICT.join(''));
  t.equal(await answered, 200);
  const { parent, attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 4);
  const cut = attempts[2]!;
  t.match(cut, { provider: 'c', status: 'aborted', error_type: 'fusion_cut_off', http_status: 200, usage_source: 'estimated' }, 'cut off after its 200');
  t.same(bucketsOf(cut), [HI_INPUT, null, null, 0, null, HI_INPUT], 'the input estimated from the panel request; no output text was read');
  const cost = computeCost(gw.holder.current.providers.c!, 'm', { ...NO_USAGE, input: HI_INPUT, output: 0 });
  t.ok(cost.cost > 0, 'a paid model: the estimate costs something');
  t.equal(Number(cut.cost), cost.cost, "priced from the model's price");

  t.equal(parent.usage_source, 'estimated', 'the combo row is estimated when an attempt is');
  t.equal(Number(parent.total_tokens), attempts.reduce((s, r) => s + Number(r.total_tokens), 0), 'the combo row sums its attempts, the cut one included');
  t.equal(Number(parent.input_tokens), attempts.reduce((s, r) => s + Number(r.input_tokens), 0));
  t.equal(Number(Number(parent.cost).toFixed(12)), Number(attempts.reduce((s, r) => s + Number(r.cost), 0).toFixed(12)));

  const metricsAfter = await gw.metrics();
  const grew = (name: string, labels: Record<string, string>) => metricValue(metricsAfter, name, labels) - metricValue(metricsBefore, name, labels);
  t.equal(grew('tollgate_tokens_total', { provider: 'c', type: 'input' }), HI_INPUT, "/metrics: c's input tokens");
  t.equal(grew('tollgate_tokens_total', { provider: 'c', type: 'output' }), 0);
  t.ok(Math.abs(grew('tollgate_cost_usd_total', { provider: 'c' }) - cost.cost) < 1e-12, "/metrics: c's cost");

  let span: ReadableSpan | undefined;
  await waitFor(() => (span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === cut.request_id)) !== undefined);
  t.match(span!.attributes, {
    'tollgate.provider': 'c', 'tollgate.attempt': 3, 'http.response.status_code': 200, 'error.type': 'fusion_cut_off',
    'gen_ai.usage.input_tokens': HI_INPUT, 'gen_ai.usage.output_tokens': 0, 'tollgate.usage.total_tokens': HI_INPUT, 'tollgate.cost_usd': cost.cost,
  }, "the member's span says what its row says");
});

t.test('empty answers do not make the quorum: the panel waits for an answer with text', async (t) => {
  // (a review of fusion: two empty answers counted as the quorum of 2, the grace period cut the third member off, and
  // with no candidate the client got a 504 although the time limit was far off)
  fakes.a.next({ kind: 'ok', words: [''] });
  fakes.b.next({ kind: 'ok', words: [''] });
  fakes.c.next({ kind: 'ok', words: ['Charlie says 4'], delayMs: 600 });
  fakes.j.next({ kind: 'ok', words: VERDICT });
  const res = await client.chat.completions.create({ model: 'quick', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.choices[0]?.message.content, VERDICT.join(''), 'the judge answers');
  t.match(JSON.stringify(fakes.j.received.at(-1)!.body), 'Charlie says 4', 'from the one answer with text');
  const { attempts } = await rowsOf(spy.last.headers.get('x-request-id')!, 4);
  t.same(attempts.map((r) => [r.provider, r.status]), [['a', 'success'], ['b', 'success'], ['c', 'success'], ['j', 'success']]);
});

t.test('a client that leaves during the panel: the client row names the member that answered; the others are aborts, not cut-offs', async (t) => {
  // Before: the client row was provider and model `_other` (its series and /api/usage?provider= lost it), and the
  // members still running were recorded as cut off by the fusion deadline, which had not passed.
  fakes.a.next({ kind: 'ok', words: ['Alpha slow'], delayMs: 1500 });
  fakes.b.next({ kind: 'ok', words: ['Bravo fast'] });
  fakes.c.next({ kind: 'ok', words: ['Charlie slow'], delayMs: 1500 });
  const gone = new AbortController();
  const asked = fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, signal: gone.signal,
    body: JSON.stringify({ model: 'panel', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await new Promise((r) => setTimeout(r, 300)); // b has answered, a and c have not
  gone.abort();
  await asked.catch(() => undefined);
  await gw.flush();
  let parent: Record<string, unknown> | undefined;
  let attempts: Record<string, unknown>[] = [];
  await waitFor(async () => {
    [parent] = await gw.rows(`combo = 'panel' AND kind = 'combo' AND status = 'aborted'`);
    if (parent === undefined) return false;
    attempts = await gw.rows(`parent_id = '${String(parent.request_id)}'`);
    return attempts.length === 3;
  }, 10_000);
  t.match(parent, { provider: 'b', model: 'b/m', status: 'aborted', http_status: 499, error_type: 'client_closed' }, 'the member that answered');
  t.same(attempts.sort((x, y) => Number(x.attempt) - Number(y.attempt)).map((r) => [r.provider, r.status, r.error_type, r.http_status]),
    [['a', 'aborted', 'client_closed', 499], ['b', 'success', '', 200], ['c', 'aborted', 'client_closed', 499]], 'the others: the client left (499: no answer had come)');
});

t.test('when no member answers, the client gets the last failure', async (t) => {
  for (const id of ['a', 'b', 'c'] as const) fakes[id].next({ kind: 'error', status: 503, body: { error: { message: `${id} overloaded` } } });
  const jBefore = fakes.j.received.length;
  const err = await client.chat.completions.create({ model: 'panel', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.APIError && err.status === 503, '503 as the members said');
  t.equal(fakes.j.received.length, jBefore, 'the judge is not asked without candidates');
  gw.app.tollgate.router.cooldowns.succeed('a#default');
  gw.app.tollgate.router.cooldowns.succeed('b#default');
  gw.app.tollgate.router.cooldowns.succeed('c#default');
});
