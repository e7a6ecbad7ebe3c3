// The `openai` WireCodec (Chat Completions <-> canonical): requests parsed and built field by field, answers parsed
// and rendered, streams parsed from any byte chunking into the same answer and usage as the non-streamed fixture,
// and rendered back into chunks an OpenAI SDK reads. Token numbers are worked out by hand in the comments.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import { TollgateError, errorBody } from '../../src/core/errors.js';
import type { Target } from '../../src/wire/codec.js';
import {
  chatIncludeUsage, createOpenAIChatRenderer, openaiCodec, OpenAIChatStreamParser, renderUsage,
} from '../../src/wire/openai/codec.js';
import { SseParser, type SseFrame } from '../../src/wire/sse.js';
import type { CanonicalEvent, CanonicalRequest, CanonicalResponse, Part } from '../../src/wire/canonical.js';
import { totalTokens, type Usage } from '../../src/ledger/types.js';
import { wireJson } from '../helpers/wire.js';

// Parsed wire JSON, read field by field in assertions.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const fixture = (name: string) => new URL(`../fixtures/openai/${name}`, import.meta.url);
const json = (name: string): Json => JSON.parse(readFileSync(fixture(name), 'utf8')) as Json;
const sse = (name: string): Buffer => readFileSync(fixture(name));

const u = (input: number | null, cached: number | null, output: number | null, reasoning: number | null, cacheWrite: number | null = null): Usage =>
  ({ input, cached, cacheWrite, output, reasoning });

// ---------------------------------------------------------------------------------------------------------------
// Helpers: feed bytes through SseParser + the stream parser; fold events into an answer; check block structure.
// ---------------------------------------------------------------------------------------------------------------

function frames(bytes: Uint8Array, size: number): SseFrame[] {
  const p = new SseParser();
  const out: SseFrame[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...p.push(bytes.subarray(i, i + size)));
  return [...out, ...p.end()];
}

function parseStream(bytes: Uint8Array, size = bytes.length): { events: CanonicalEvent[]; terminated: boolean } {
  const parser = openaiCodec.createStreamParser();
  const events: CanonicalEvent[] = [];
  for (const f of frames(bytes, size)) events.push(...parser.frame(f));
  events.push(...parser.end());
  return { events, terminated: parser.terminated };
}

/** The answer a stream's events add up to; usage: the last usage event (a later one replaces an earlier one). */
function fold(events: readonly CanonicalEvent[]): CanonicalResponse & { usageEvents: number } {
  let id = '';
  let model = '';
  const blocks = new Map<number, Part>();
  let stopReason: CanonicalResponse['stopReason'] = 'error';
  let stopSequence: string | undefined;
  let usage: Usage | null = null;
  let usageEvents = 0;
  for (const e of events) {
    switch (e.type) {
      case 'start':
        id = e.id;
        model = e.model;
        break;
      case 'text_start':
        blocks.set(e.index, { type: 'text', text: '' });
        break;
      case 'reasoning_start':
        blocks.set(e.index, { type: 'reasoning', text: '' });
        break;
      case 'tool_call_start':
        blocks.set(e.index, { type: 'tool_call', id: e.id, name: e.name, arguments: '' });
        break;
      case 'text_delta':
      case 'reasoning_delta': {
        const b = blocks.get(e.index) as { text: string };
        blocks.set(e.index, { ...(b as Part), text: b.text + e.text } as Part);
        break;
      }
      case 'tool_call_delta': {
        const b = blocks.get(e.index) as Extract<Part, { type: 'tool_call' }>;
        blocks.set(e.index, { ...b, arguments: b.arguments + e.arguments });
        break;
      }
      case 'finish':
        stopReason = e.stopReason;
        stopSequence = e.stopSequence;
        break;
      case 'usage':
        usage = e.usage;
        usageEvents++;
        break;
      default:
        break;
    }
  }
  const content = [...blocks.entries()].sort((a, b) => a[0] - b[0]).map(([, p]) => p);
  return { id, model, content, stopReason, ...(stopSequence === undefined ? {} : { stopSequence }), usage, usageEvents };
}

/** Blocks are numbered 0, 1, ... in order, opened once, closed once, deltas only while open; start comes first. */
interface Asserts {
  equal(found: unknown, wanted: unknown, message: string): unknown;
  ok(value: unknown, message: string): unknown;
  notOk(value: unknown, message: string): unknown;
}

function wellFormed(t: Asserts, events: readonly CanonicalEvent[]): void {
  const open = new Map<number, string>();
  const closed = new Set<number>();
  let next = 0;
  const firstBlock = events.findIndex((e) => e.type.endsWith('_start') && e.type !== 'start');
  if (firstBlock !== -1) t.equal(events.findIndex((e) => e.type === 'start'), 0, 'start is the first event');
  for (const e of events) {
    if (e.type === 'text_start' || e.type === 'reasoning_start' || e.type === 'tool_call_start') {
      t.equal(e.index, next++, `${e.type} takes the next index`);
      t.equal(open.size, 0, `${e.type}: the block before it was closed`);
      open.set(e.index, e.type.replace('_start', ''));
    } else if (e.type === 'text_delta' || e.type === 'reasoning_delta' || e.type === 'tool_call_delta') {
      t.equal(open.get(e.index), e.type.replace('_delta', ''), `${e.type} on an open block of its kind`);
    } else if (e.type === 'block_stop') {
      t.ok(open.delete(e.index), `block_stop ${e.index} closes an open block`);
      t.notOk(closed.has(e.index), `block ${e.index} is closed once`);
      closed.add(e.index);
    } else if (e.type === 'finish') {
      t.equal(open.size, 0, 'every block is closed before finish');
    }
  }
  t.equal(open.size, 0, 'no block left open');
}

const cfg = parseConfig(
  {
    providers: {
      deepseek: {
        group: 'paid', format: 'openai', base_url: 'https://api.deepseek.com', auth: { type: 'api_key', key: 'sk-ds' },
        models: { 'deepseek-chat': { capabilities: ['reasoning', 'tools'], thinking: 'deepseek' } },
      },
      openai: {
        group: 'paid', format: 'openai', base_url: 'https://api.openai.com/v1/', auth: { type: 'api_key', key: 'sk-test' }, headers: { 'OpenAI-Organization': 'org-1' },
        models: {
          'gpt-4o': { capabilities: ['vision', 'tools'], max_output_tokens: 16384 },
          o3: { capabilities: ['reasoning', 'tools'], thinking: 'openai' },
          'plain-reasoner': { capabilities: ['reasoning'] },
          'gemini-2.5-flash': { capabilities: ['reasoning'], thinking: 'gemini-budget' },
          'claude-sonnet-4-5': { capabilities: ['reasoning'], thinking: 'anthropic-budget', max_output_tokens: 32768 },
          'qwen-plus': { capabilities: ['reasoning'], thinking: 'qwen' },
          'glm-4.6': { capabilities: ['reasoning'], thinking: 'zai' },
          'MiniMax-M3': { capabilities: ['reasoning'], thinking: 'minimax' },
        },
        allow_unlisted_models: true,
      },
      azure: { group: 'paid', format: 'openai', base_url: 'https://x.example.com/openai', auth: { type: 'api_key', key: 'k', header: 'api-key' } },
    },
  },
  {},
);

