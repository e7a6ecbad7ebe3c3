// The `openai-responses` codec, streams: the upstream SSE fixture fed byte-chunked through SseParser into the
// stream parser (same answer and usage as the non-streamed fixture, usage counted once, terminal events), and the
// renderer's SSE parsed back (round trips, response.completed in end(), response.failed + [DONE] on error).

import { readFileSync } from 'node:fs';
import t from 'tap';
import { responsesCodec } from '../../src/wire/openai-responses/index.js';
import { SseParser, type SseFrame } from '../../src/wire/sse.js';
import type { CanonicalEvent, Part, StopReason } from '../../src/wire/canonical.js';
import type { Usage } from '../../src/ledger/types.js';

const fixture = (name: string) => new URL(`../fixtures/openai-responses/${name}`, import.meta.url);
const STREAM = readFileSync(fixture('stream-reasoning-tool-call.sse'));
const WHOLE = JSON.parse(readFileSync(fixture('response-reasoning-tool-call.json'), 'utf8')) as Record<string, unknown>;

const RID = 'resp_68b1f0a2c4e48193a3e1b7d55e0f19c20a6f4c1d9b2e7a53';
const RS = 'rs_68b1f0a3d7c08193b8f2e44a1c9d6e770a6f4c1d9b2e7a53';
const ENC = 'gAAAAABosfCnR2f0cX9kVt3yQ1mW8eLq7ZbN4uJ6hD0sP5aK2oG9rT1vE3iY8wC7nB6xM4zF0lH5jU2qS9dA1pO3kR6tL8eV7bN0mX4cZ2gW5yQ9uI1oP7aS3dF6hJ8kL0zX2cV4bN6mQ1wE3rT5yU7iO9pA2sD4fG6hJ8kL1zX3cV5bN7mQ==';
const CALL = 'call_Qm3vT8pL2xR7kN4wY9sB1dFh';
const SUMMARY =
  "**Deciding on a tool call**\n\nThe user wants the current weather in Paris. I don't have live data, so I should call get_weather with the city set to Paris." +
  '\n\n' +
  "**Choosing units**\n\nThey didn't say which units they want; Paris uses Celsius, so I'll ask for celsius.";
const TEXT = 'Let me check the current weather in Paris for you.';
const ARGS = '{"city":"Paris","unit":"celsius"}';
const ENVELOPE = `{"format":"openai-responses","id":"${RS}","encrypted_content":"${ENC}"}`;
// 2143 input tokens of which 1920 cached; 310 output tokens of which 256 reasoning.
const USAGE: Usage = { input: 223, cached: 1920, cacheWrite: null, output: 54, reasoning: 256 };

const enc = new TextEncoder();

/** SSE bytes -> frames, fed in pieces of `size` bytes (0: all at once). */
function frames(bytes: Uint8Array | string, size = 0): SseFrame[] {
  const b = typeof bytes === 'string' ? enc.encode(bytes) : bytes;
  const p = new SseParser();
  const out: SseFrame[] = [];
  const step = size > 0 ? size : b.length;
  for (let at = 0; at < b.length; at += step) out.push(...p.push(b.subarray(at, at + step)));
  out.push(...p.end());
  return out;
}

function parse(bytes: Uint8Array | string, size = 0) {
  const parser = responsesCodec.createStreamParser();
  const events: CanonicalEvent[] = [];
  for (const f of frames(bytes, size)) events.push(...parser.frame(f));
  const tail = parser.end();
  return { events: [...events, ...tail], tail, terminated: parser.terminated };
}

/** The fixture's frames as raw SSE text blocks, to cut and splice. */
const blocks = (): string[] => STREAM.toString('utf8').split('\n\n').filter((b) => b !== '').map((b) => `${b}\n\n`);

/** Consecutive duplicate event types collapsed: the shape of a stream. */
const shape = (events: CanonicalEvent[]) => events.map((e) => e.type).filter((ty, i, a) => ty !== a[i - 1]);
const joined = (events: CanonicalEvent[], type: 'text_delta' | 'reasoning_delta') => events.flatMap((e) => (e.type === type ? [e.text] : [])).join('');

