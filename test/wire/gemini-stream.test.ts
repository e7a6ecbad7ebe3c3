// The `gemini` codec, streams (`streamGenerateContent?alt=sse`): upstream frames -> canonical events, and canonical
// events -> the SSE a Gemini client reads. The fixture is the streamed twin of generate-thought-text-call.json:
// usageMetadata rides on every chunk and must be counted once.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { TollgateError } from '../../src/core/errors.js';
import { geminiCodec } from '../../src/wire/gemini/index.js';
import { SseParser } from '../../src/wire/sse.js';
import type { CanonicalEvent, Part, StopReason } from '../../src/wire/canonical.js';
import type { Usage } from '../../src/ledger/types.js';
import { totalTokens } from '../../src/ledger/types.js';

const read = (name: string) => readFileSync(new URL(`../fixtures/gemini/${name}`, import.meta.url));
const STREAM = read('stream-thought-text-call.sse');
const WHOLE = JSON.parse(read('generate-thought-text-call.json').toString('utf8')) as unknown;

/** Bytes fed `size` at a time through SseParser, every frame through one stream parser. */
function parse(bytes: Uint8Array, size: number) {
  const sse = new SseParser();
  const parser = geminiCodec.createStreamParser();
  const events: CanonicalEvent[] = [];
  const terminatedAfter: boolean[] = [];
  const take = (frames: ReturnType<SseParser['push']>) => {
    for (const f of frames) {
      events.push(...parser.frame(f));
      terminatedAfter.push(parser.terminated);
    }
  };
  for (let i = 0; i < bytes.length; i += size) take(sse.push(bytes.subarray(i, i + size)));
  take(sse.end());
  events.push(...parser.end());
  return { events, terminatedAfter };
}

/** What a consumer makes of the events: the answer's parts, the last usage, the stop reason. */
function assemble(events: readonly CanonicalEvent[]) {
  const blocks = new Map<number, { type: 'text' | 'reasoning'; text: string; signature?: string } | { type: 'tool_call'; id: string; name: string; arguments: string; signature?: string; origin?: string }>();
  let usage: Usage | null = null;
  let stop: StopReason | null = null;
  for (const e of events) {
    if (e.type === 'text_start') blocks.set(e.index, { type: 'text', text: '' });
    else if (e.type === 'reasoning_start') blocks.set(e.index, { type: 'reasoning', text: '' });
    else if (e.type === 'tool_call_start') {
      blocks.set(e.index, { type: 'tool_call', id: e.id, name: e.name, arguments: '', ...(e.signature !== undefined ? { signature: e.signature, origin: e.origin } : {}) });
    }
    else if (e.type === 'text_delta' || e.type === 'reasoning_delta') (blocks.get(e.index) as { text: string }).text += e.text;
    else if (e.type === 'reasoning_signature') (blocks.get(e.index) as { signature?: string }).signature = e.signature;
    else if (e.type === 'tool_call_delta') (blocks.get(e.index) as { arguments: string }).arguments += e.arguments;
    else if (e.type === 'usage') usage = e.usage;
    else if (e.type === 'finish') stop = e.stopReason;
  }
  const content = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) => b as Part);
  return { content, usage, stop };
}

const FC_SIG = "CtQCAdHtim9uPB3Yq0d3pbsO0rVt6mJc8dTSgl0n4C5bHq1SxZ1WvF2cJ9E8Kp3Lr7yQ2u5xH0aVfN6tDk4mB1sW8zR3gYcP0eLqXjU7nT2vA9oKdIh5MwG6bCfZ1rS8yE4pJ3xQ0uN7kLmV2tH9aD6cR1gW5oB8sF3jY0zK7nP4eT2qX6vU1iM9hL5dA8wC3bG0fE7rS2yN4kJ6pV1tZ9xQ3uO5mH8gD0aB2cL7sW4eR1jK6nF9vY3tI5oP8qU2xM0hG7dA4zC1bE6rS9wN3kJ5pV8tL2yQ0uO7mH4gD1aB6cZ3sW9eR5jK2nF8vY0tI7oP4qU1xM6hG3dA9zC5bE2rS8wN0kJ7pV4tL1yQ6uO3mH9gD5aB2cZ8sW0eR7jK4nF1vY6tI3oP9qU5xM2hG8dA0zC7bE4rS1wN6kJ3pV9tL5yQ2uO8mH0gD7aB4cZ1sW6eR3jK9nF5vY2tI8oP0qU7xM4hG1dA6zC3bE9rS5wN2kJ8pV0tL7yQ4uO1mH6gD3aB9cZ5s";
const T1 = '**Checking the forecast**\n\n';
const T2 = "The user wants the current weather in Paris. I have a `get_weather` tool, so I'll call it with the city and Celsius rather than guess.\n";
const base = { input: 123, cached: 2031, cacheWrite: null, reasoning: 192 };

