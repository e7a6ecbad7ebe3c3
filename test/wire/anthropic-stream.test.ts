// The `anthropic` codec, streaming half: upstream SSE (fixtures shaped exactly like Anthropic's stream, fed through
// SseParser in byte chunks) -> canonical events, and canonical events -> the SSE an Anthropic SDK accumulates.
// Usage must be counted once: the streamed and the non-streamed answer of the same exchange give the same usage.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { anthropicCodec } from '../../src/wire/anthropic/index.js';
import { SseParser, type SseFrame } from '../../src/wire/sse.js';
import type { CanonicalEvent, Part } from '../../src/wire/canonical.js';
import { totalTokens, type Usage } from '../../src/ledger/types.js';

const bytes = (name: string) => readFileSync(new URL(`../fixtures/anthropic/${name}`, import.meta.url));
const json = (name: string) => JSON.parse(bytes(name).toString('utf8')) as unknown;

/** SSE frames of some bytes, pushed `chunk` bytes at a time. */
function framesOf(data: Uint8Array, chunk: number): SseFrame[] {
  const p = new SseParser();
  const out: SseFrame[] = [];
  for (let i = 0; i < data.length; i += chunk) out.push(...p.push(data.subarray(i, i + chunk)));
  return [...out, ...p.end()];
}

function parseFrames(frames: readonly SseFrame[]): { events: CanonicalEvent[]; terminated: boolean } {
  const parser = anthropicCodec.createStreamParser();
  const events = frames.flatMap((f) => parser.frame(f));
  events.push(...parser.end());
  return { events, terminated: parser.terminated };
}

const render = (events: readonly CanonicalEvent[], model: string): string => {
  const r = anthropicCodec.createStreamRenderer(model);
  return events.map((e) => r.event(e)).join('') + r.end();
};

const lastUsage = (events: readonly CanonicalEvent[]): Usage | null => {
  const u = events.filter((e) => e.type === 'usage');
  return u.length === 0 ? null : (u.at(-1) as { usage: Usage }).usage;
};

/** The answer the events describe, assembled the way a consumer would (parts by index, in order). */
function assemble(events: readonly CanonicalEvent[]): Part[] {
  const parts = new Map<number, { type: 'text' | 'reasoning' | 'tool_call'; text: string; signature: string; id: string; name: string }>();
  for (const e of events) {
    if (e.type === 'text_start') parts.set(e.index, { type: 'text', text: '', signature: '', id: '', name: '' });
    if (e.type === 'reasoning_start') parts.set(e.index, { type: 'reasoning', text: '', signature: '', id: '', name: '' });
    if (e.type === 'tool_call_start') parts.set(e.index, { type: 'tool_call', text: '', signature: '', id: e.id, name: e.name });
    if (e.type === 'text_delta' || e.type === 'reasoning_delta') parts.get(e.index)!.text += e.text;
    if (e.type === 'tool_call_delta') parts.get(e.index)!.text += e.arguments;
    if (e.type === 'reasoning_signature') parts.get(e.index)!.signature += e.signature;
  }
  return [...parts.entries()].sort(([a], [b]) => a - b).map(([, p]): Part => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    // The consumer knows which family the stream came from, and tags the signature with it.
    if (p.type === 'reasoning') return p.signature ? { type: 'reasoning', text: p.text, signature: p.signature, origin: 'anthropic' } : { type: 'reasoning', text: p.text };
    return { type: 'tool_call', id: p.id, name: p.name, arguments: p.text };
  });
}

/** What @anthropic-ai/sdk's MessageStream does with the events (its #accumulateMessage), checking the order rules. */
type Msg = [] | [string];
interface Asserts {
  equal(found: unknown, wanted: unknown, ...m: Msg): boolean;
  ok(v: unknown, ...m: Msg): boolean;
  notOk(v: unknown, ...m: Msg): boolean;
  fail(...m: Msg): boolean;
}
type Block = Record<string, unknown> & { type: string };
type Snapshot = Record<string, unknown> & { content: Block[]; usage: Record<string, number> };