/** A whole answer assembled from events, the way a pipeline would: reasoning_signature lands in `signature`. */
function collect(events: CanonicalEvent[]) {
  const parts = new Map<number, { type: string; text: string; id?: string; name?: string; signature?: string }>();
  let usage: Usage | null = null;
  let stopReason: StopReason | null = null;
  for (const e of events) {
    if (e.type === 'text_start') parts.set(e.index, { type: 'text', text: '' });
    else if (e.type === 'reasoning_start') parts.set(e.index, { type: 'reasoning', text: '' });
    else if (e.type === 'tool_call_start') parts.set(e.index, { type: 'tool_call', text: '', id: e.id, name: e.name });
    else if (e.type === 'text_delta' || e.type === 'reasoning_delta') parts.get(e.index)!.text += e.text;
    else if (e.type === 'tool_call_delta') parts.get(e.index)!.text += e.arguments;
    else if (e.type === 'reasoning_signature') parts.get(e.index)!.signature = e.signature;
    else if (e.type === 'usage') usage = e.usage;
    else if (e.type === 'finish') stopReason = e.stopReason;
  }
  const content: Part[] = [...parts.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([, p]) =>
      p.type === 'tool_call'
        ? { type: 'tool_call', id: p.id!, name: p.name!, arguments: p.text }
        : p.type === 'reasoning'
          ? p.signature === undefined
            ? { type: 'reasoning', text: p.text }
            : { type: 'reasoning', text: p.text, signature: p.signature }
          : { type: 'text', text: p.text },
    );
  return { content, usage, stopReason };
}

t.test('the streamed fixture, fed byte-chunked: events in output order, same answer as the non-streamed fixture', async (t) => {
  const whole = parse(STREAM);
  t.ok(whole.terminated, 'response.completed terminates');
  t.strictSame(shape(whole.events), [
    'start',
    'reasoning_start',
    'reasoning_delta',
    'reasoning_signature',
    'block_stop',
    'text_start',
    'text_delta',
    'block_stop',
    'tool_call_start',
    'tool_call_delta',
    'block_stop',
    'usage',
    'finish',
  ]);
  t.strictSame(whole.events[0], { type: 'start', id: RID, model: 'o4-mini-2025-04-16' });
  t.strictSame(whole.events.filter((e) => e.type.endsWith('_start')).map((e) => (e as { index: number }).index), [0, 1, 2], 'reasoning 0, message 1, call 2');
  t.strictSame(whole.events.find((e) => e.type === 'tool_call_start'), { type: 'tool_call_start', index: 2, id: CALL, name: 'get_weather' });
  t.equal(joined(whole.events, 'reasoning_delta'), SUMMARY, 'two summary parts joined by a blank line');
  t.equal(joined(whole.events, 'text_delta'), TEXT);
  t.strictSame(whole.events.find((e) => e.type === 'reasoning_signature'), { type: 'reasoning_signature', index: 0, signature: ENVELOPE, origin: 'openai-responses' });
  t.strictSame(whole.events.filter((e) => e.type === 'usage'), [{ type: 'usage', usage: USAGE }], 'usage once, hand-computed buckets');
  t.strictSame(whole.events.filter((e) => e.type === 'finish'), [{ type: 'finish', stopReason: 'tool_calls' }]);
  t.strictSame(whole.tail, [], 'nothing owed at the end');

  const expected = responsesCodec.parseResponse(WHOLE);
  const got = collect(whole.events);
  t.strictSame(got.usage, expected.usage, 'the stream reports the same usage as the non-streamed answer');
  t.equal(got.stopReason, expected.stopReason);
  t.strictSame(
    got.content,
    expected.content.map((p) => (p.type === 'reasoning' ? { type: 'reasoning', text: p.text, signature: p.opaque } : p)),
    'same parts; the encrypted reasoning rides in the signature channel of events',
  );

  for (const size of [1, 3, 7, 64, 1000]) {
    t.strictSame(parse(STREAM, size).events, whole.events, `chunks of ${size} bytes`);
  }
});