const EXPECTED: CanonicalEvent[] = [
  { type: 'start', id: 'mZ3FaJ7XLMGd1dkP8qKxgAo', model: 'gemini-2.5-flash' },
  { type: 'reasoning_start', index: 0 },
  { type: 'reasoning_delta', index: 0, text: T1 },
  // 2154 prompt - 2031 cached = 123 input; 192 thoughts; no candidates count yet.
  { type: 'usage', usage: { ...base, output: null } },
  { type: 'reasoning_delta', index: 0, text: T2 },
  { type: 'block_stop', index: 0 },
  { type: 'text_start', index: 1 },
  { type: 'text_delta', index: 1, text: "I'll look up the current " },
  { type: 'usage', usage: { ...base, output: 6 } },
  { type: 'text_delta', index: 1, text: 'weather in Paris for you.' },
  { type: 'usage', usage: { ...base, output: 12 } },
  { type: 'block_stop', index: 1 },
  // The functionCall part's thoughtSignature travels with the call (Gemini 3 wants it back on the next turn).
  { type: 'tool_call_start', index: 2, id: 'call_mZ3FaJ7XLMGd1dkP8qKxgAo_0', name: 'get_weather', signature: FC_SIG, origin: 'gemini' },
  { type: 'tool_call_delta', index: 2, arguments: '{"location":"Paris, France","unit":"celsius"}' },
  { type: 'block_stop', index: 2 },
  { type: 'usage', usage: { ...base, output: 38 } },
  { type: 'finish', stopReason: 'tool_calls' },
];

t.test('stream parser: the fixture, fed in any byte chunking, gives the same events', async (t) => {
  for (const size of [1, 7, 64, STREAM.length]) {
    const { events, terminatedAfter } = parse(STREAM, size);
    t.strictSame(events, EXPECTED, `chunks of ${size} bytes`);
    t.strictSame(terminatedAfter, [false, false, false, false, true], `terminated only after the finishReason chunk (${size})`);
  }
});

t.test('stream usage equals the non-streamed usage: repeated usageMetadata is counted once', async (t) => {
  const { events } = parse(STREAM, 5);
  const usages = events.flatMap((e) => (e.type === 'usage' ? [e.usage] : []));
  t.equal(usages.length, 4, 'chunks 1 and 2 carry the same usageMetadata: one event for both');
  const whole = geminiCodec.parseResponse(WHOLE);
  const streamed = assemble(events);
  t.strictSame(streamed.usage, whole.usage, 'the last usage event is the answer usage');
  t.strictSame(streamed.usage, { input: 123, cached: 2031, cacheWrite: null, output: 38, reasoning: 192 });
  t.equal(totalTokens(streamed.usage!), 2384, 'the last chunk totalTokenCount');
  const added = usages.reduce((s, u) => s + (u.output ?? 0), 0);
  t.equal(added, 56, 'adding the events instead would count 0 + 6 + 12 + 38 output tokens');
  t.strictSame(streamed.content, whole.content, 'the streamed parts assemble to the non-streamed answer');
  t.equal(streamed.stop, whole.stopReason);
});