function target(providerId: string, modelId: string): Target {
  const provider = cfg.providers[providerId]!;
  return { providerId, provider, modelId, model: provider.models[modelId] ?? null };
}

const minimal = (extra: Json = {}): Json => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
const built = (req: CanonicalRequest, tgt: Target): Json => wireJson(openaiCodec.buildRequest(req, tgt).body) as Json;

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

const WEATHER_PARAMS = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
const TIME_PARAMS = { type: 'object', properties: { tz: { type: 'string' } } };
const SCHEMA = { type: 'object', properties: { summary: { type: 'string' } } };

const FULL_CANONICAL: CanonicalRequest = {
  model: 'deepseek/deepseek-chat',
  system: [
    { type: 'text', text: 'You are a weather assistant.' },
    { type: 'text', text: 'Answer in metric units.' },
    { type: 'text', text: 'Be brief.' },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is the weather where this photo was taken, and what time is it there?' },
        { type: 'image', source: { kind: 'url', url: 'https://example.com/eiffel.jpg' }, detail: 'high' },
        { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'audio', source: { kind: 'base64', mediaType: 'audio/wav', data: 'UklGRiQAAABXQVZF' } },
        { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0xLjQ=' }, filename: 'itinerary.pdf' },
        { type: 'file', source: { kind: 'file_id', id: 'file-6F2ksmvXxt4VdoqmHRw6kL', origin: 'openai' } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'The photo shows the Eiffel Tower, so Paris.' },
        { type: 'tool_call', id: 'call_7Hx2Kd9LmQ4pRs1T', name: 'get_weather', arguments: '{"city": "Paris"}' },
        { type: 'tool_call', id: 'call_3Vb8Nc5JwE6yUa0Z', name: 'get_time', arguments: '{"tz": "Europe/Paris"}' },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', callId: 'call_7Hx2Kd9LmQ4pRs1T', name: 'get_weather', content: [{ type: 'text', text: '18°C, light rain' }] },
        { type: 'tool_result', callId: 'call_3Vb8Nc5JwE6yUa0Z', name: 'get_time', content: [{ type: 'text', text: '14:05' }] },
      ],
    },
    { role: 'assistant', content: [{ type: 'text', text: 'It is 14:05 in Paris, 18°C with light rain.' }] },
    { role: 'user', content: [{ type: 'text', text: 'Thanks!' }] },
  ],
  tools: [
    { name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_PARAMS, strict: true },
    { name: 'get_time', parameters: TIME_PARAMS },
    { name: 'ping', parameters: { type: 'object', properties: {} } },
  ],
  toolChoice: { type: 'tool', name: 'get_weather' },
  parallelToolCalls: false,
  maxTokens: 512,
  temperature: 0.2,
  topP: 0.9,
  presencePenalty: 0.1,
  frequencyPenalty: -0.5,
  seed: 42,
  stop: ['END'],
  responseFormat: { type: 'json_schema', name: 'weather', schema: SCHEMA, strict: true },
  thinking: { kind: 'level', level: 'high' },
  stream: true,
  user: 'user-1234',
  metadata: { session: 's-42' },
  unmapped: ['messages.name'],
};

t.test('parseRequest: every field of a full Chat Completions body', async (t) => {
  const req = openaiCodec.parseRequest(json('chat-request-full.json'));
  t.strictSame(req, FULL_CANONICAL);
  t.equal(req.maxTokens, 512, 'max_completion_tokens wins over max_tokens');
  t.same(req.thinking, { kind: 'level', level: 'high' }, "the model's (high) suffix wins over reasoning_effort: low");
  t.equal(chatIncludeUsage(json('chat-request-full.json')), true);
  t.equal(chatIncludeUsage(minimal({ stream: true })), false);
  t.equal(chatIncludeUsage(null), false);
});