t.test('usage is counted once: a repeated response.completed, an added response.done', async (t) => {
  const base = parse(STREAM).events;
  const b = blocks();
  const completed = b.at(-1)!;
  t.match(completed, /^event: response\.completed\n/);
  const twice = parse(b.join('') + completed);
  t.strictSame(twice.events, base, 'a second response.completed adds no usage and no finish');
  t.ok(twice.terminated);
  const done = completed.replaceAll('response.completed', 'response.done');
  const plusDone = parse(b.join('') + done);
  t.strictSame(plusDone.events, base, 'response.done after response.completed adds nothing');
  t.equal(plusDone.events.filter((e) => e.type === 'usage').length, 1);
  t.equal(plusDone.events.filter((e) => e.type === 'finish').length, 1);
});

t.test('response.done alone is a terminal event (Responses passthrough)', async (t) => {
  const b = blocks();
  const onlyDone = parse([...b.slice(0, -1), b.at(-1)!.replaceAll('response.completed', 'response.done')].join(''));
  t.ok(onlyDone.terminated);
  t.strictSame(onlyDone.events, parse(STREAM).events, 'same events as with response.completed');
});

t.test('a stream cut before its terminal event: not terminated, no usage, no finish', async (t) => {
  const b = blocks();
  const cut = parse(b.slice(0, -1).join(''));
  t.equal(cut.terminated, false);
  t.equal(cut.events.filter((e) => e.type === 'usage' || e.type === 'finish').length, 0, 'no usage or finish invented');
  t.strictSame(cut.tail, [], 'all blocks were closed by their items');

  // Cut in the middle of the message text: end() closes the open text block, nothing more.
  const mid = b.findIndex((x) => x.startsWith('event: response.output_text.delta') && x.includes('"delta":" current"'));
  t.ok(mid > 0, 'the fixture has the delta to cut at');
  const half = parse(b.slice(0, mid).join(''));
  t.equal(half.terminated, false);
  t.strictSame(half.tail, [{ type: 'block_stop', index: 1 }]);
  t.equal(joined(half.events, 'text_delta'), 'Let me check the');
  t.equal(half.events.filter((e) => e.type === 'usage' || e.type === 'finish').length, 0);

  // A cut in the middle of a frame (no blank line) still counts the frame: SseParser.end() flushes it.
  const noBlank = parse(b.join('').replace(/\n\n$/, ''));
  t.ok(noBlank.terminated);
});

t.test('non-JSON data, comments, [DONE] and unknown events are ignored', async (t) => {
  const b = blocks();
  const noisy = [': keep-alive\n\n', ...b.slice(0, 5), 'event: ping\ndata: not json\n\n', 'data: \n\n', ...b.slice(5), 'data: [DONE]\n\n', 'data: [DONE]\n\n'];
  noisy.splice(10, 0, 'event: response.output_text.annotation.added\ndata: {"type":"response.output_text.annotation.added","sequence_number":99,"output_index":1}\n\n');
  const r = parse(noisy.join(''));
  t.strictSame(r.events, parse(STREAM).events);
  t.ok(r.terminated);
});