function sdkAccumulate(t: Asserts, frames: readonly SseFrame[]): Record<string, unknown> {
  let snap: Snapshot | null = null;
  const jsonBuf = new Map<number, string>();
  let stopped = false;
  for (const f of frames) {
    const ev = JSON.parse(f.data) as Record<string, unknown> & { type: string; index: number };
    t.equal(f.event, ev.type, `event: line names the data type (${ev.type})`);
    t.notOk(stopped, 'nothing after message_stop');
    if (ev.type === 'message_start') {
      t.equal(snap, null, 'one message_start, first');
      snap = structuredClone(ev.message) as Snapshot;
      continue;
    }
    if (snap === null) throw new Error(`${ev.type} before message_start`);
    switch (ev.type) {
      case 'content_block_start':
        t.equal(ev.index, snap.content.length, 'blocks start in index order');
        snap.content.push(structuredClone(ev.content_block) as Block);
        break;
      case 'content_block_delta': {
        const b = snap.content[ev.index]!;
        const d = ev.delta as Record<string, string>;
        if (d.type === 'text_delta' && b.type === 'text') b.text += d.text!;
        else if (d.type === 'thinking_delta' && b.type === 'thinking') b.thinking += d.thinking!;
        else if (d.type === 'signature_delta' && b.type === 'thinking') b.signature = d.signature;
        else if (d.type === 'input_json_delta' && b.type === 'tool_use') jsonBuf.set(ev.index, (jsonBuf.get(ev.index) ?? '') + d.partial_json);
        else t.fail(`delta ${d.type} for a ${b.type} block`);
        break;
      }
      case 'content_block_stop': {
        const b = snap.content[ev.index]!;
        if (b.type === 'tool_use' && jsonBuf.has(ev.index)) b.input = JSON.parse(jsonBuf.get(ev.index)!);
        break;
      }
      case 'message_delta': {
        const d = ev.delta as Record<string, unknown>;
        snap.stop_reason = d.stop_reason;
        snap.stop_sequence = d.stop_sequence;
        // Older SDKs take only output_tokens from message_delta: input and cache counts must be in message_start.
        snap.usage.output_tokens = (ev.usage as Record<string, number>).output_tokens!;
        break;
      }
      case 'message_stop':
        stopped = true;
        break;
      default:
        t.fail(`unexpected event ${ev.type}`);
    }
  }
  t.ok(stopped, 'the stream ends with message_stop');
  return snap!;
}

const SIG = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds7ohZsWqJ3lkGeDWJ6Fz0HUuUCtSWRmQDFY3y7mnZzsYyqDoAHQRKDnwg8kTaSuLxJxwoHOFGgtMIBAB';
const TOOL_ID = 'toolu_01A09q90qw90lq917835lq9';

// Hand-computed from the fixture: message_start reports 472 uncached input, 2048 read from cache, 1024 written to
// it (and a placeholder output_tokens of 4); message_delta reports the cumulative output, 89.
const START_USAGE: Usage = { input: 472, cached: 2048, cacheWrite: 1024, output: null, reasoning: null, cacheWrite1h: 0 };
const FINAL_USAGE: Usage = { input: 472, cached: 2048, cacheWrite: 1024, output: 89, reasoning: null, cacheWrite1h: 0 };