t.test('stream parser: blocks, signatures, errors and odd chunks', async (t) => {
  const frame = (json: unknown) => ({ event: null, id: null, data: JSON.stringify(json) });
  const chunk = (parts: unknown[]) => frame({ candidates: [{ content: { role: 'model', parts }, index: 0 }] });
  const p = geminiCodec.createStreamParser();
  t.strictSame(p.frame(frame({ responseId: 'r/1', candidates: [{ content: { role: 'model', parts: [{ text: 'A' }, { text: 'B' }] }, index: 0 }] })), [
    { type: 'start', id: 'r/1', model: '' },
    { type: 'text_start', index: 0 },
    { type: 'text_delta', index: 0, text: 'A' },
    { type: 'text_delta', index: 0, text: 'B' },
  ], 'consecutive text parts continue one block');
  t.strictSame(p.frame(chunk([{ functionCall: { id: 'fc-1', name: 'f', args: { x: 1 } } }, { functionCall: { name: 'g' } }])), [
    { type: 'block_stop', index: 0 },
    { type: 'tool_call_start', index: 1, id: 'fc-1', name: 'f' },
    { type: 'tool_call_delta', index: 1, arguments: '{"x":1}' },
    { type: 'block_stop', index: 1 },
    { type: 'tool_call_start', index: 2, id: 'call_r1_1', name: 'g' },
    { type: 'tool_call_delta', index: 2, arguments: '{}' },
    { type: 'block_stop', index: 2 },
  ], 'each call is a whole block; a call without id is call_<responseId>_<n> (the id\'s other characters left out), n counting calls');
  t.strictSame(p.frame(chunk([{ text: 'C', thoughtSignature: 'dropped' }, { text: '', thoughtSignature: 'also-dropped' }, { text: 'T', thought: true }, { text: '', thought: true, thoughtSignature: 'sig-1' }])), [
    { type: 'text_start', index: 3 },
    { type: 'text_delta', index: 3, text: 'C' },
    { type: 'block_stop', index: 3 },
    { type: 'reasoning_start', index: 4 },
    { type: 'reasoning_delta', index: 4, text: 'T' },
    { type: 'reasoning_signature', index: 4, signature: 'sig-1', origin: 'gemini' },
  ], 'text after a call is a new block; a thought signature is a reasoning_signature; a text signature is dropped');
  t.equal(p.terminated, false);
  t.strictSame(p.frame(frame({ candidates: [{ content: { role: 'model', parts: [{ text: 'end' }] }, finishReason: 'MAX_TOKENS', index: 0 }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 } })), [
    { type: 'block_stop', index: 4 },
    { type: 'text_start', index: 5 },
    { type: 'text_delta', index: 5, text: 'end' },
    { type: 'usage', usage: { input: 3, cached: null, cacheWrite: null, output: 4, reasoning: null } },
    { type: 'block_stop', index: 5 },
    { type: 'finish', stopReason: 'max_tokens' },
  ], 'usage on the finish chunk comes before the finish event');
  t.equal(p.terminated, true);
  t.strictSame(p.frame(frame({ usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 } })), [], 'the same usage again: nothing');
  t.strictSame(p.frame(frame({ usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 5, totalTokenCount: 8 } })), [{ type: 'usage', usage: { input: 3, cached: null, cacheWrite: null, output: 5, reasoning: null } }], 'a later usage replaces');
  t.strictSame(p.end(), [], 'nothing open at the end');

  const open = geminiCodec.createStreamParser();
  open.frame(chunk([{ text: 'cut' }]));
  t.strictSame(open.end(), [{ type: 'block_stop', index: 0 }], 'end() closes the open block and invents no finish');
  t.equal(open.terminated, false);

  const blocked = geminiCodec.createStreamParser();
  t.strictSame(blocked.frame(frame({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, responseId: 'r9', modelVersion: 'gemini-2.5-pro' })), [
    { type: 'start', id: 'r9', model: 'gemini-2.5-pro' },
    { type: 'finish', stopReason: 'content_filter' },
  ]);
  t.equal(blocked.terminated, true);

  const failed = geminiCodec.createStreamParser();
  t.strictSame(failed.frame(frame({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } })), [{ type: 'error', message: 'The model is overloaded.', code: 'UNAVAILABLE' }]);
  t.equal(failed.terminated, true);
  t.strictSame(failed.frame({ event: null, id: null, data: '' }), [], 'an empty data frame');

  for (const data of ['{"candidates": [', '[1,2]', 'null']) {
    let code: string | undefined;
    try {
      geminiCodec.createStreamParser().frame({ event: null, id: null, data });
    } catch (err) {
      code = err instanceof TollgateError ? err.code : String(err);
    }
    t.equal(code, 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', data);
  }
});

/** Every `data:` payload of rendered SSE text, parsed. */
function payloads(text: string): Record<string, unknown>[] {
  const sse = new SseParser();
  return [...sse.push(new TextEncoder().encode(text)), ...sse.end()].map((f) => JSON.parse(f.data) as Record<string, unknown>);
}