t.test('parseRequest: a file_data data URL that is not base64 is its text', async (t) => {
  const fileOf = (file_data: string) => {
    const r = openaiCodec.parseRequest(minimal({ messages: [{ role: 'user', content: [{ type: 'file', file: { file_data } }] }] }));
    return r.messages[0]!.content[0];
  };
  t.strictSame(fileOf('data:,hello'), { type: 'file', source: { kind: 'base64', mediaType: 'text/plain', data: Buffer.from('hello').toString('base64') } }, 'no type: text/plain, the text as base64 (not the URL taken as a PDF\'s bytes)');
  t.strictSame(fileOf('data:text/csv;charset=utf-8,a%2Cb%0A1%2C2'), { type: 'file', source: { kind: 'base64', mediaType: 'text/csv', data: Buffer.from('a,b\n1,2').toString('base64') } }, 'percent-decoded, typed as it says');
  t.strictSame(fileOf('data:application/pdf;base64,JVBERi0='), { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0=' } }, 'a base64 data URL as before');
  t.strictSame(fileOf('JVBERi0='), { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0=' } }, 'bare base64: a PDF, as before');
  t.throws(() => fileOf('data:,%E0%A4%A'), /does not percent-decode/, 'text that does not decode: a 400 naming it');
});

t.test("parseRequest: tool_choice allowed_tools cuts the tool list to the named functions", async (t) => {
  const fn = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object', properties: {} } } });
  const allowed = (mode: string, names: string[]) => ({ type: 'allowed_tools', allowed_tools: { mode, tools: names.map((name) => ({ type: 'function', function: { name } })) } });
  const auto = openaiCodec.parseRequest(minimal({ tools: [fn('a'), fn('b'), fn('c')], tool_choice: allowed('auto', ['a', 'c']) }));
  t.same(auto.tools?.map((x) => x.name), ['a', 'c'], 'only the allowed functions reach the provider');
  t.same(auto.toolChoice, { type: 'auto' });
  const required = openaiCodec.parseRequest(minimal({ tools: [fn('a'), fn('b')], tool_choice: allowed('required', ['b']) }));
  t.same(required.tools?.map((x) => x.name), ['b']);
  t.same(required.toolChoice, { type: 'required' }, 'mode required: a call is required');
  t.throws(() => openaiCodec.parseRequest(minimal({ tool_choice: { type: 'mcp', server_label: 'x' } })), /tool_choice/, 'another object is still refused');
});

t.test('parseRequest: small shapes', async (t) => {
  t.strictSame(openaiCodec.parseRequest(minimal()), { model: 'm', system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: false });
  t.strictSame(
    openaiCodec.parseRequest(minimal({ temperature: null, stop: null, tools: null, tool_choice: null, reasoning_effort: null, stream: null, max_tokens: null, user: null, metadata: null, seed: null })),
    { model: 'm', system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: false },
    'null is "not given", as in the OpenAI API',
  );
  const r = openaiCodec.parseRequest(minimal({ model: 'openai/o3', reasoning_effort: 'minimal', max_tokens: 100, stop: ['a', 'b'], tool_choice: 'required', response_format: { type: 'json_object' } }));
  t.same(r.thinking, { kind: 'level', level: 'minimal' }, 'reasoning_effort is the level when there is no suffix');
  t.equal(r.maxTokens, 100);
  t.same(r.stop, ['a', 'b']);
  t.same(r.toolChoice, { type: 'required' });
  t.same(r.responseFormat, { type: 'json_object' });
  t.same(openaiCodec.parseRequest(minimal({ model: 'x/m(4000)' })).thinking, { kind: 'budget', tokens: 4000 });
  t.equal(openaiCodec.parseRequest(minimal({ model: 'x/m(unknown)' })).model, 'x/m(unknown)');

  const msgs = openaiCodec.parseRequest({
    model: 'm',
    messages: [
      { role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'refusal', refusal: 'no' }], reasoning: 'OpenRouter-style' },
      { role: 'tool', tool_call_id: 'unknown_call', content: 'r1' },
      { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAA=', format: 'mp3' } }, { type: 'file', file: { file_data: 'JVBERi0=' } }] },
    ],
  }).messages;
  t.strictSame(msgs, [
    { role: 'assistant', content: [{ type: 'reasoning', text: 'OpenRouter-style' }, { type: 'text', text: 'a' }, { type: 'text', text: 'no' }] },
    { role: 'user', content: [{ type: 'tool_result', callId: 'unknown_call', content: [{ type: 'text', text: 'r1' }] }] },
    {
      role: 'user',
      content: [
        { type: 'audio', source: { kind: 'base64', mediaType: 'audio/mpeg', data: 'AAA=' } },
        { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0=' } },
      ],
    },
  ], 'refusal parts and vendor `reasoning`; a tool result without a known call has no name; bare base64 file data is a PDF');
});

t.test('parseRequest: malformed bodies name the field at fault', async (t) => {
  const cases: [unknown, string][] = [
    [null, 'body'],
    [[], 'body'],
    [{}, 'model'],
    [{ model: '' , messages: [] }, 'model'],
    [{ model: 'm' }, 'messages'],
    [minimal({ stream: 'yes' }), 'stream'],
    [minimal({ messages: ['hi'] }), 'messages[0]'],
    [minimal({ messages: [{ role: 'wizard', content: 'x' }] }), 'messages[0].role'],
    [minimal({ messages: [{ role: 'function', name: 'f', content: 'x' }] }), 'messages[0].role'],
    [minimal({ messages: [{ role: 'user', content: 5 }] }), 'messages[0].content'],
    [minimal({ messages: [{ role: 'system', content: [{ type: 'image_url' }] }] }), 'messages[0].content[0].type'],
    [minimal({ messages: [{ role: 'user', content: [{ type: 'video' }] }] }), 'messages[0].content[0].type'],
    [minimal({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x', detail: 'ultra' } }] }] }), 'messages[0].content[0].image_url.detail'],
    [minimal({ messages: [{ role: 'user', content: [{ type: 'file', file: {} }] }] }), 'messages[0].content[0].file'],
    [minimal({ messages: [{ role: 'tool', content: 'x' }] }), 'messages[0].tool_call_id'],
    [minimal({ messages: [{ role: 'assistant', tool_calls: [{ type: 'mcp', mcp: {} }] }] }), 'messages[0].tool_calls[0]'],
    [minimal({ messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'custom', custom: { name: 'x' } }] }] }), 'messages[0].tool_calls[0].custom.input'],
    [minimal({ messages: [{ role: 'assistant', content: 7 }] }), 'messages[0].content'],
    [minimal({ tools: {} }), 'tools'],
    [minimal({ tools: [{ type: 'mcp', server_label: 'x' }] }), 'tools[0]'],
    [minimal({ tools: [{ type: 'custom', custom: {} }] }), 'tools[0].custom.name'],
    [minimal({ tools: [{ type: 'function', function: { name: 'f', parameters: 'none' } }] }), 'tools[0].function.parameters'],
    [minimal({ tool_choice: 'any' }), 'tool_choice'],
    [minimal({ parallel_tool_calls: 'no' }), 'parallel_tool_calls'],
    [minimal({ temperature: 'hot' }), 'temperature'],
    [minimal({ max_tokens: 0 }), 'max_tokens'],
    [minimal({ max_completion_tokens: 1.5 }), 'max_completion_tokens'],
    [minimal({ n: 0 }), 'n'],
    [minimal({ top_logprobs: 21, logprobs: true }), 'top_logprobs'],
    [minimal({ logprobs: 'yes' }), 'logprobs'],
    [minimal({ logit_bias: { '50256': 'x' } }), 'logit_bias'],
    [minimal({ prediction: { type: 'text', content: 'x' } }), 'prediction'],
    [minimal({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'persistent' } }] }] }), 'messages[0].content[0].cache_control'],
    [minimal({ stop: [1] }), 'stop'],
    [minimal({ reasoning_effort: 'ultra' }), 'reasoning_effort'],
    [minimal({ reasoning_effort: 'auto' }), 'reasoning_effort'],
    [minimal({ metadata: { a: 1 } }), 'metadata'],
    [minimal({ response_format: { type: 'xml' } }), 'response_format'],
    [minimal({ user: 42 }), 'user'],
  ];
  for (const [body, param] of cases) {
    try {
      openaiCodec.parseRequest(body);
      t.fail(`no error for ${JSON.stringify(body)}`);
    } catch (err) {
      t.ok(err instanceof TollgateError, 'a TollgateError');
      t.equal((err as TollgateError).code, 'TOLLGATE_ERR_INVALID_REQUEST');
      t.equal((err as TollgateError).param, param, `param ${param}`);
    }
  }
});