const EXPECTED: CanonicalEvent[] = [
  { type: 'start', id: 'msg_01HCDu5LRGeP2o7s2xGmxyx8', model: 'claude-sonnet-4-5-20250929' },
  { type: 'usage', usage: START_USAGE },
  { type: 'reasoning_start', index: 0 },
  { type: 'reasoning_delta', index: 0, text: 'The user wants the current weather in Paris.' },
  { type: 'reasoning_delta', index: 0, text: ' I should call get_weather with the city and celsius.' },
  { type: 'reasoning_signature', index: 0, signature: SIG, origin: 'anthropic' },
  { type: 'block_stop', index: 0 },
  { type: 'text_start', index: 1 },
  { type: 'text_delta', index: 1, text: "I'll check the current weather" },
  { type: 'text_delta', index: 1, text: ' in Paris for you.' },
  { type: 'block_stop', index: 1 },
  { type: 'tool_call_start', index: 2, id: TOOL_ID, name: 'get_weather' },
  { type: 'tool_call_delta', index: 2, arguments: '{"location": "Par' },
  { type: 'tool_call_delta', index: 2, arguments: 'is, France", "unit": "cel' },
  { type: 'tool_call_delta', index: 2, arguments: 'sius"}' },
  { type: 'block_stop', index: 2 },
  { type: 'finish', stopReason: 'tool_calls' },
  { type: 'usage', usage: FINAL_USAGE },
];

t.test('parser: the thinking + text + tool_use stream, in any byte chunking', async (t) => {
  const data = bytes('stream-thinking-tool-cached.sse');
  for (const chunk of [1, 7, 64, data.length]) {
    const { events, terminated } = parseFrames(framesOf(data, chunk));
    t.strictSame(events, EXPECTED, `chunks of ${chunk} bytes: ping ignored, empty input_json_delta skipped`);
    t.equal(terminated, true, 'terminated after message_stop');
  }
});

t.test('usage is counted once, and equals the non-streamed answer of the same exchange', async (t) => {
  const { events } = parseFrames(framesOf(bytes('stream-thinking-tool-cached.sse'), 13));
  const usages = events.filter((e) => e.type === 'usage');
  t.equal(usages.length, 2, 'one usage event from message_start, one from message_delta');
  const unary = anthropicCodec.parseResponse(json('message-thinking-tool-cached.json'));
  t.strictSame(lastUsage(events), unary.usage, 'streamed usage == non-streamed usage');
  t.strictSame(lastUsage(events), FINAL_USAGE);
  t.equal(totalTokens(lastUsage(events)!), 3633, '472 + 2048 + 1024 + 89: the placeholder 4 and the first report are not added');
  t.not(totalTokens(START_USAGE) + totalTokens(FINAL_USAGE), 3633, 'summing the two events would count the input twice');

  const content = assemble(events);
  t.strictSame(
    content.map((p) => (p.type === 'tool_call' ? { ...p, arguments: JSON.parse(p.arguments) as unknown } : p)),
    unary.content.map((p) => (p.type === 'tool_call' ? { ...p, arguments: JSON.parse(p.arguments) as unknown } : p)),
    'the streamed content is the non-streamed content (arguments equal as JSON)',
  );
});

t.test('renderer: the events rendered back are what the SDK accumulates, and re-parse to the same events', async (t) => {
  const { events } = parseFrames(framesOf(bytes('stream-thinking-tool-cached.sse'), 64));
  const text = render(events, 'claude-sonnet-4-5');
  const frames = framesOf(Buffer.from(text), 5);
  t.strictSame(frames.map((f) => f.event), [
    'message_start',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'message_delta', 'message_stop',
  ]);
  t.ok(text.startsWith('event: message_start\ndata: {"type":"message_start",'), 'event line, then one data line');
  t.ok(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n'));
  const start = JSON.parse(frames[0]!.data) as { message: Record<string, unknown> };
  t.strictSame(start.message, {
    id: 'msg_01HCDu5LRGeP2o7s2xGmxyx8', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: 472, cache_creation_input_tokens: 1024, cache_read_input_tokens: 2048, output_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 1024, ephemeral_1h_input_tokens: 0 }, },
  }, 'message_start waits for the usage that follows start: input and cache counts are in it');
  t.strictSame(JSON.parse(frames.at(-2)!.data), {
    type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { input_tokens: 472, cache_creation_input_tokens: 1024, cache_read_input_tokens: 2048, output_tokens: 89, cache_creation: { ephemeral_5m_input_tokens: 1024, ephemeral_1h_input_tokens: 0 }, },
  });

  const unary = anthropicCodec.renderResponse(anthropicCodec.parseResponse(json('message-thinking-tool-cached.json')), 'claude-sonnet-4-5');
  t.strictSame(sdkAccumulate(t, frames), unary, "the SDK's accumulated message == the non-streamed rendering of the same exchange");

  const again = parseFrames(frames);
  t.equal(again.terminated, true);
  t.strictSame(again.events, EXPECTED.map((e) => (e.type === 'start' ? { ...e, model: 'claude-sonnet-4-5' } : e)), 'render -> parse gives the same events (the client model name in start)');
});

