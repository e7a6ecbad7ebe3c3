// The built-in mock upstream: deterministic text and usage, max_tokens caps, valid OpenAI-shaped JSON and SSE
// (usage chunk only when asked, ending in [DONE]), and an abort signal that stops it.

import t from 'tap';
import type { MockOptions } from '../../src/config/types.js';
import { mockRespond, mockWords, planMock } from '../../src/providers/mock.js';
import { openaiAdapter } from '../../src/wire/openai/index.js';
import { SseParser } from '../../src/wire/sse.js';
import type { UpstreamResponse } from '../../src/providers/upstream.js';

// Parsed wire JSON, read field by field in assertions.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const OPTS: MockOptions = { chunks: 5, latency_ms: 0, chunk_delay_ms: 0 };
const SENTENCE = 'Tollgate demo reply: every token you see here is counted once, priced, and recorded three ways.'.split(' ');
const msgs = (content: unknown) => [{ role: 'user', content }];

async function bytes(res: UpstreamResponse): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of res.body) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

async function respond(body: Record<string, unknown>, opts: MockOptions = OPTS, signal = new AbortController().signal) {
  return mockRespond(opts, { model: 'echo-1', messages: msgs('hello there'), ...body }, signal);
}

t.test('planMock: words, input tokens and finish reason', async (t) => {
  t.same(mockWords(3), ['Tollgate', 'demo', 'reply:']);
  t.same(mockWords(SENTENCE.length + 2), [...SENTENCE, 'Tollgate', 'demo'], 'the sentence repeats');
  t.same(planMock(OPTS, { messages: msgs('hello there') }), { words: SENTENCE.slice(0, 5), inputTokens: 3, finishReason: 'stop' }, 'ceil(11 chars / 4) = 3');
  t.equal(planMock(OPTS, { messages: msgs('abcd') }).inputTokens, 1);
  t.equal(planMock(OPTS, { messages: msgs('abcde') }).inputTokens, 2);
  t.equal(planMock(OPTS, { messages: [] }).inputTokens, 1, 'at least one input token');
  t.equal(planMock(OPTS, {}).inputTokens, 1, 'no messages at all');
  t.equal(
    planMock(OPTS, { messages: [{ role: 'system', content: 'x'.repeat(10) }, { role: 'user', content: [{ type: 'text', text: 'y'.repeat(10) }, { type: 'image_url', image_url: { url: 'data:' } }] }] }).inputTokens,
    5,
    'string content and text parts are counted: 20 chars',
  );
  t.equal(planMock({ ...OPTS, input_tokens: 1234 }, { messages: msgs('hi') }).inputTokens, 1234, 'mock.input_tokens overrides');
  t.equal(planMock({ ...OPTS, input_tokens: 0 }, { messages: msgs('hi') }).inputTokens, 0, 'an explicit 0 is kept');
});

t.test('planMock: max_tokens caps the words and gives finish_reason length', async (t) => {
  t.same(planMock(OPTS, { max_tokens: 3 }), { words: SENTENCE.slice(0, 3), inputTokens: 1, finishReason: 'length' });
  t.equal(planMock(OPTS, { max_tokens: 5 }).finishReason, 'stop', 'a cap equal to the answer does not cut it');
  t.equal(planMock(OPTS, { max_tokens: 500 }).words.length, 5);
  t.equal(planMock(OPTS, { max_completion_tokens: 2, max_tokens: 4 }).words.length, 2, 'max_completion_tokens wins over max_tokens');
  t.same(planMock(OPTS, { max_tokens: 0 }), { words: ['Tollgate'], inputTokens: 1, finishReason: 'length' }, 'at least one word');
  t.equal(planMock(OPTS, { max_tokens: '3' }).words.length, 5, 'a non-number cap is ignored');
});

t.test('non-streamed: an OpenAI chat.completion with deterministic text and usage', async (t) => {
  const res = await respond({});
  t.equal(res.status, 200);
  t.match(res.headers, { 'content-type': 'application/json', 'x-tollgate-mock': '1' });
  const raw = await bytes(res);
  const body = JSON.parse(raw.toString('utf8')) as Json;
  t.same(body, {
    id: 'chatcmpl-mock-3-5', object: 'chat.completion', created: 1700000000, model: 'echo-1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Tollgate demo reply: every token', refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
  });
  t.same(openaiAdapter.usageFromResponse(body), { input: 3, cached: 0, cacheWrite: null, output: 5, reasoning: 0 }, 'the openai adapter reads its usage');
  t.same(await bytes(await respond({})), raw, 'the same request gives the same bytes');

  const capped = JSON.parse((await bytes(await respond({ max_tokens: 2 }))).toString()) as Json;
  t.equal(capped.choices[0].message.content, 'Tollgate demo');
  t.equal(capped.choices[0].finish_reason, 'length');
  t.equal(capped.usage.completion_tokens, 2);
});

interface Parsed {
  frames: string[];
  json: Json[];
}

async function streamed(body: Record<string, unknown>, opts: MockOptions = OPTS): Promise<Parsed & { raw: Buffer; headers: UpstreamResponse['headers'] }> {
  const res = await respond({ stream: true, ...body }, opts);
  const raw = await bytes(res);
  const p = new SseParser();
  const frames = [...p.push(raw), ...p.end()].map((f) => f.data);
  return { raw, headers: res.headers, frames, json: frames.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Json) };
}