t.test('buildRequest: a DeepSeek reasoning model (family deepseek)', async (t) => {
  const up = openaiCodec.buildRequest(FULL_CANONICAL, target('deepseek', 'deepseek-chat'));
  t.equal(up.path, '/chat/completions');
  t.equal(up.headers.authorization, 'Bearer sk-ds');
  t.equal(up.headers.accept, 'text/event-stream');
  t.equal(up.headers['content-type'], 'application/json');
  t.strictSame(wireJson(up.body), {
    model: 'deepseek-chat',
    messages: [
      { role: 'system', content: 'You are a weather assistant.' },
      { role: 'system', content: 'Answer in metric units.' },
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is the weather where this photo was taken, and what time is it there?' },
          { type: 'image_url', image_url: { url: 'https://example.com/eiffel.jpg', detail: 'high' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0xLjQ=', filename: 'itinerary.pdf' } },
          { type: 'file', file: { file_id: 'file-6F2ksmvXxt4VdoqmHRw6kL' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_7Hx2Kd9LmQ4pRs1T', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
          { id: 'call_3Vb8Nc5JwE6yUa0Z', type: 'function', function: { name: 'get_time', arguments: '{"tz": "Europe/Paris"}' } },
        ],
        reasoning_content: 'The photo shows the Eiffel Tower, so Paris.',
      },
      { role: 'tool', tool_call_id: 'call_7Hx2Kd9LmQ4pRs1T', content: '18°C, light rain' },
      { role: 'tool', tool_call_id: 'call_3Vb8Nc5JwE6yUa0Z', content: '14:05' },
      { role: 'assistant', content: 'It is 14:05 in Paris, 18°C with light rain.' },
      { role: 'user', content: 'Thanks!' },
    ],
    tools: [
      { type: 'function', function: { name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_PARAMS, strict: true } },
      { type: 'function', function: { name: 'get_time', parameters: TIME_PARAMS } },
      { type: 'function', function: { name: 'ping', parameters: { type: 'object', properties: {} } } },
    ],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    parallel_tool_calls: false,
    max_completion_tokens: 512,
    temperature: 0.2,
    top_p: 0.9,
    stop: ['END'],
    seed: 42,
    presence_penalty: 0.1,
    frequency_penalty: -0.5,
    response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: SCHEMA, strict: true } },
    thinking: { type: 'enabled' },
    reasoning_effort: 'high',
    user: 'user-1234',
    metadata: { session: 's-42' },
    stream: true,
    stream_options: { include_usage: true },
  });
});

t.test('buildRequest -> parseRequest gives the canonical request back', async (t) => {
  const again = openaiCodec.parseRequest(built(FULL_CANONICAL, target('deepseek', 'deepseek-chat')));
  // Message names are not rebuilt; DeepSeek's `thinking` switch is not a Chat Completions field the parser reads.
  t.strictSame(again, { ...FULL_CANONICAL, model: 'deepseek-chat', unmapped: ['thinking'] });
});

t.test('buildRequest: per-model choices', async (t) => {
  const req: CanonicalRequest = { ...FULL_CANONICAL, stream: false };

  const gpt4o = built(req, target('openai', 'gpt-4o'));
  t.equal(gpt4o.max_tokens, 512, 'max_tokens for a model without the reasoning capability');
  t.notOk('max_completion_tokens' in gpt4o);
  t.notOk('reasoning_effort' in gpt4o, 'no thinking fields for a model without reasoning, though the request has a level');
  t.notOk('thinking' in gpt4o);
  t.notOk('reasoning_content' in gpt4o.messages[4], 'reasoning is not sent back to OpenAI');
  t.notOk('stream' in gpt4o);
  t.notOk('stream_options' in gpt4o);

  const o3 = built(req, target('openai', 'o3'));
  t.equal(o3.max_completion_tokens, 512, 'max_completion_tokens for a reasoning model');
  t.equal(o3.reasoning_effort, 'high');
  t.notOk('thinking' in o3);

  t.equal(built(req, target('openai', 'plain-reasoner')).reasoning_effort, 'high', 'reasoning without a thinking family: the openai family');
  const unlisted = built({ ...req, thinking: { kind: 'level', level: 'low' } }, target('openai', 'not-listed'));
  t.equal(unlisted.reasoning_effort, 'low', "an unlisted model gets the client's level as reasoning_effort");
  t.equal(unlisted.max_tokens, 512, 'and max_tokens');
  t.notOk('reasoning_effort' in built({ ...req, thinking: { kind: 'level', level: 'auto' } }, target('openai', 'o3')), 'auto: the model default');
  t.notOk('reasoning_effort' in built({ ...req, thinking: undefined }, target('openai', 'o3')), 'no level: nothing');

  t.equal(built(req, target('openai', 'gemini-2.5-flash')).reasoning_effort, 'high', "Gemini's OpenAI endpoint reads reasoning_effort");
  const claude = built({ ...req, maxTokens: 4096 }, target('openai', 'claude-sonnet-4-5'));
  t.same(claude.thinking, { type: 'enabled', budget_tokens: 4095 }, 'anthropic-budget: below max_tokens');
  t.same(
    (({ enable_thinking, thinking_budget }) => ({ enable_thinking, thinking_budget }))(built(req, target('openai', 'qwen-plus'))),
    { enable_thinking: true, thinking_budget: 24576 },
  );
  const glm = built(req, target('openai', 'glm-4.6'));
  t.same(glm.thinking, { type: 'enabled' });
  t.equal(glm.messages[4].reasoning_content, 'The photo shows the Eiffel Tower, so Paris.', 'GLM reads reasoning back');
  const mm = built({ ...req, thinking: { kind: 'level', level: 'none' } }, target('openai', 'MiniMax-M3'));
  t.same([mm.thinking, mm.reasoning_split], [{ type: 'disabled' }, true]);

  const az = openaiCodec.buildRequest(req, target('azure', 'gpt-4o'));
  t.equal(az.path, '/openai/chat/completions');
  t.equal(az.headers['api-key'], 'k', 'auth exactly as the passthrough adapter: a custom header carries the bare key');
  t.equal(az.headers.accept, 'application/json');
  const oa = openaiCodec.buildRequest(req, target('openai', 'gpt-4o'));
  t.equal(oa.path, '/v1/chat/completions');
  t.equal(oa.headers['OpenAI-Organization'], 'org-1');
});

t.test('buildRequest: what Chat Completions cannot carry is dropped', async (t) => {
  const req: CanonicalRequest = {
    model: 'm',
    system: [{ type: 'text', text: 'sys' }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image', source: { kind: 'file_id', id: 'files/abc' } },
          { type: 'audio', source: { kind: 'url', url: 'https://a/b.wav' } },
          { type: 'audio', source: { kind: 'base64', mediaType: 'audio/flac', data: 'ZkxhQw==' } },
          { type: 'file', source: { kind: 'url', url: 'https://a/b.pdf' } },
          { type: 'text', text: 'only this is left' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'hidden', signature: 'sig' },
          { type: 'text', text: 'one ' },
          { type: 'text', text: 'two' },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'before' },
          { type: 'tool_result', callId: 'c1', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { kind: 'url', url: 'https://x/y.png' } }, { type: 'text', text: 'b' }], isError: true },
          { type: 'text', text: 'after' },
        ],
      },
    ],
    tools: [],
    toolChoice: { type: 'none' },
    parallelToolCalls: true,
    topK: 40,
    stop: [],
    includeReasoning: true,
    stream: false,
  };
  t.strictSame(built(req, target('openai', 'gpt-4o')), {
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'only this is left' },
      { role: 'assistant', content: 'one two' },
      { role: 'user', content: 'before' },
      { role: 'tool', tool_call_id: 'c1', content: 'ab' },
      { role: 'user', content: 'after' },
    ],
  }, 'no tools: no tool_choice or parallel_tool_calls; top_k, empty stop and includeReasoning dropped');
});

// ---------------------------------------------------------------------------------------------------------------
// Whole answers
// ---------------------------------------------------------------------------------------------------------------