t.test('parser: a stream cut before message_stop is not terminated; cut before message_delta has no output count', async (t) => {
  const all = framesOf(bytes('stream-thinking-tool-cached.sse'), 64);
  t.equal(all.at(-1)!.event, 'message_stop');
  const noStop = parseFrames(all.slice(0, -1));
  t.equal(noStop.terminated, false);
  t.strictSame(noStop.events, EXPECTED, 'everything else arrived');
  const noDelta = parseFrames(all.slice(0, -2));
  t.equal(noDelta.terminated, false);
  t.strictSame(lastUsage(noDelta.events), START_USAGE, "input known, output unknown (not message_start's placeholder 4)");
  t.notOk(noDelta.events.some((e) => e.type === 'finish'), 'no finish invented');
  const parser = anthropicCodec.createStreamParser();
  for (const f of all.slice(0, 5)) parser.frame(f);
  t.strictSame(parser.end(), [], 'end() owes nothing: no finish or usage invented');
  t.equal(parser.terminated, false);
});

t.test('parser: stop sequence, and message_delta carrying input and cache counts (newer API versions)', async (t) => {
  const { events, terminated } = parseFrames(framesOf(bytes('stream-text-stop-sequence.sse'), 11));
  t.equal(terminated, true);
  t.strictSame(events, [
    { type: 'start', id: 'msg_01XFDUDYJgAACzvnptvVoYEL', model: 'claude-haiku-4-5-20251001' },
    { type: 'usage', usage: { input: 25, cached: 0, cacheWrite: 0, output: null, reasoning: null } },
    { type: 'text_start', index: 0 },
    { type: 'text_delta', index: 0, text: '1, 2, 3, 4' },
    { type: 'text_delta', index: 0, text: ', ' },
    { type: 'block_stop', index: 0 },
    { type: 'finish', stopReason: 'stop_sequence', stopSequence: '5' },
    { type: 'usage', usage: { input: 25, cached: 0, cacheWrite: 0, output: 12, reasoning: null } },
  ], 'the repeated input count replaces, it is not added: input stays 25');
  const frames = framesOf(Buffer.from(render(events, 'claude-haiku-4-5')), 64);
  t.strictSame(JSON.parse(frames.at(-2)!.data).delta, { stop_reason: 'stop_sequence', stop_sequence: '5' });
  t.strictSame(parseFrames(frames).events.slice(1), events.slice(1), 'round trip');
});

t.test('parser: message_delta input counts replace message_start ones', async (t) => {
  const parser = anthropicCodec.createStreamParser();
  const f = (data: unknown): SseFrame => ({ event: (data as { type: string }).type, data: JSON.stringify(data), id: null });
  parser.frame(f({ type: 'message_start', message: { id: 'msg_1', model: 'm', usage: { input_tokens: 10, cache_read_input_tokens: 0, output_tokens: 1 } } }));
  const ev = parser.frame(f({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { input_tokens: 12, cache_read_input_tokens: 3, output_tokens: 7 } }));
  t.strictSame(ev, [{ type: 'finish', stopReason: 'end' }, { type: 'usage', usage: { input: 12, cached: 3, cacheWrite: null, output: 7, reasoning: null } }]);
  const ev2 = parser.frame(f({ type: 'message_delta', delta: {}, usage: { output_tokens: 9 } }));
  t.strictSame(ev2, [{ type: 'usage', usage: { input: 12, cached: 3, cacheWrite: null, output: 9, reasoning: null } }], 'a later cumulative output replaces, input kept');
});