t.test('stream without include_usage: valid SSE, no usage anywhere, ends in [DONE]', async (t) => {
  const { raw, headers, frames, json } = await streamed({});
  t.match(headers, { 'content-type': 'text/event-stream; charset=utf-8', 'x-tollgate-mock': '1' });
  t.ok(raw.toString().endsWith('data: [DONE]\n\n'), 'ends in [DONE] and a blank line');
  t.ok(/^(data: [^\n]*\n\n)+$/.test(raw.toString()), 'every frame is one data line and a blank line');
  t.equal(frames.at(-1), '[DONE]');
  t.equal(frames.filter((f) => f === '[DONE]').length, 1);
  t.equal(json.length, 1 + 5 + 1, 'role chunk, five words, finish chunk');
  t.ok(json.every((c) => !('usage' in c)), 'no usage key when the client did not ask');
  t.ok(json.every((c) => c.object === 'chat.completion.chunk' && c.id === 'chatcmpl-mock-3-5' && c.model === 'echo-1' && c.created === 1700000000));
  t.same(json[0]!.choices, [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  t.equal(json.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'Tollgate demo reply: every token', 'the words join into the unary text');
  t.same(json.at(-1)!.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
  const infos = json.map((c) => openaiAdapter.inspectChunk(c));
  t.equal(infos.reduce((a, i) => a + i.deltas, 0), 5, 'five deltas for the estimate');
  t.ok(infos.every((i) => i.usage === null && !i.usageOnly));
});

t.test('stream with include_usage: usage: null on each chunk, then one usage-only chunk before [DONE]', async (t) => {
  const { frames, json } = await streamed({ stream_options: { include_usage: true } });
  t.equal(frames.at(-1), '[DONE]');
  t.equal(json.length, 1 + 5 + 1 + 1);
  t.ok(json.slice(0, -1).every((c) => c.usage === null), 'usage: null on every chunk before the last, as OpenAI does');
  const last = json.at(-1)!;
  t.same(last.choices, [], 'the usage chunk has no choices');
  t.same(last.usage, { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });
  const info = openaiAdapter.inspectChunk(last);
  t.same(info, { usage: { input: 3, cached: 0, cacheWrite: null, output: 5, reasoning: 0 }, deltas: 0, usageOnly: true, output: '', reasoning: '' });

  const off = await streamed({ stream_options: { include_usage: false } });
  t.ok(off.json.every((c) => !('usage' in c)), 'include_usage: false is not asking');
});

t.test('stream with max_tokens: capped words, finish_reason length, usage agrees', async (t) => {
  const { json } = await streamed({ max_tokens: 2, stream_options: { include_usage: true } });
  t.equal(json.length, 1 + 2 + 1 + 1);
  t.equal(json.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'Tollgate demo');
  t.equal(json.at(-2)!.choices[0].finish_reason, 'length');
  t.equal(json.at(-1)!.usage.completion_tokens, 2);
});

t.test('streams are deterministic', async (t) => {
  const a = await streamed({ stream_options: { include_usage: true } });
  const b = await streamed({ stream_options: { include_usage: true } });
  t.same(a.raw, b.raw);
});

t.test('latency and chunk delay', async (t) => {
  const t0 = performance.now();
  const res = await respond({ stream: true }, { chunks: 3, latency_ms: 60, chunk_delay_ms: 30 });
  const started = performance.now() - t0;
  await bytes(res);
  const total = performance.now() - t0;
  t.ok(started >= 55, `the response starts after latency_ms (${started.toFixed(0)} ms)`);
  t.ok(total >= 55 + 3 * 28, `then chunk_delay_ms before each word (${total.toFixed(0)} ms)`);
});

t.test('abort signal stops a stream mid-way', async (t) => {
  const ac = new AbortController();
  const res = await mockRespond({ chunks: 1000, latency_ms: 0, chunk_delay_ms: 20 }, { model: 'm', messages: [], stream: true }, ac.signal);
  const p = new SseParser();
  let frames = 0;
  const t0 = performance.now();
  const err = await (async () => {
    for await (const c of res.body) {
      frames += p.push(c as Buffer).length;
      if (frames === 3) ac.abort();
    }
  })().catch((e: unknown) => e);
  t.ok(err instanceof Error, 'reading the body fails');
  t.equal((err as Error).name, 'AbortError');
  t.ok(frames >= 3 && frames <= 6, `stopped right after the abort (${frames} frames of 1003)`);
  t.ok(performance.now() - t0 < 2000, 'promptly');
  t.ok(res.body.destroyed, 'the body stream is destroyed');
});

t.test('abort signal stops the initial latency', async (t) => {
  const ac = new AbortController();
  const t0 = performance.now();
  setTimeout(() => ac.abort(), 30);
  const err = await mockRespond({ chunks: 5, latency_ms: 10_000, chunk_delay_ms: 0 }, { model: 'm', messages: [] }, ac.signal).catch((e: unknown) => e);
  t.equal((err as Error).name, 'AbortError', 'rejects with AbortError');
  t.ok(performance.now() - t0 < 1000, 'without waiting out latency_ms');

  const pre = new AbortController();
  pre.abort();
  const err2 = await mockRespond({ chunks: 5, latency_ms: 50, chunk_delay_ms: 0 }, { model: 'm', messages: [] }, pre.signal).catch((e: unknown) => e);
  t.equal((err2 as Error).name, 'AbortError', 'an already aborted signal');
});