const ANSWERS: [string, CanonicalResponse][] = [
  ['chat-completion-capital.json', {
    id: 'chatcmpl-BXl5s9vLr1ZQy8mJt3kKQb7WcXhPd', model: 'gpt-4o-2024-08-06',
    content: [{ type: 'text', text: 'The capital of France is Paris.' }], stopReason: 'end',
    // 1310 prompt - 1280 cached = 30 input; 7 completion - 0 reasoning = 7 output
    usage: u(30, 1280, 7, 0),
  }],
  ['chat-completion-tool-calls.json', {
    id: 'chatcmpl-BXl6Aq2Xw1Hh7kR0dJc5Vt9Yb3NmE', model: 'gpt-4o-2024-08-06',
    content: [{ type: 'tool_call', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', arguments: '{"location":"Paris,France"}' }],
    stopReason: 'tool_calls',
    usage: u(82, 0, 17, 0),
  }],
  ['chat-completion-parallel-tool-calls.json', {
    id: 'chatcmpl-BXm1Tq8Zr3Lp0Wk5Jd7Hs2Vn4YbCx', model: 'gpt-4.1-2025-04-14',
    content: [
      { type: 'tool_call', id: 'call_7Hx2Kd9LmQ4pRs1T', name: 'get_weather', arguments: '{"city": "Paris"}' },
      { type: 'tool_call', id: 'call_3Vb8Nc5JwE6yUa0Z', name: 'get_time', arguments: '{"tz": "Europe/Paris"}' },
    ],
    stopReason: 'tool_calls',
    usage: u(96, 0, 44, 0),
  }],
  ['chat-completion-deepseek-reasoning.json', {
    id: '5f0c9a4e-1b7d-4c2e-9a61-3e8d2b7f0c15', model: 'deepseek-reasoner',
    content: [{ type: 'reasoning', text: 'Compare 9.11 and 9.9: the tenths are 1 and 9, so 9.9 is larger.' }, { type: 'text', text: '9.9 is larger.' }],
    stopReason: 'end',
    // 1200 prompt - 1024 cached = 176; 350 completion - 280 reasoning = 70
    usage: u(176, 1024, 70, 280),
  }],
  ['chat-completion-reasoning-cached.json', {
    id: 'chatcmpl-BXl3dQyKu7C1zn9ZVaPxR1hq2fG4s', model: 'o4-mini-2025-04-16',
    content: [{ type: 'text', text: 'The invoice total is $1,284.50, due on 30 June.' }], stopReason: 'end',
    // 2006 - 1920 = 86; 300 - 192 = 108
    usage: u(86, 1920, 108, 192),
  }],
  ['chat-completion-no-details.json', {
    id: 'cmpl-7f1c2b9e4d5a4c0f8e3b2a1d9c8b7a6f', model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    content: [{ type: 'text', text: 'Hello! How can I help you today?' }], stopReason: 'end',
    usage: u(42, null, 10, null),
  }],
];

t.test('parseResponse: fixtures -> canonical, with hand-computed usage', async (t) => {
  for (const [name, want] of ANSWERS) {
    const got = openaiCodec.parseResponse(json(name));
    t.strictSame(got, want, name);
    t.equal(totalTokens(got.usage!), json(name).usage.total_tokens, `${name}: the buckets add up to total_tokens`);
  }
});

t.test('parseResponse: refusals, stop reasons, legacy function_call, garbage', async (t) => {
  const base = { id: 'chatcmpl-r', object: 'chat.completion', created: 1, model: 'gpt-4o' };
  const one = (message: Json, finish_reason: unknown, extra: Json = {}) => openaiCodec.parseResponse({ ...base, choices: [{ index: 0, message, finish_reason, ...extra }] });
  const refusal = one({ role: 'assistant', content: null, refusal: "I can't help with that." }, 'stop');
  t.same([refusal.content, refusal.stopReason], [[{ type: 'text', text: "I can't help with that." }], 'refusal']);
  t.equal(one({ content: 'a' }, 'length').stopReason, 'max_tokens');
  t.equal(one({ content: 'a' }, 'content_filter').stopReason, 'content_filter');
  t.equal(one({ content: 'a' }, 'sensitive').stopReason, 'content_filter', 'GLM');
  t.equal(one({ content: 'a' }, 'insufficient_system_resource').stopReason, 'error', 'DeepSeek');
  t.equal(one({ content: 'a' }, null).stopReason, 'end');
  t.equal(one({ content: 'a' }, 'eos').stopReason, 'end');
  const vllm = one({ content: 'a' }, 'stop', { stop_reason: '###' });
  t.same([vllm.stopReason, vllm.stopSequence], ['stop_sequence', '###'], "vLLM's stop_reason names the stop sequence");
  t.notOk('stopSequence' in one({ content: 'a' }, 'stop', { stop_reason: null }));
  const fc = one({ content: null, function_call: { name: 'f', arguments: '{}' } }, 'function_call');
  t.same([fc.content, fc.stopReason], [[{ type: 'tool_call', id: 'chatcmpl-r-function_call', name: 'f', arguments: '{}' }], 'tool_calls']);
  const md = one({ content: 'x', reasoning_details: [{ type: 'reasoning.text', text: 'a' }, { type: 'reasoning.encrypted', data: 'zz' }, { type: 'reasoning.text', text: 'b' }] }, 'stop');
  t.same(md.content, [{ type: 'reasoning', text: 'ab' }, { type: 'text', text: 'x' }], 'MiniMax / OpenRouter reasoning_details text');
  const both = one({ content: 'x', reasoning: 'r', reasoning_details: [{ type: 'reasoning.text', text: 'r' }] }, 'stop');
  t.same(both.content, [{ type: 'reasoning', text: 'r' }, { type: 'text', text: 'x' }], 'one reasoning source, not two');
  t.equal(one({ content: 'x' }, 'stop').usage, null, 'no usage reported: null');
  for (const bad of [null, 'x', [], {}, { choices: [] }, { choices: [null] }]) {
    t.throws(() => openaiCodec.parseResponse(bad), { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' }, JSON.stringify(bad));
  }
});

t.test('renderResponse: the chat.completion a client gets', async (t) => {
  const res = openaiCodec.parseResponse(json('chat-completion-tool-calls.json'));
  t.strictSame(openaiCodec.renderResponse(res, 'openai/gpt-4o'), {
    id: 'chatcmpl-BXl6Aq2Xw1Hh7kR0dJc5Vt9Yb3NmE',
    object: 'chat.completion',
    created: 0,
    model: 'openai/gpt-4o',
    choices: [{
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris,France"}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    }],
    usage: { prompt_tokens: 82, completion_tokens: 17, total_tokens: 99, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
  });
  const ds = openaiCodec.renderResponse(openaiCodec.parseResponse(json('chat-completion-deepseek-reasoning.json')), 'deepseek/deepseek-reasoner') as Json;
  t.strictSame(ds.choices[0].message, { role: 'assistant', content: '9.9 is larger.', refusal: null, reasoning_content: 'Compare 9.11 and 9.9: the tenths are 1 and 9, so 9.9 is larger.' });
  const refused = openaiCodec.renderResponse({ id: 'x', model: 'm', content: [{ type: 'text', text: 'No.' }], stopReason: 'refusal', usage: null }, 'm') as Json;
  t.strictSame(refused.choices[0].message, { role: 'assistant', content: null, refusal: 'No.' });
  t.equal(refused.choices[0].finish_reason, 'stop');
  t.notOk('usage' in refused, 'no usage reported: no usage object');
  const stops: [CanonicalResponse['stopReason'], string][] = [['end', 'stop'], ['max_tokens', 'length'], ['tool_calls', 'tool_calls'], ['stop_sequence', 'stop'], ['content_filter', 'content_filter'], ['refusal', 'stop'], ['error', 'stop']];
  for (const [stopReason, fr] of stops) {
    t.equal((openaiCodec.renderResponse({ id: 'x', model: 'm', content: [], stopReason, usage: null }, 'm') as Json).choices[0].finish_reason, fr, stopReason);
  }
});

t.test('renderResponse -> parseResponse round trip', async (t) => {
  for (const [name, want] of ANSWERS) {
    t.strictSame(openaiCodec.parseResponse(openaiCodec.renderResponse(want, 'client/model')), { ...want, model: 'client/model' }, name);
  }
});

t.test('renderUsage: the buckets back into OpenAI numbers', async (t) => {
  t.strictSame(renderUsage(u(176, 1024, 70, 280)), { prompt_tokens: 1200, completion_tokens: 350, total_tokens: 1550, prompt_tokens_details: { cached_tokens: 1024 }, completion_tokens_details: { reasoning_tokens: 280 } });
  t.strictSame(renderUsage(u(42, null, 10, null)), { prompt_tokens: 42, completion_tokens: 10, total_tokens: 52 }, 'unreported details are not invented');
  t.strictSame(renderUsage(u(10, 20, 3, null, 5)), { prompt_tokens: 35, completion_tokens: 3, total_tokens: 38, prompt_tokens_details: { cached_tokens: 20 } }, 'Anthropic cache writes are input to OpenAI');
});

// ---------------------------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------------------------

const STREAMS: [string, string][] = [
  ['stream-include-usage.sse', 'chat-completion-capital.json'],
  ['stream-tool-calls.sse', 'chat-completion-tool-calls.json'],
  ['stream-parallel-tool-calls.sse', 'chat-completion-parallel-tool-calls.json'],
  ['stream-deepseek-reasoning-repeated-usage.sse', 'chat-completion-deepseek-reasoning.json'],
];

t.test('streams byte-chunked through SseParser add up to the non-streamed answer, usage counted once', async (t) => {
  for (const [stream, whole] of STREAMS) {
    const want = openaiCodec.parseResponse(json(whole));
    const bytes = sse(stream);
    for (const size of [1, 2, 7, 64, bytes.length]) {
      const { events, terminated } = parseStream(bytes, size);
      const { usageEvents, ...got } = fold(events);
      t.strictSame(got, want, `${stream} in ${size}-byte pieces`);
      t.equal(usageEvents, 1, `${stream}: one usage event`);
      t.ok(terminated, '[DONE] seen');
      if (size === 1) wellFormed(t, events);
    }
  }
});

t.test('the tool-call stream, event by event: arguments assembled from fragments', async (t) => {
  const { events } = parseStream(sse('stream-tool-calls.sse'), 5);
  t.strictSame(events, [
    { type: 'start', id: 'chatcmpl-BXl6Aq2Xw1Hh7kR0dJc5Vt9Yb3NmE', model: 'gpt-4o-2024-08-06' },
    { type: 'tool_call_start', index: 0, id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather' },
    ...['{"', 'location', '":"', 'Paris', ',', 'France', '"}'].map((a) => ({ type: 'tool_call_delta', index: 0, arguments: a })),
    { type: 'block_stop', index: 0 },
    { type: 'finish', stopReason: 'tool_calls' },
    { type: 'usage', usage: u(82, 0, 17, 0) },
  ]);
  const parallel = fold(parseStream(sse('stream-parallel-tool-calls.sse'), 3).events);
  t.same(parallel.content.map((p) => (p.type === 'tool_call' ? JSON.parse(p.arguments) : null)), [{ city: 'Paris' }, { tz: 'Europe/Paris' }], 'each call its own block, arguments parse');
});

t.test('a stream without usage reports none', async (t) => {
  const { events, terminated } = parseStream(sse('stream-no-usage.sse'), 11);
  const { usageEvents, ...got } = fold(events);
  t.strictSame(got, { id: 'chatcmpl-BXl7Pz0aG5uY2tLw8sE1Qn4Vc6JkD', model: 'gpt-4o-2024-08-06', content: [{ type: 'text', text: 'Hi!' }], stopReason: 'end', usage: null });
  t.equal(usageEvents, 0, 'never invented');
  t.ok(terminated);
});

const chunkFrame = (delta: Json, extra: Json = {}): SseFrame => ({
  event: null, id: null,
  data: JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...extra }),
});
const raw = (data: string): SseFrame => ({ event: null, id: null, data });

t.test('stream parser: vendor shapes and odd input', async (t) => {
  let p = new OpenAIChatStreamParser();
  t.strictSame(p.frame(raw('{"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[]}')), [], "Azure's empty first chunk is not the start");
  t.strictSame(p.frame(raw('not json')), [], 'non-JSON data is ignored');
  t.strictSame(p.frame(raw('')), []);
  t.strictSame(p.frame(chunkFrame({ reasoning: 'a' })), [
    { type: 'start', id: 'chatcmpl-x', model: 'm' },
    { type: 'reasoning_start', index: 0 },
    { type: 'reasoning_delta', index: 0, text: 'a' },
  ]);
  t.strictSame(p.frame(chunkFrame({ content: 'b', reasoning_content: null })), [{ type: 'block_stop', index: 0 }, { type: 'text_start', index: 1 }, { type: 'text_delta', index: 1, text: 'b' }]);
  t.strictSame(p.frame(chunkFrame({ reasoning_content: 'c' })), [{ type: 'block_stop', index: 1 }, { type: 'reasoning_start', index: 2 }, { type: 'reasoning_delta', index: 2, text: 'c' }], 'interleaved reasoning is a new block');
  t.strictSame(p.frame(chunkFrame({ tool_calls: [{ index: 0, id: 'call_1', function: { arguments: '{"a"' } }] })), [], 'a call without its name yet waits');
  t.strictSame(p.frame(chunkFrame({ tool_calls: [{ index: 0, function: { name: 'f', arguments: ':1}' } }] })), [
    { type: 'block_stop', index: 2 },
    { type: 'tool_call_start', index: 3, id: 'call_1', name: 'f' },
    { type: 'tool_call_delta', index: 3, arguments: '{"a":1}' },
  ], 'the start once the name is known, then the arguments received so far in one delta');
  t.strictSame(p.frame(chunkFrame({ tool_calls: [{ index: 1, id: 'call_2', function: { arguments: '{}' } }] })), []);
  const usage = { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 };
  t.strictSame(p.frame({ ...chunkFrame({}), data: JSON.stringify({ id: 'chatcmpl-x', choices: [null, { index: 0, delta: {}, finish_reason: 'length' }], usage }) }), [
    { type: 'block_stop', index: 3 },
    { type: 'tool_call_start', index: 4, id: 'call_2', name: '' },
    { type: 'tool_call_delta', index: 4, arguments: '{}' },
    { type: 'block_stop', index: 4 },
    { type: 'finish', stopReason: 'max_tokens' },
    { type: 'usage', usage: u(10, null, 4, null) },
  ], 'a call never named is started at the finish with what it has; a null choice is skipped; usage on the finish chunk');
  t.strictSame(p.frame({ ...chunkFrame({}), data: JSON.stringify({ id: 'chatcmpl-x', choices: [], usage }) }), [], 'the same usage again is not sent again');
  t.strictSame(p.frame({ ...chunkFrame({}), data: JSON.stringify({ id: 'chatcmpl-x', choices: [], usage: { ...usage, completion_tokens: 6 } }) }), [{ type: 'usage', usage: u(10, null, 6, null) }], 'different numbers replace them');
  t.notOk(p.terminated);
  t.strictSame(p.frame(raw('[DONE]')), []);
  t.ok(p.terminated);
  t.strictSame(p.frame(chunkFrame({ content: 'late' })), [], 'nothing after [DONE]');
  t.strictSame(p.end(), []);

  p = new OpenAIChatStreamParser();
  t.strictSame(p.frame(raw('{"error":{"message":"overloaded","type":"server_error","code":"overloaded"}}')), [{ type: 'error', message: 'overloaded', code: 'overloaded' }]);
  p = new OpenAIChatStreamParser();
  p.frame(chunkFrame({ content: 'cut' }));
  t.strictSame(p.end(), [{ type: 'block_stop', index: 0 }], 'end() closes the open block and invents no finish');
  t.notOk(p.terminated);

  p = new OpenAIChatStreamParser();
  const refusal = [...p.frame(chunkFrame({ refusal: 'No.' })), ...p.frame({ ...chunkFrame({}), data: JSON.stringify({ id: 'chatcmpl-x', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) })];
  t.same(fold(refusal).stopReason, 'refusal');
  t.same(fold(refusal).content, [{ type: 'text', text: 'No.' }]);

  p = new OpenAIChatStreamParser();
  const n2 = p.frame({ ...chunkFrame({}), data: JSON.stringify({ id: 'chatcmpl-x', choices: [{ index: 1, delta: { content: 'other' } }, { index: 0, delta: { content: 'mine' } }] }) });
  t.same(fold(n2).content, [{ type: 'text', text: 'mine' }], 'only choice 0');
});

t.test('stream parser: tool_calls without index (Gemini OpenAI-compat, Ollama, Xinference) are separate calls by id', async (t) => {
  const p = new OpenAIChatStreamParser();
  const events = [
    ...p.frame(chunkFrame({ role: 'assistant', tool_calls: [{ id: 'call_A', type: 'function', function: { name: 'a', arguments: '{"x":1}' } }] })),
    ...p.frame(chunkFrame({ tool_calls: [{ id: 'call_B', type: 'function', function: { name: 'b', arguments: '{"y"' } }] })),
    ...p.frame(chunkFrame({ tool_calls: [{ function: { arguments: ':2}' } }] })),
    ...p.frame(chunkFrame({ tool_calls: [{ id: 'call_B', function: { arguments: '' } }] })),
    ...p.frame({ ...chunkFrame({}), data: JSON.stringify({ id: 'chatcmpl-x', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }) }),
  ];
  t.strictSame(events, [
    { type: 'start', id: 'chatcmpl-x', model: 'm' },
    { type: 'tool_call_start', index: 0, id: 'call_A', name: 'a' },
    { type: 'tool_call_delta', index: 0, arguments: '{"x":1}' },
    { type: 'block_stop', index: 0 },
    { type: 'tool_call_start', index: 1, id: 'call_B', name: 'b' },
    { type: 'tool_call_delta', index: 1, arguments: '{"y"' },
    { type: 'tool_call_delta', index: 1, arguments: ':2}' },
    { type: 'block_stop', index: 1 },
    { type: 'finish', stopReason: 'tool_calls' },
  ], 'a new id starts a new call; a delta without id (or with the same id) continues the latest one');
  const calls = fold(events).content.map((c) => (c.type === 'tool_call' ? [c.id, c.name, JSON.parse(c.arguments)] : null));
  t.strictSame(calls, [['call_A', 'a', { x: 1 }], ['call_B', 'b', { y: 2 }]], 'two calls, each with valid JSON arguments');

  const indexed = new OpenAIChatStreamParser();
  const mixed = [
    ...indexed.frame(chunkFrame({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{"a"' } }] })),
    ...indexed.frame(chunkFrame({ tool_calls: [{ function: { arguments: ':1}' } }] })),
  ];
  t.strictSame(mixed.slice(-1), [{ type: 'tool_call_delta', index: 0, arguments: ':1}' }], 'an indexed call is continued by a delta without index or id');
});

t.test('stream parser: tool_calls without index, the other shapes vendors send', async (t) => {
  const callsOf = (deltas: Json[][]) => {
    const p = new OpenAIChatStreamParser();
    const events = deltas.flatMap((tc) => p.frame(chunkFrame({ tool_calls: tc })));
    events.push(...p.frame({ ...chunkFrame({}), data: JSON.stringify({ id: 'chatcmpl-x', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }) }));
    return fold(events).content.map((c) => (c.type === 'tool_call' ? [c.id, c.name, c.arguments] : null));
  };
  t.strictSame(callsOf([
    [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }],
    [{ index: 0, function: { arguments: '{"city":' } }],
    [{ index: 0, function: { arguments: '"Paris"}' } }],
  ]), [['call_1', 'get_weather', '{"city":"Paris"}']], 'an index on the later fragments only: one call (the first free index is the one they name)');
  t.strictSame(callsOf([
    [{ id: '', type: 'function', function: { name: 'a', arguments: '{"x":1}' } }],
    [{ id: '', type: 'function', function: { name: 'b', arguments: '{"y":2}' } }],
  ]), [['', 'a', '{"x":1}'], ['', 'b', '{"y":2}']], 'whole calls with empty ids, one a chunk: two calls');
  t.strictSame(callsOf([
    [{ type: 'function', function: { name: 'a', arguments: '{"x":1}' } }, { type: 'function', function: { name: 'a', arguments: '{"x":2}' } }],
  ]), [['', 'a', '{"x":1}'], ['', 'a', '{"x":2}']], 'two whole calls of one function in one chunk, no ids: two calls');
  t.strictSame(callsOf([
    [{ type: 'function', function: { name: 'a', arguments: '{"x":' } }],
    [{ type: 'function', function: { name: 'a', arguments: '1}' } }],
  ]), [['', 'a', '{"x":1}']], 'a name repeated on every fragment of one call (its arguments not whole yet): one call');
});

// ---------------------------------------------------------------------------------------------------------------
// Rendering streams
// ---------------------------------------------------------------------------------------------------------------

function render(events: readonly CanonicalEvent[], model: string, includeUsage: boolean, created?: number): string {
  const r = createOpenAIChatRenderer(model, created === undefined ? { includeUsage } : { includeUsage, created });
  return events.map((e) => r.event(e)).join('') + r.end();
}

const payloads = (text: string): unknown[] => frames(Buffer.from(text), text.length).map((f) => (f.data === '[DONE]' ? '[DONE]' : JSON.parse(f.data)));

t.test('render: chunk for chunk what OpenAI sends, usage chunk only when asked', async (t) => {
  const { events } = parseStream(sse('stream-include-usage.sse'));
  const ours = payloads(render(events, 'gpt-4o-2024-08-06', true, 1747307480)) as Json[];
  const theirs = payloads(sse('stream-include-usage.sse').toString()) as Json[];
  t.equal(ours.length, theirs.length, 'as many chunks');
  for (const [i, c] of theirs.entries()) {
    if (c === ('[DONE]' as unknown)) {
      t.equal(ours[i], '[DONE]');
      continue;
    }
    const { service_tier: _s, system_fingerprint: _f, usage: theirUsage, ...rest } = c;
    const { usage: ourUsage, ...ourRest } = ours[i]!;
    t.strictSame(ourRest, rest, `chunk ${i}`);
    if (theirUsage === null) t.equal(ourUsage, null, `chunk ${i}: usage null, as OpenAI sends with include_usage`);
    else t.same(openaiCodec.parseResponse({ choices: [{}], usage: ourUsage }).usage, openaiCodec.parseResponse({ choices: [{}], usage: theirUsage }).usage, 'the same usage');
  }

  const noUsage = render(events, 'openai/gpt-4o', false);
  t.notMatch(noUsage, /"usage"/, 'not asked: no usage chunk and no usage keys');
  t.ok(noUsage.endsWith('data: [DONE]\n\n'));
  t.match(noUsage, /^data: \{"id":"chatcmpl-BXl5s9vLr1ZQy8mJt3kKQb7WcXhPd","object":"chat.completion.chunk","created":0,"model":"openai\/gpt-4o","choices":\[\{"index":0,"delta":\{"role":"assistant","content":"","refusal":null\}/, 'the role chunk first');

  const viaCodec = openaiCodec.createStreamRenderer('m');
  const s = events.map((e) => viaCodec.event(e)).join('') + viaCodec.end();
  t.notMatch(s, /"usage"/, 'the WireCodec renderer has no include_usage: no usage chunk');
});

t.test('render -> parse round trip gives the same answer and usage', async (t) => {
  for (const [stream] of STREAMS) {
    const { events } = parseStream(sse(stream));
    const want = fold(events);
    for (const includeUsage of [true, false]) {
      const again = parseStream(Buffer.from(render(events, 'client/model', includeUsage)), 13);
      t.ok(again.terminated);
      wellFormed(t, again.events);
      const { usageEvents, ...got } = fold(again.events);
      const { usageEvents: _n, ...rest } = want;
      t.strictSame(got, { ...rest, model: 'client/model', usage: includeUsage ? rest.usage : null }, `${stream}, include_usage ${includeUsage}`);
      t.equal(usageEvents, includeUsage ? 1 : 0);
    }
  }
});

t.test('render: tool calls are numbered from 0 in the order they start; reasoning as reasoning_content', async (t) => {
  const events: CanonicalEvent[] = [
    { type: 'start', id: 'msg_1', model: 'claude' },
    { type: 'reasoning_start', index: 0 },
    { type: 'reasoning_delta', index: 0, text: 'think' },
    { type: 'reasoning_signature', index: 0, signature: 'sig' },
    { type: 'block_stop', index: 0 },
    { type: 'text_start', index: 1 },
    { type: 'text_delta', index: 1, text: '' },
    { type: 'block_stop', index: 1 },
    { type: 'tool_call_start', index: 2, id: 'toolu_a', name: 'f' },
    { type: 'tool_call_delta', index: 2, arguments: '{}' },
    { type: 'block_stop', index: 2 },
    { type: 'tool_call_start', index: 3, id: 'toolu_b', name: 'g' },
    { type: 'tool_call_delta', index: 3, arguments: '' },
    { type: 'block_stop', index: 3 },
    { type: 'finish', stopReason: 'tool_calls' },
  ];
  const deltas = (payloads(render(events, 'm', false)).slice(0, -1) as Json[]).map((c) => [c.choices[0].delta, c.choices[0].finish_reason]);
  t.strictSame(deltas, [
    [{ role: 'assistant', content: '', refusal: null }, null],
    [{ reasoning_content: 'think' }, null],
    [{ tool_calls: [{ index: 0, id: 'toolu_a', type: 'function', function: { name: 'f', arguments: '' } }] }, null],
    [{ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }, null],
    [{ tool_calls: [{ index: 1, id: 'toolu_b', type: 'function', function: { name: 'g', arguments: '' } }] }, null],
    [{}, 'tool_calls'],
  ]);
});

t.test('render: errors end the stream in the errors.ts shape, without [DONE]', async (t) => {
  const r = createOpenAIChatRenderer('m', { includeUsage: true, requestId: 'req-1' });
  r.event({ type: 'start', id: 'chatcmpl-1', model: 'm' });
  r.event({ type: 'usage', usage: u(1, null, 1, null) });
  const s = r.error('TOLLGATE_ERR_UPSTREAM_STALL', 'the upstream provider stalled');
  t.equal(s, `data: ${JSON.stringify(errorBody(new TollgateError('TOLLGATE_ERR_UPSTREAM_STALL', 'the upstream provider stalled'), 'req-1'))}\n\n`);
  t.equal(r.event({ type: 'text_delta', index: 0, text: 'late' }), '', 'nothing after the error');
  t.equal(r.end(), '', 'no usage chunk, no [DONE]');
  t.equal(r.error('TOLLGATE_ERR_INTERNAL', 'again'), '', 'one error only');

  const r2 = createOpenAIChatRenderer('m', { includeUsage: false });
  t.equal(
    r2.event({ type: 'error', message: 'overloaded', code: 'overloaded' }),
    'data: {"error":{"code":"overloaded","message":"overloaded","type":"upstream_error","param":null,"request_id":null}}\n\n',
    "an upstream's error event; an unknown code is an upstream_error",
  );
  t.equal(r2.end(), '');
  t.equal(createOpenAIChatRenderer('m', { includeUsage: false }).end(), `data: ${JSON.stringify({ id: '', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }] })}\n\ndata: [DONE]\n\n`, 'an empty stream still has its role chunk and [DONE]');
});