t.test('stream renderer: parsed fixture -> Gemini SSE -> parsed again gives the same answer', async (t) => {
  const r = geminiCodec.createStreamRenderer('gemini-2.5-flash');
  const text = EXPECTED.map((e) => r.event(e)).join('') + r.end();
  const again = parse(new TextEncoder().encode(text), 3);
  const first = assemble(EXPECTED);
  const second = assemble(again.events);
  t.strictSame(second.content, first.content);
  t.strictSame(second.usage, first.usage, 'usage arrives once, on the last chunk');
  t.equal(second.stop, 'tool_calls');
  t.equal(again.events.filter((e) => e.type === 'usage').length, 1);
  t.equal(again.terminatedAfter.at(-1), true);
  t.equal(again.terminatedAfter.filter(Boolean).length, 1, 'finishReason is on the last chunk only');
  const last = payloads(text).at(-1)!;
  t.strictSame(last, {
    candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 2154, candidatesTokenCount: 38, totalTokenCount: 2384, cachedContentTokenCount: 2031, thoughtsTokenCount: 192 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'mZ3FaJ7XLMGd1dkP8qKxgAo',
  }, 'the same usageMetadata as the non-streamed answer');
});

t.test('stream renderer: OpenAI-ordered events (usage after finish), tool calls buffered until block_stop', async (t) => {
  const r = geminiCodec.createStreamRenderer('openai/gpt-4o');
  const out = (e: CanonicalEvent) => r.event(e);
  t.equal(out({ type: 'start', id: 'chatcmpl-1', model: 'gpt-4o-2024-08-06' }), '');
  t.equal(out({ type: 'text_start', index: 0 }), '');
  t.equal(out({ type: 'text_delta', index: 0, text: 'Hel' }), 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"modelVersion":"openai/gpt-4o","responseId":"chatcmpl-1"}\n\n');
  t.equal(out({ type: 'text_delta', index: 0, text: '' }), '', 'an empty delta says nothing');
  t.equal(out({ type: 'block_stop', index: 0 }), '');
  t.equal(out({ type: 'tool_call_start', index: 1, id: 'call_Qd0m', name: 'get_weather' }), '');
  t.equal(out({ type: 'tool_call_delta', index: 1, arguments: '{"location"' }), '');
  t.equal(out({ type: 'tool_call_delta', index: 1, arguments: ':"Paris"}' }), '');
  t.equal(
    out({ type: 'block_stop', index: 1 }),
    'data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"call_Qd0m","name":"get_weather","args":{"location":"Paris"}}}]},"index":0}],"modelVersion":"openai/gpt-4o","responseId":"chatcmpl-1"}\n\n',
    'the whole call on its block_stop',
  );
  t.equal(out({ type: 'tool_call_start', index: 2, id: 'call_x', name: 'noop' }), '');
  t.equal(out({ type: 'finish', stopReason: 'tool_calls' }), 'data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"call_x","name":"noop","args":{}}}]},"index":0}],"modelVersion":"openai/gpt-4o","responseId":"chatcmpl-1"}\n\n', 'a call never stopped is sent at finish');
  t.equal(out({ type: 'usage', usage: { input: 82, cached: 0, cacheWrite: null, output: 17, reasoning: 0 } }), '');
  t.equal(
    r.end(),
    'data: {"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":82,"candidatesTokenCount":17,"totalTokenCount":99,"cachedContentTokenCount":0,"thoughtsTokenCount":0},"modelVersion":"openai/gpt-4o","responseId":"chatcmpl-1"}\n\n',
  );
  t.equal(r.end(), '', 'end() once');

  const reasoning = geminiCodec.createStreamRenderer('m');
  t.equal(reasoning.event({ type: 'reasoning_delta', index: 0, text: 'hmm' }), 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hmm","thought":true}]},"index":0}],"modelVersion":"m"}\n\n');
  t.equal(reasoning.event({ type: 'reasoning_signature', index: 0, signature: 'sig', origin: 'gemini' }), 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"","thought":true,"thoughtSignature":"sig"}]},"index":0}],"modelVersion":"m"}\n\n');
  t.equal(reasoning.end(), '', 'no finish and no usage: no final chunk');

  const usageOnly = geminiCodec.createStreamRenderer('m');
  usageOnly.event({ type: 'usage', usage: { input: 1, cached: null, cacheWrite: null, output: 2, reasoning: null } });
  t.strictSame(payloads(usageOnly.end()), [{ usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2, totalTokenCount: 3 }, modelVersion: 'm' }], 'usage without a finish: no finishReason is invented');
});