t.test("parser: message_delta's service tier replaces message_start's, the standard tier included", async (t) => {
  const f = (data: unknown): SseFrame => ({ event: (data as { type: string }).type, data: JSON.stringify(data), id: null });
  const start = (tier: string) => f({ type: 'message_start', message: { id: 'msg_1', model: 'm', usage: { input_tokens: 10, output_tokens: 1, service_tier: tier } } });
  const delta = (usage: object) => f({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5, ...usage } });
  const tierAfter = (...frames: SseFrame[]): string | undefined => {
    const parser = anthropicCodec.createStreamParser();
    const usages = frames.flatMap((x) => parser.frame(x)).filter((e): e is Extract<CanonicalEvent, { type: 'usage' }> => e.type === 'usage');
    return usages.at(-1)!.usage.serviceTier;
  };
  t.equal(tierAfter(start('priority'), delta({ service_tier: 'standard' })), undefined, 'priority, then standard: standard (the later report wins)');
  t.equal(tierAfter(start('standard'), delta({ service_tier: 'priority' })), 'priority', 'standard, then priority: priority');
  t.equal(tierAfter(start('priority'), delta({})), 'priority', 'a message_delta naming no tier keeps the earlier one');
});

t.test('parser: server-tool and redacted blocks are skipped and indexes renumbered; a call without arguments is {}', async (t) => {
  const f = (data: Record<string, unknown>): SseFrame => ({ event: String(data.type), data: JSON.stringify(data), id: null });
  const { events } = parseFrames([
    f({ type: 'message_start', message: { id: 'msg_2', model: 'm', content: [], usage: { input_tokens: 3, output_tokens: 1 } } }),
    f({ type: 'content_block_start', index: 0, content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} } }),
    f({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"query":"x"}' } }),
    f({ type: 'content_block_stop', index: 0 }),
    f({ type: 'content_block_start', index: 1, content_block: { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] } }),
    f({ type: 'content_block_stop', index: 1 }),
    f({ type: 'content_block_start', index: 2, content_block: { type: 'redacted_thinking', data: 'EmwKAhgB' } }),
    f({ type: 'content_block_stop', index: 2 }),
    f({ type: 'content_block_start', index: 3, content_block: { type: 'text', text: '' } }),
    f({ type: 'content_block_delta', index: 3, delta: { type: 'citations_delta', citation: { type: 'web_search_result_location' } } }),
    f({ type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'Found.' } }),
    f({ type: 'content_block_stop', index: 3 }),
    f({ type: 'content_block_start', index: 4, content_block: { type: 'tool_use', id: 'toolu_9', name: 'now', input: {} } }),
    f({ type: 'content_block_delta', index: 4, delta: { type: 'input_json_delta', partial_json: '' } }),
    f({ type: 'content_block_stop', index: 4 }),
    f({ type: 'message_delta', delta: { stop_reason: 'pause_turn', stop_sequence: null }, usage: { output_tokens: 20 } }),
    { event: null, data: 'not json', id: null },
    f({ type: 'message_stop' }),
  ]);
  t.strictSame(events, [
    { type: 'start', id: 'msg_2', model: 'm' },
    { type: 'usage', usage: { input: 3, cached: null, cacheWrite: null, output: null, reasoning: null } },
    { type: 'text_start', index: 0 },
    { type: 'text_delta', index: 0, text: 'Found.' },
    { type: 'block_stop', index: 0 },
    { type: 'tool_call_start', index: 1, id: 'toolu_9', name: 'now' },
    { type: 'tool_call_delta', index: 1, arguments: '{}' },
    { type: 'block_stop', index: 1 },
    { type: 'finish', stopReason: 'end' },
    { type: 'usage', usage: { input: 3, cached: null, cacheWrite: null, output: 20, reasoning: null } },
    { type: 'error', message: 'the upstream sent a stream event whose data is not JSON', code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' },
  ]);
});