const created = (id: string) => `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id, object: 'response', status: 'in_progress', model: 'gpt-4.1-2025-04-14', output: [], usage: null } })}\n\n`;
const terminalFrame = (type: string, response: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: 9, response: { id: 'resp_t', object: 'response', model: 'gpt-4.1-2025-04-14', ...response } })}\n\n`;

t.test('response.failed, response.incomplete and error events', async (t) => {
  const failed = parse(
    created('resp_t') +
      terminalFrame('response.failed', {
        status: 'failed',
        output: [],
        error: { code: 'server_error', message: 'The model produced invalid content.' },
        usage: { input_tokens: 40, input_tokens_details: { cached_tokens: 0 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 43 },
      }),
  );
  t.ok(failed.terminated);
  t.strictSame(failed.events, [
    { type: 'start', id: 'resp_t', model: 'gpt-4.1-2025-04-14' },
    { type: 'usage', usage: { input: 40, cached: 0, cacheWrite: null, output: 3, reasoning: 0 } },
    { type: 'error', message: 'The model produced invalid content.', code: 'server_error' },
  ], 'usage kept, an error instead of a finish');

  const incomplete = parse(
    created('resp_t') +
      terminalFrame('response.incomplete', {
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
        output: [{ id: 'msg_1', type: 'message', status: 'incomplete', role: 'assistant', content: [{ type: 'output_text', annotations: [], text: 'Once upon' }] }],
        usage: { input_tokens: 12, output_tokens: 16, total_tokens: 28 },
      }),
  );
  t.ok(incomplete.terminated);
  t.strictSame(incomplete.events, [
    { type: 'start', id: 'resp_t', model: 'gpt-4.1-2025-04-14' },
    { type: 'text_start', index: 0 },
    { type: 'text_delta', index: 0, text: 'Once upon' },
    { type: 'block_stop', index: 0 },
    { type: 'usage', usage: { input: 12, cached: null, cacheWrite: null, output: 16, reasoning: null } },
    { type: 'finish', stopReason: 'max_tokens' },
  ], 'an item only in the terminal response is still emitted; missing details stay null');

  const err = parse(created('resp_t') + 'event: error\ndata: {"type":"error","sequence_number":1,"code":"rate_limit_exceeded","message":"Rate limit reached","param":null}\n\n');
  t.equal(err.terminated, false, 'an error event is not a terminal event');
  t.strictSame(err.events.at(-1), { type: 'error', message: 'Rate limit reached', code: 'rate_limit_exceeded' });
});

t.test('done events carry what deltas did not', async (t) => {
  // An upstream that sends no deltas at all, only added/done events.
  const ev = (type: string, body: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: 0, ...body })}\n\n`;
  const text =
    created('resp_d') +
    ev('response.output_item.added', { output_index: 0, item: { id: 'fc_1', type: 'function_call', status: 'in_progress', arguments: '', call_id: 'call_1', name: 'f' } }) +
    ev('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta: '{"a"' }) +
    ev('response.function_call_arguments.done', { item_id: 'fc_1', output_index: 0, arguments: '{"a":1}' }) +
    ev('response.output_item.done', { output_index: 0, item: { id: 'fc_1', type: 'function_call', status: 'completed', arguments: '{"a":1}', call_id: 'call_1', name: 'f' } }) +
    ev('response.output_item.added', { output_index: 1, item: { id: 'msg_1', type: 'message', status: 'in_progress', role: 'assistant', content: [] } }) +
    ev('response.content_part.added', { item_id: 'msg_1', output_index: 1, content_index: 0, part: { type: 'output_text', annotations: [], text: '' } }) +
    ev('response.output_text.done', { item_id: 'msg_1', output_index: 1, content_index: 0, text: 'whole text' }) +
    ev('response.output_item.done', { output_index: 1, item: { id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', annotations: [], text: 'whole text' }] } }) +
    terminalFrame('response.completed', { status: 'completed', output: [] });
  const r = parse(text);
  t.strictSame(r.events, [
    { type: 'start', id: 'resp_d', model: 'gpt-4.1-2025-04-14' },
    { type: 'tool_call_start', index: 0, id: 'call_1', name: 'f' },
    { type: 'tool_call_delta', index: 0, arguments: '{"a"' },
    { type: 'tool_call_delta', index: 0, arguments: ':1}' },
    { type: 'block_stop', index: 0 },
    { type: 'text_start', index: 1 },
    { type: 'text_delta', index: 1, text: 'whole text' },
    { type: 'block_stop', index: 1 },
    { type: 'finish', stopReason: 'tool_calls' },
  ], 'no usage in the terminal response: no usage event');
});

// ---- renderer -------------------------------------------------------------------------------------------------

interface Rendered {
  event: string | null;
  data: Record<string, unknown> | '[DONE]';
}
const rendered = (sse: string): Rendered[] => frames(sse).map((f) => ({ event: f.event, data: f.data === '[DONE]' ? '[DONE]' : (JSON.parse(f.data) as Record<string, unknown>) }));

t.test('renderer: the fixture events render to a Responses stream that parses back to the same events', async (t) => {
  const upstream = parse(STREAM).events;
  const r = responsesCodec.createStreamRenderer('o4-mini');
  const sse = upstream.map((e) => r.event(e)).join('') + r.end();
  const out = rendered(sse);
  t.ok(out.every((f) => f.data !== '[DONE]'), 'a normal end sends no [DONE]');
  const data = out.map((f) => f.data as Record<string, unknown>);
  t.ok(out.every((f) => f.event === (f.data as Record<string, unknown>).type), 'every frame names its type in `event:`');
  t.strictSame(data.map((d) => d.sequence_number), data.map((_, i) => i), 'sequence numbers 0, 1, 2, ...');
  t.equal(data[0]!.type, 'response.created');
  t.equal((data[0]!.response as Record<string, unknown>).status, 'in_progress');
  t.equal(data[1]!.type, 'response.in_progress');
  t.equal(data.at(-1)!.type, 'response.completed');

  const final = data.at(-1)!.response as Record<string, unknown> & { output: Record<string, unknown>[] };
  t.equal(final.id, RID);
  t.equal(final.status, 'completed');
  t.equal(final.model, 'o4-mini');
  t.strictSame(final.usage, WHOLE.usage, 'the completed response carries the upstream usage, added back up');
  t.strictSame(final.output.map((o) => o.type), ['reasoning', 'message', 'function_call']);
  t.strictSame(final.output[0]!.summary, [{ type: 'summary_text', text: SUMMARY }]);
  t.equal(final.output[0]!.encrypted_content, ENC, 'the encrypted reasoning reaches the client');
  t.strictSame(final.output[1]!.content, [{ type: 'output_text', annotations: [], logprobs: [], text: TEXT }]);
  t.strictSame(final.output[2], { id: 'fc_Qm3vT8pL2xR7kN4wY9sB1dFh', type: 'function_call', status: 'completed', arguments: ARGS, call_id: CALL, name: 'get_weather' });

  const back = parse(sse);
  t.ok(back.terminated);
  const strip = (es: CanonicalEvent[]) => es.filter((e) => e.type !== 'start' && e.type !== 'reasoning_signature');
  t.strictSame(strip(back.events), strip(upstream), 'same blocks, deltas, usage and finish');
  const sig = back.events.find((e) => e.type === 'reasoning_signature') as { signature: string } | undefined;
  t.match(JSON.parse(sig!.signature), { format: 'openai-responses', encrypted_content: ENC }, 'the encrypted content survives the round trip');
});

t.test('renderer: usage after the finish event still lands in response.completed; stop reasons', async (t) => {
  const r = responsesCodec.createStreamRenderer('gpt-4o');
  const usage: Usage = { input: 30, cached: 1280, cacheWrite: null, output: 7, reasoning: 0 };
  const sse = [
    r.event({ type: 'start', id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG', model: 'gpt-4o-2024-08-06' }),
    r.event({ type: 'text_start', index: 0 }),
    r.event({ type: 'text_delta', index: 0, text: 'Hi' }),
    r.event({ type: 'block_stop', index: 0 }),
    r.event({ type: 'finish', stopReason: 'end' }),
    r.event({ type: 'usage', usage }),
    r.end(),
  ].join('');
  const data = rendered(sse).map((f) => f.data as Record<string, unknown>);
  const last = data.at(-1)!;
  t.equal(last.type, 'response.completed');
  const resp = last.response as Record<string, unknown>;
  t.equal(resp.id, 'resp_chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG');
  t.strictSame(resp.usage, { input_tokens: 1310, input_tokens_details: { cached_tokens: 1280 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1317 });
  t.equal(r.end(), '', 'end() once');
  t.equal(r.event({ type: 'usage', usage }), '');

  const cut = responsesCodec.createStreamRenderer('gpt-4o');
  const cutSse = cut.event({ type: 'start', id: 'resp_1', model: 'm' }) + cut.event({ type: 'text_start', index: 0 }) + cut.event({ type: 'text_delta', index: 0, text: 'Once' }) + cut.event({ type: 'finish', stopReason: 'max_tokens' }) + cut.end();
  const cutData = rendered(cutSse).map((f) => f.data as Record<string, unknown>);
  t.strictSame(cutData.slice(-4).map((d) => d.type), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete'], 'an unclosed block is closed, then response.incomplete');
  t.strictSame((cutData.at(-1)!.response as Record<string, unknown>).incomplete_details, { reason: 'max_output_tokens' });
  t.equal((cutData.at(-1)!.response as Record<string, unknown>).usage, null, 'no usage seen: null');
  const back = parse(cutSse);
  t.strictSame(back.events.at(-1), { type: 'finish', stopReason: 'max_tokens' });
});

t.test('renderer: error() is response.failed followed by one [DONE]', async (t) => {
  const r = responsesCodec.createStreamRenderer('o4-mini');
  let sse = r.event({ type: 'start', id: 'resp_e', model: 'o4-mini' }) + r.event({ type: 'text_start', index: 0 }) + r.event({ type: 'text_delta', index: 0, text: 'Partial' });
  sse += r.error('TOLLGATE_ERR_UPSTREAM_STALL', 'the upstream sent nothing for 30 s');
  const out = rendered(sse);
  t.equal(out.at(-1)!.data, '[DONE]');
  t.equal(out.at(-1)!.event, null);
  t.equal(out.filter((f) => f.data === '[DONE]').length, 1, 'one [DONE]');
  const failed = out.at(-2)!;
  t.equal(failed.event, 'response.failed');
  const resp = (failed.data as Record<string, unknown>).response as Record<string, unknown> & { output: Record<string, unknown>[] };
  t.equal(resp.status, 'failed');
  t.strictSame(resp.error, { code: 'TOLLGATE_ERR_UPSTREAM_STALL', message: 'the upstream sent nothing for 30 s' });
  t.equal(resp.output[0]!.status, 'incomplete', 'the output so far, marked incomplete');
  t.strictSame(resp.output[0]!.content, [{ type: 'output_text', annotations: [], logprobs: [], text: 'Partial' }]);
  t.equal(r.end(), '', 'nothing after the terminal event');
  t.equal(r.error('X', 'y'), '');
  t.equal(r.event({ type: 'text_delta', index: 0, text: 'more' }), '');

  const back = parse(sse);
  t.ok(back.terminated, 'response.failed terminates');
  t.strictSame(back.events.at(-1), { type: 'error', message: 'the upstream sent nothing for 30 s', code: 'TOLLGATE_ERR_UPSTREAM_STALL' });

  const early = responsesCodec.createStreamRenderer('o4-mini');
  const earlyOut = rendered(early.error('TOLLGATE_ERR_UPSTREAM_CONNECT', 'connect failed'));
  t.strictSame(earlyOut.map((f) => f.event), ['response.created', 'response.in_progress', 'response.failed', null], 'before any event: created first, so the SDK has a snapshot');

  const viaEvent = responsesCodec.createStreamRenderer('o4-mini');
  const evOut = rendered(viaEvent.event({ type: 'start', id: 'resp_v', model: 'o4-mini' }) + viaEvent.event({ type: 'error', message: 'overloaded', code: 'server_error' }) + viaEvent.end());
  t.strictSame(evOut.slice(-2).map((f) => f.event), ['response.failed', null], 'an upstream error event renders the same failure, once');
  t.strictSame(((evOut.at(-2)!.data as Record<string, unknown>).response as Record<string, unknown>).error, { code: 'server_error', message: 'overloaded' });
});