t.test('stream renderer: error() writes Gemini error JSON the way @google/genai detects it', async (t) => {
  const r = geminiCodec.createStreamRenderer('gemini-2.5-flash');
  const before = r.event({ type: 'text_delta', index: 0, text: 'partial' });
  const err = r.error('TOLLGATE_ERR_UPSTREAM_STALL', 'upstream sent nothing for 30 s {stall}');
  t.equal(err, '{"error":{"code":504,"message":"upstream sent nothing for 30 s \\u007bstall\\u007d","status":"DEADLINE_EXCEEDED"}}\n');
  t.strictSame(JSON.parse(err), { error: { code: 504, message: 'upstream sent nothing for 30 s {stall}', status: 'DEADLINE_EXCEEDED' } }, 'valid JSON; the braces come back');
  t.notMatch(err, /^data:/, 'not a data frame: the SDK would hand that to the caller as an empty response');
  t.equal(err.replace(/"(?:[^"\\]|\\.)*"/g, '').split('{').length, err.replace(/"(?:[^"\\]|\\.)*"/g, '').split('}').length, 'braces balanced outside strings');
  t.equal(r.end(), '', 'nothing after the error');
  t.equal(r.event({ type: 'finish', stopReason: 'end' }), '');

  // @google/genai's processStreamResponse: each raw read is tried as JSON and `error` with a 4xx/5xx code throws; a
  // read holding earlier frames too leaves the error in the buffer without a frame delimiter, which fails the stream
  // at its end ("Incomplete JSON segment at the end").
  const sdkRead = (read: string) => {
    try {
      const j = JSON.parse(read) as { error?: { code?: number } };
      if (j.error && (j.error.code ?? 0) >= 400 && (j.error.code ?? 0) < 600) return 'ApiError';
    } catch {
      // not a whole JSON read
    }
    const rest = read.split(/\r\n\r\n|\n\n|\r\r/).at(-1)!;
    return rest.trim() === '' ? 'ok' : 'Incomplete JSON segment at the end';
  };
  t.equal(sdkRead(err), 'ApiError', 'the error in a read of its own');
  t.equal(sdkRead(before + err), 'Incomplete JSON segment at the end', 'the error joined to an earlier frame');
  t.equal(sdkRead(before), 'ok', 'a normal frame passes');

  const codes: [string, number, string][] = [
    ['TOLLGATE_ERR_UPSTREAM_PROTOCOL', 502, 'UNAVAILABLE'],
    ['TOLLGATE_ERR_INTERNAL', 500, 'INTERNAL'],
    ['TOLLGATE_ERR_INVALID_REQUEST', 400, 'INVALID_ARGUMENT'],
    ['UNAVAILABLE', 503, 'UNAVAILABLE'],
    ['RESOURCE_EXHAUSTED', 429, 'RESOURCE_EXHAUSTED'],
    ['overloaded_error', 500, 'INTERNAL'],
    ['toString', 500, 'INTERNAL'],
  ];
  for (const [code, http, status] of codes) {
    const e = JSON.parse(geminiCodec.createStreamRenderer('m').error(code, 'x')) as { error: { code: number; status: string } };
    t.strictSame([e.error.code, e.error.status], [http, status], code);
  }
  const fromEvent = geminiCodec.createStreamRenderer('m');
  t.strictSame(JSON.parse(fromEvent.event({ type: 'error', message: 'The model is overloaded.', code: 'UNAVAILABLE' })), { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }, 'an upstream error event is rendered the same way');
  t.equal(fromEvent.end(), '');
});

t.test("a chunk whose usageMetadata falls below an earlier chunk's is not believed (counts are cumulative)", async (t) => {
  const chunk = (usage: Record<string, number>, finish = false) =>
    `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'x' }] }, ...(finish ? { finishReason: 'STOP' } : {}) }], usageMetadata: usage })}\r\n\r\n`;
  const body = chunk({ promptTokenCount: 500, candidatesTokenCount: 700, thoughtsTokenCount: 40 }) + chunk({ promptTokenCount: 3, candidatesTokenCount: 1 }, true);
  const { events } = parse(Buffer.from(body), 1 << 20);
  const usages = events.filter((e) => e.type === 'usage').map((e) => (e as { usage: Usage }).usage);
  t.match(usages.at(-1), { input: 500, output: 700, reasoning: 40 }, 'the counted usage keeps the larger counts');
});