t.test('parser and renderer: an error event mid-stream', async (t) => {
  const { events, terminated } = parseFrames(framesOf(bytes('stream-overloaded-error.sse'), 9));
  t.equal(terminated, false, 'an error is not a normal end');
  t.strictSame(events.at(-1), { type: 'error', message: 'Overloaded', code: 'overloaded_error' });
  const r = anthropicCodec.createStreamRenderer('claude-haiku-4-5');
  const text = events.map((e) => r.event(e)).join('');
  t.ok(text.endsWith('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'));
  t.equal(r.end(), '', 'nothing after the error');
  t.equal(r.error('TOLLGATE_ERR_UPSTREAM_STALL', 'x'), '', 'one terminal error only');
});

t.test('renderer.error: Anthropic error types', async (t) => {
  const err = (code: string) => {
    const r = anthropicCodec.createStreamRenderer('m');
    r.event({ type: 'start', id: 'msg_1', model: 'm' });
    r.event({ type: 'text_delta', index: 0, text: 'a' });
    const out = r.error(code, 'upstream went quiet');
    t.equal(r.end(), '', 'end() after error() writes nothing');
    return out;
  };
  t.equal(err('TOLLGATE_ERR_UPSTREAM_STALL'), 'event: error\ndata: {"type":"error","error":{"type":"timeout_error","message":"upstream went quiet"}}\n\n');
  t.match(err('TOLLGATE_ERR_UPSTREAM_CONNECT'), '"type":"api_error"');
  t.match(err('TOLLGATE_ERR_INVALID_REQUEST'), '"type":"invalid_request_error"');
  t.match(err('rate_limit_exceeded'), '"type":"rate_limit_error"');
  t.match(err('overloaded_error'), '"type":"overloaded_error"');
  t.match(err('server_error'), '"type":"api_error"');
  const early = anthropicCodec.createStreamRenderer('m');
  t.equal(early.error('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'late'), 'event: error\ndata: {"type":"error","error":{"type":"timeout_error","message":"late"}}\n\n', 'an error before any content: no message_start');
});

t.test('renderer: events from another format (implicit blocks, usage after finish)', async (t) => {
  const r = anthropicCodec.createStreamRenderer('gpt-4o');
  const out: string[] = [];
  const ev = (e: CanonicalEvent) => out.push(r.event(e));
  ev({ type: 'start', id: 'chatcmpl-BXl6Aq2Xw1Hh7kR0dJc5Vt9Yb3NmE', model: 'gpt-4o-2024-08-06' });
  t.equal(out.at(-1), '', 'start alone writes nothing yet');
  ev({ type: 'text_delta', index: 0, text: 'Checking.' });
  ev({ type: 'tool_call_start', index: 1, id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather' });
  ev({ type: 'tool_call_delta', index: 1, arguments: '{"location":' });
  ev({ type: 'tool_call_delta', index: 1, arguments: '"Paris"}' });
  ev({ type: 'tool_call_delta', index: 7, arguments: '{"orphan":true}' });
  ev({ type: 'finish', stopReason: 'tool_calls' });
  t.equal(out.at(-1), '', 'finish is remembered, not written');
  ev({ type: 'usage', usage: { input: 82, cached: 0, cacheWrite: null, output: 17, reasoning: 0 } });
  t.equal(out.at(-1), '', 'usage is remembered, not written');
  const end = r.end();
  t.equal(r.end(), '', 'end() writes once');
  t.equal(r.event({ type: 'text_delta', index: 0, text: 'late' }), '', 'nothing after the end');

  const frames = framesOf(Buffer.from(out.join('') + end), 64);
  const data = frames.map((f) => JSON.parse(f.data) as Record<string, unknown>);
  t.strictSame(data, [
    {
      type: 'message_start',
      message: { id: 'msg_chatcmpl-BXl6Aq2Xw1Hh7kR0dJc5Vt9Yb3NmE', type: 'message', role: 'assistant', model: 'gpt-4o', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 } },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } },
    { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', input: {} } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"location":' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_stop', index: 1 },
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 82, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 17 } },
    { type: 'message_stop' },
  ], 'text block opened implicitly; orphan arguments dropped; open blocks stopped at the end; the late usage is in message_delta');
  t.strictSame(sdkAccumulate(t, frames), {
    id: 'msg_chatcmpl-BXl6Aq2Xw1Hh7kR0dJc5Vt9Yb3NmE', type: 'message', role: 'assistant', model: 'gpt-4o',
    content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', input: { location: 'Paris' } }],
    stop_reason: 'tool_use', stop_sequence: null,
    usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 17 },
  }, 'what an SDK client ends up with (input arrived after message_start: only newer SDKs read it from message_delta)');
  t.strictSame(lastUsage(parseFrames(frames).events), { input: 82, cached: 0, cacheWrite: 0, output: 17, reasoning: null }, 'the gateway reads it back; unknown cacheWrite is 0 in Anthropic form');
});

t.test('renderer: reasoning without signature, a reused index, and an end without finish', async (t) => {
  const r = anthropicCodec.createStreamRenderer('m');
  const text =
    r.event({ type: 'start', id: 'msg_01X', model: 'm' }) +
    r.event({ type: 'reasoning_start', index: 0 }) +
    r.event({ type: 'reasoning_delta', index: 0, text: 'hmm' }) +
    r.event({ type: 'reasoning_delta', index: 0, text: '' }) +
    r.event({ type: 'text_delta', index: 0, text: 'Hi' }) +
    r.event({ type: 'block_stop', index: 0 }) +
    r.event({ type: 'block_stop', index: 0 }) +
    r.end();
  const data = framesOf(Buffer.from(text), 64).map((f) => JSON.parse(f.data) as Record<string, unknown>);
  t.strictSame(data.slice(1), [
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } },
    { type: 'content_block_stop', index: 1 },
    { type: 'message_delta', delta: { stop_reason: null, stop_sequence: null }, usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 } },
    { type: 'message_stop' },
  ], 'empty deltas and a second block_stop write nothing; no finish: stop_reason null, not invented');
  t.equal((data[0]!.message as Record<string, unknown>).id, 'msg_01X', 'an Anthropic id is kept as is');

  const empty = anthropicCodec.createStreamRenderer('m');
  const frames = framesOf(Buffer.from(empty.event({ type: 'finish', stopReason: 'max_tokens' }) + empty.end()), 64);
  t.strictSame(frames.map((f) => f.event), ['message_start', 'message_delta', 'message_stop'], 'an empty answer is still a whole message');
  t.equal((JSON.parse(frames[0]!.data) as { message: { id: string } }).message.id, 'msg_tollgate', 'no start event: a fixed id, never a random one');
  t.equal((JSON.parse(frames[1]!.data) as { delta: { stop_reason: string } }).delta.stop_reason, 'max_tokens');
});

t.test("a message_delta whose input count falls below message_start's is not believed (counts are cumulative)", async (t) => {
  const frame = (event: string, data: unknown): SseFrame => ({ event, data: JSON.stringify({ type: event, ...(data as object) }) }) as SseFrame;
  const { events } = parseFrames([
    frame('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'c', content: [], usage: { input_tokens: 500, cache_read_input_tokens: 40, output_tokens: 1 } } }),
    frame('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 2, cache_read_input_tokens: 0, output_tokens: 30 } }),
    frame('message_stop', {}),
  ]);
  t.match(lastUsage(events), { input: 500, cached: 40, output: 30 }, 'the input side keeps the larger count; the output is the last report');
});
