// The `anthropic` codec, non-streamed half: client requests -> canonical, canonical -> upstream request, upstream
// answers -> canonical -> client answers, and usage in the five buckets (DESIGN.md decision 4), on fixtures shaped
// exactly like Anthropic Messages API payloads. Streams are in anthropic-stream.test.ts.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import type { ProviderConfig } from '../../src/config/types.js';
import { TollgateError } from '../../src/core/errors.js';
import type { Target } from '../../src/wire/codec.js';
import { anthropicCodec } from '../../src/wire/anthropic/index.js';
import { anthropicThinking } from '../../src/wire/anthropic/request.js';
import { parseStopReason, renderStopReason } from '../../src/wire/anthropic/response.js';
import { anthropicUsage, renderUsage } from '../../src/wire/anthropic/usage.js';
import type { CanonicalRequest, CanonicalResponse, StopReason } from '../../src/wire/canonical.js';
import { totalTokens } from '../../src/ledger/types.js';
import { wireJson } from '../helpers/wire.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/anthropic/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;

const SONNET = 'claude-sonnet-4-5-20250929';
const cfg = parseConfig(
  {
    providers: {
      anthropic: {
        group: 'paid',
        format: 'anthropic',
        // No catalog: these cases are about the YAML's max_output_tokens (or its absence), not the catalog's.
        catalog: '',
        base_url: 'https://api.anthropic.com',
        auth: { type: 'api_key', key: 'sk-ant-test' },
        headers: { 'Anthropic-Beta': 'files-api-2025-04-14' },
        models: {
          [SONNET]: { capabilities: ['vision', 'pdf', 'tools', 'reasoning'], max_output_tokens: 64000 },
          'claude-opus-4-6': { capabilities: ['tools', 'reasoning', 'structured_output'], max_output_tokens: 128000, thinking: 'anthropic-adaptive' },
          'claude-3-5-haiku-20241022': { capabilities: ['tools'] },
        },
      },
      proxied: { group: 'paid', format: 'anthropic', base_url: 'https://llm.example.com/anthropic/', auth: { type: 'api_key', key: 'tok', header: 'Authorization' }, headers: { 'anthropic-version': '2024-01-01' } },
      open: { group: 'free', format: 'anthropic', base_url: 'https://local.example.com', auth: { type: 'none' } },
    },
  },
  {},
);
const provider = (id: string): ProviderConfig => cfg.providers[id]!;
const target = (modelId: string, providerId = 'anthropic'): Target => ({ providerId, provider: provider(providerId), modelId, model: provider(providerId).models[modelId] ?? null });
const built = (req: CanonicalRequest, tg: Target = target(SONNET)) => wireJson(anthropicCodec.buildRequest(req, tg).body) as Record<string, unknown>;
const base: CanonicalRequest = { model: 'm', system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: false };

const WEATHER_SCHEMA = {
  type: 'object',
  properties: {
    location: { type: 'string', description: 'The city and country, e.g. Paris, France' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['location'],
};
const TIME_SCHEMA = { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PDF = 'JVBERi0xLjQKJcOkw7zDtsOfCjIgMCBvYmoKPDwvTGVuZ3RoIDMgMCBSPj4Kc3RyZWFtCg==';
const REDACTED = 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN3kBCFnPa9';
const HISTORY_SIG = 'ErUBCkYIBRgCIkB0sP2c9x1LoWr4n8eMgFqZ3sRkT0vBh6yJ7uQdXcN5aE2fG1hI8jK3lM4nO6pQ9rS0tU5vW7xY8zA1bC2dE3fGEgwK';
const ANSWER_SIG = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds7ohZsWqJ3lkGeDWJ6Fz0HUuUCtSWRmQDFY3y7mnZzsYyqDoAHQRKDnwg8kTaSuLxJxwoHOFGgtMIBAB';
const DOC_URL = 'https://assets.anthropic.com/m/1cd9d098ac3e6467/original/Claude-3-Model-Card-October-Addendum.pdf';
const IMG_URL = 'https://upload.wikimedia.org/wikipedia/commons/a/a8/Tour_Eiffel_Wikimedia_Commons.jpg';
const ASK = "What's the weather in Paris, and what time is it there? Also summarise the attached report.";

/** The fixture request as canonical, written out by hand. */
const FIXTURE_CANONICAL: CanonicalRequest = {
  model: 'claude-sonnet-4-5',
  system: [
    { type: 'text', text: 'You are a concise travel assistant.' },
    { type: 'text', text: 'Company handbook: always give temperatures in Celsius.', cacheControl: { type: 'ephemeral' } },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: ASK },
        { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: PNG } },
        { type: 'image', source: { kind: 'url', url: IMG_URL } },
        { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: PDF }, filename: 'Q2 travel report', cacheControl: { type: 'ephemeral' } },
        { type: 'file', source: { kind: 'url', url: DOC_URL } },
        // base64 of the UTF-8 text 'Grass is green. Sky is blue.'
        { type: 'file', source: { kind: 'base64', mediaType: 'text/plain', data: 'R3Jhc3MgaXMgZ3JlZW4uIFNreSBpcyBibHVlLg==' }, filename: 'Facts' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: '', opaque: REDACTED, redacted: true, origin: 'anthropic' },
        { type: 'reasoning', text: 'I need the weather and the local time; both tools can run now.', signature: HISTORY_SIG, origin: 'anthropic' },
        { type: 'text', text: 'Let me look both up.' },
        { type: 'tool_call', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' },
        { type: 'tool_call', id: 'toolu_01BfTmQe6Ty8nzFcAd2sU4nL', name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', callId: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', content: [{ type: 'text', text: '15 degrees, light rain' }] },
        {
          type: 'tool_result', callId: 'toolu_01BfTmQe6Ty8nzFcAd2sU4nL', name: 'get_time', content: [{ type: 'text', text: 'time service unavailable' }], isError: true,
          cacheControl: { type: 'ephemeral' },
        },
        { type: 'text', text: 'Please answer in French.' },
      ],
    },
  ],
  tools: [
    { name: 'get_weather', description: 'Get the current weather in a given location', parameters: WEATHER_SCHEMA },
    { name: 'get_time', description: 'Get the current time in a time zone', parameters: TIME_SCHEMA, cacheControl: { type: 'ephemeral' } },
  ],
  builtinTools: [{ type: 'web_search' }],
  toolChoice: { type: 'auto' },
  parallelToolCalls: false,
  maxTokens: 8192,
  temperature: 1,
  stop: ['END_OF_ANSWER'],
  thinking: { kind: 'budget', tokens: 4096 },
  includeReasoning: true,
  stream: true,
  user: 'user-7f3a9c',
  unmapped: ['messages.content.citations', 'messages.content.context'],
};

t.test('parseRequest: the full fixture (system, image, documents, thinking history, tool calls and results, tools)', async (t) => {
  const req = anthropicCodec.parseRequest(fixture('request-system-media-tools-thinking.json'));
  t.strictSame(req, FIXTURE_CANONICAL, 'cache_control markers kept, the web_search server tool is the built-in web search; citations and document context are dropped and listed');
});

t.test('buildRequest: the fixture request to Anthropic, as the API expects it', async (t) => {
  const up = anthropicCodec.buildRequest(anthropicCodec.parseRequest(fixture('request-system-media-tools-thinking.json')), target(SONNET));
  t.equal(up.path, '/v1/messages', 'base_url https://api.anthropic.com has no /v1: the codec adds it');
  t.strictSame(up.headers, {
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'files-api-2025-04-14',
    'content-type': 'application/json',
    accept: 'text/event-stream',
    'x-api-key': 'sk-ant-test',
  });
  t.strictSame(wireJson(up.body), {
    model: SONNET,
    max_tokens: 8192,
    system: [
      { type: 'text', text: 'You are a concise travel assistant.' },
      { type: 'text', text: 'Company handbook: always give temperatures in Celsius.', cache_control: { type: 'ephemeral' } },
    ],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: ASK },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'image', source: { type: 'url', url: IMG_URL } },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'Q2 travel report', cache_control: { type: 'ephemeral' } },
          { type: 'document', source: { type: 'url', url: DOC_URL } },
          { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Grass is green. Sky is blue.' }, title: 'Facts' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: REDACTED },
          { type: 'thinking', thinking: 'I need the weather and the local time; both tools can run now.', signature: HISTORY_SIG },
          { type: 'text', text: 'Let me look both up.' },
          { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } },
          { type: 'tool_use', id: 'toolu_01BfTmQe6Ty8nzFcAd2sU4nL', name: 'get_time', input: { timezone: 'Europe/Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees, light rain' },
          { type: 'tool_result', tool_use_id: 'toolu_01BfTmQe6Ty8nzFcAd2sU4nL', content: 'time service unavailable', is_error: true, cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'Please answer in French.' },
        ],
      },
    ],
    tools: [
      { name: 'get_weather', description: 'Get the current weather in a given location', input_schema: WEATHER_SCHEMA },
      { name: 'get_time', description: 'Get the current time in a time zone', input_schema: TIME_SCHEMA, cache_control: { type: 'ephemeral' } },
      { type: 'web_search_20250305', name: 'web_search' },
    ],
    tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    stop_sequences: ['END_OF_ANSWER'],
    temperature: 1,
    metadata: { user_id: 'user-7f3a9c' },
    thinking: { type: 'enabled', budget_tokens: 4096 },
    stream: true,
  });
});

t.test('request round trip: parse -> build -> parse gives the same canonical request', async (t) => {
  const once = anthropicCodec.parseRequest(fixture('request-system-media-tools-thinking.json'));
  const twice = anthropicCodec.parseRequest(built(once));
  const { unmapped: _listed, ...carried } = once;
  t.strictSame(twice, { ...carried, model: SONNET }, 'only the model changes: the upstream id replaces the client name (what was listed as dropped is gone)');
});

t.test('buildRequest from another format: alternation, tool results first, drops', async (t) => {
  const req: CanonicalRequest = {
    model: 'gpt-4o',
    system: [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: '' }, { type: 'image', source: { kind: 'url', url: 'https://x.example/a.png' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'data:image/jpeg;base64,/9j/4AAQSkZJRg==' }, detail: 'high' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'o4 reasoning summary, no signature' },
          { type: 'reasoning', text: 'gemini thought', signature: 'CiQB0e2Kb-gemini-thought-signature', origin: 'gemini' },
          { type: 'reasoning', text: '', opaque: 'gAAAAABo-encrypted-responses-reasoning', redacted: true, origin: 'openai-responses' },
          { type: 'text', text: '' },
          { type: 'tool_call', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', arguments: '{"location":"Paris"}' },
          { type: 'tool_call', id: 'functions.get_time:1', name: 'get_time', arguments: '' },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', callId: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', content: [{ type: 'text', text: '15C' }] }] },
      { role: 'user', content: [{ type: 'tool_result', callId: 'functions.get_time:1', content: [] }] },
      { role: 'user', content: [{ type: 'audio', source: { kind: 'base64', mediaType: 'audio/wav', data: 'UklGRg==' } }, { type: 'text', text: 'thanks' }] },
      { role: 'assistant', content: [{ type: 'reasoning', text: '', redacted: true }] },
    ],
    tools: [
      { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } }, strict: true },
      { name: 'get_time', parameters: {} },
    ],
    toolChoice: { type: 'required' },
    responseFormat: { type: 'json_schema', name: 'w', schema: { type: 'object' } },
    seed: 42,
    presencePenalty: 0.5,
    frequencyPenalty: 0.5,
    temperature: 0.2,
    topP: 0.9,
    topK: 40,
    stop: ['\n\n', 'END'],
    thinking: { kind: 'level', level: 'high' },
    metadata: { trace: 'abc' },
    stream: false,
  };
  const up = anthropicCodec.buildRequest(req, target(SONNET));
  t.equal(up.headers.accept, 'application/json', 'not streamed');
  t.strictSame(wireJson(up.body), {
    model: SONNET,
    max_tokens: 64000,
    system: 'Be brief.',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }, { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQSkZJRg==' } }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', input: { location: 'Paris' } },
          { type: 'tool_use', id: 'functions_get_time_1', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', content: '15C' },
          { type: 'tool_result', tool_use_id: 'functions_get_time_1' },
          { type: 'text', text: 'thanks' },
        ],
      },
    ],
    tools: [
      { name: 'get_weather', input_schema: { type: 'object', properties: { location: { type: 'string' } } } },
      { name: 'get_time', input_schema: { type: 'object', properties: {} } },
    ],
    tool_choice: { type: 'any' },
    stop_sequences: ['END'],
    temperature: 0.2,
    top_p: 0.9,
    top_k: 40,
  }, 'merged user turns; reasoning without signature or from another family, empty text, audio, the empty assistant turn, seed, penalties, json_schema (no structured_output capability), strict and whitespace-only stops dropped; thinking off because a tool is forced');
});

t.test('buildRequest: a user turn with text before tool results sends the results first', async (t) => {
  const body = built({
    ...base,
    messages: [
      { role: 'assistant', content: [{ type: 'tool_call', id: 'toolu_1', name: 'f', arguments: '{}' }] },
      { role: 'user', content: [{ type: 'text', text: 'here you go' }, { type: 'tool_result', callId: 'toolu_1', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { kind: 'file_id', id: 'file_011CNha8iCJcU1wXNR6q4V8w' } }] }] },
    ],
  });
  t.strictSame(body.messages, [
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } }] },
        { type: 'text', text: 'here you go' },
      ],
    },
  ]);
});

t.test('buildRequest: max_tokens, path, headers and auth', async (t) => {
  t.equal(built(base, target('claude-3-5-haiku-20241022')).max_tokens, 4096, 'no maxTokens, no max_output_tokens: 4096');
  t.equal(built(base, target(SONNET)).max_tokens, 64000, "no maxTokens: the model's max_output_tokens");
  t.equal(built({ ...base, maxTokens: 100 }, target(SONNET)).max_tokens, 100);
  t.equal(built({ ...base, maxTokens: 100000 }, target(SONNET)).max_tokens, 64000, "capped at the model's max_output_tokens");
  t.equal(built({ ...base, maxTokens: 100000 }, target('claude-x', 'open')).max_tokens, 100000, 'unlisted model: no cap');

  const proxied = anthropicCodec.buildRequest({ ...base, stream: true }, target('claude-x', 'proxied'));
  t.equal(proxied.path, '/anthropic/v1/messages', 'base_url path kept, trailing slash removed');
  t.equal(proxied.headers.authorization, 'Bearer tok', 'a configured authorization header carries a bearer token');
  t.notOk('x-api-key' in proxied.headers);
  t.equal(proxied.headers['anthropic-version'], '2024-01-01', 'a configured anthropic-version replaces the default');
  t.equal(proxied.headers.accept, 'text/event-stream');
  t.equal(wireJson(proxied.body).stream, true);

  const open = anthropicCodec.buildRequest(base, target('claude-x', 'open'));
  t.strictSame(open.headers, { 'anthropic-version': '2023-06-01', 'content-type': 'application/json', accept: 'application/json' }, 'auth none: no key header');
  t.notOk('stream' in wireJson(open.body), 'stream is only sent when true');
});

t.test('anthropicThinking: the shared table of docs/thinking.md, and the clamp', async (t) => {
  const b = (level: Parameters<typeof anthropicThinking>[0], max = 64000) => anthropicThinking(level, { maxTokens: max, family: 'anthropic-budget' })?.thinking.budget_tokens;
  // anthropic-budget row: minimal 1024, low 1024, medium 8192, high 24576, xhigh 32000, max 32000, auto 8192.
  t.equal(b({ kind: 'level', level: 'minimal' }), 1024);
  t.equal(b({ kind: 'level', level: 'low' }), 1024);
  t.equal(b({ kind: 'level', level: 'medium' }), 8192);
  t.equal(b({ kind: 'level', level: 'high' }), 24576);
  t.equal(b({ kind: 'level', level: 'xhigh' }), 32000);
  t.equal(b({ kind: 'level', level: 'max' }), 32000, 'max = the family ceiling (32000)');
  t.equal(b({ kind: 'level', level: 'auto' }), 8192, 'auto = medium');
  t.strictSame(anthropicThinking({ kind: 'level', level: 'none' }, { maxTokens: 64000, family: 'anthropic-budget' }), { thinking: { type: 'disabled' } }, 'none turns thinking off explicitly');
  t.equal(b({ kind: 'budget', tokens: 500 }), 1024, 'raised to the 1024 minimum');
  t.equal(b({ kind: 'budget', tokens: 100000 }), 32000, 'lowered to the family ceiling');
  t.equal(b({ kind: 'level', level: 'high' }, 4096), 4095, 'kept below max_tokens');
  t.equal(b({ kind: 'level', level: 'xhigh' }, 1025), 1024, 'the only valid budget');
  t.equal(anthropicThinking({ kind: 'level', level: 'low' }, { maxTokens: 1024, family: 'anthropic-budget' }), null, 'max_tokens 1024 leaves no valid budget');
  t.strictSame(anthropicThinking({ kind: 'level', level: 'high' }, { maxTokens: 64000, family: 'anthropic-budget' }), { thinking: { type: 'enabled', budget_tokens: 24576 } });
  // anthropic-adaptive row: adaptive with an effort; auto has none; a budget becomes an effort (<4096: low).
  t.strictSame(anthropicThinking({ kind: 'level', level: 'minimal' }, { maxTokens: 64000, family: 'anthropic-adaptive' }), { thinking: { type: 'adaptive' }, effort: 'low' }, 'adaptive model: effort');
  t.strictSame(anthropicThinking({ kind: 'level', level: 'auto' }, { maxTokens: 64000, family: 'anthropic-adaptive' }), { thinking: { type: 'adaptive' } });
  t.strictSame(anthropicThinking({ kind: 'budget', tokens: 3000 }, { maxTokens: 64000, family: 'anthropic-adaptive' }), { thinking: { type: 'adaptive' }, effort: 'low' }, 'a budget becomes an effort');
  t.strictSame(anthropicThinking({ kind: 'level', level: 'none' }, { maxTokens: 64000, family: 'anthropic-adaptive' }), { thinking: { type: 'disabled' } });
});

t.test('buildRequest: no thinking when the last assistant turn calls a tool without a thinking block first', async (t) => {
  const think: CanonicalRequest = { ...base, maxTokens: 20000, thinking: { kind: 'level', level: 'high' }, tools: [{ name: 'f', parameters: { type: 'object' } }] };
  const call = { type: 'tool_call' as const, id: 'toolu_1', name: 'f', arguments: '{}' };
  const result = { role: 'user' as const, content: [{ type: 'tool_result' as const, callId: 'toolu_1', name: 'f', content: [{ type: 'text' as const, text: 'ok' }] }] };
  const loop = (assistant: CanonicalRequest['messages'][number]['content']): CanonicalRequest => ({ ...think, messages: [...base.messages, { role: 'assistant', content: assistant }, result] });
  // A Chat / Responses / Gemini client's history: the call, with no Anthropic-signed thinking to give back.
  const unsigned = anthropicCodec.buildRequest(loop([{ type: 'reasoning', text: 'need f' }, call]), target(SONNET));
  const body = wireJson(unsigned.body) as Record<string, unknown>;
  t.notOk('thinking' in body, 'thinking not sent: the API refuses a final tool-calling assistant turn that does not start with a thinking block');
  t.ok(unsigned.dropped.includes('thinking'), 'and listed as dropped');
  t.notOk('thinking' in built(loop([{ type: 'reasoning', text: 'g', signature: 'sig-g', origin: 'gemini' }, call])), "another family's signed reasoning is not a thinking block either");
  // Anthropic's own signed thinking first: sent back, and thinking stays on.
  const signed = built(loop([{ type: 'reasoning', text: 'need f', signature: 'sig-a', origin: 'anthropic' }, call]));
  t.strictSame(signed.thinking, { type: 'enabled', budget_tokens: 19999 }, 'signed thinking before the call: thinking on');
  t.strictSame((signed.messages as { content: { type: string }[] }[])[1]!.content.map((b) => b.type), ['thinking', 'tool_use']);
  const redacted = built(loop([{ type: 'reasoning', text: '', redacted: true, opaque: 'xyz', origin: 'anthropic' }, call]));
  t.ok('thinking' in redacted, 'a redacted_thinking block first counts too');
  // Only the last assistant turn matters: an earlier unsigned call, then a plain answer and a new question.
  const earlier = built({ ...think, messages: [...base.messages, { role: 'assistant', content: [call] }, result, { role: 'assistant', content: [{ type: 'text', text: 'done' }] }, { role: 'user', content: [{ type: 'text', text: 'next' }] }] });
  t.ok('thinking' in earlier, 'a finished tool loop earlier in the history: thinking on');
  t.strictSame(built(loop([call]), target(SONNET)).thinking, undefined);
  const off = built({ ...loop([call]), thinking: { kind: 'level', level: 'none' } });
  t.strictSame(off.thinking, { type: 'disabled' }, 'thinking asked off: still sent as disabled');
});

t.test('buildRequest: thinking only for reasoning models, and what thinking removes', async (t) => {
  const think: CanonicalRequest = { ...base, maxTokens: 20000, thinking: { kind: 'level', level: 'high' }, temperature: 0.5, topP: 0.9, topK: 5 };
  const on = built(think, target(SONNET));
  t.strictSame(on.thinking, { type: 'enabled', budget_tokens: 19999 }, 'high (24576) kept below max_tokens 20000');
  t.notOk('temperature' in on || 'top_p' in on || 'top_k' in on, 'temperature != 1, top_p < 0.95 and top_k are refused with thinking: removed');
  const keep = built({ ...think, temperature: 1, topP: 0.97 }, target(SONNET));
  t.equal(keep.temperature, 1);
  t.equal(keep.top_p, 0.97);

  const haiku = built(think, target('claude-3-5-haiku-20241022'));
  t.notOk('thinking' in haiku, 'no reasoning capability: no thinking');
  t.equal(haiku.temperature, 0.5, 'and sampling parameters stay');
  t.equal(haiku.top_k, 5);
  t.notOk('thinking' in built(think, target('claude-unlisted', 'open')), 'unlisted model: no thinking');
  const none = built({ ...think, thinking: { kind: 'level', level: 'none' } }, target(SONNET));
  t.strictSame(none.thinking, { type: 'disabled' }, 'none: thinking disabled');
  t.equal(none.temperature, 0.5, 'and sampling parameters stay');
  t.notOk('thinking' in built({ ...base, thinking: { kind: 'level', level: 'high' }, maxTokens: 1000 }, target(SONNET)), 'max_tokens too small for a budget');
  t.strictSame(built({ ...think, tools: [{ name: 'f', parameters: { type: 'object' } }], toolChoice: { type: 'tool', name: 'f' } }, target(SONNET)).tool_choice, { type: 'tool', name: 'f' });
  t.notOk('thinking' in built({ ...think, tools: [{ name: 'f', parameters: { type: 'object' } }], toolChoice: { type: 'tool', name: 'f' } }, target(SONNET)), 'a forced tool wins over thinking');
  t.ok('thinking' in built({ ...think, toolChoice: { type: 'tool', name: 'f' } }, target(SONNET)), 'a tool choice without tools is not sent and forces nothing');

  const opus = built({ ...think, responseFormat: { type: 'json_schema', name: 'w', schema: { type: 'object', properties: {} } }, tools: [{ name: 'f', parameters: { type: 'object' }, strict: true }] }, target('claude-opus-4-6'));
  t.strictSame(opus.thinking, { type: 'adaptive' }, 'an anthropic-adaptive model gets adaptive thinking');
  t.strictSame(opus.output_config, { effort: 'high', format: { type: 'json_schema', schema: { type: 'object', properties: {} } } }, 'the level as effort; structured_output capability: the schema goes to output_config.format');
  t.strictSame(opus.tools, [{ name: 'f', input_schema: { type: 'object' }, strict: true }]);
  t.notOk('output_config' in built({ ...base, responseFormat: { type: 'json_object' } }, target('claude-opus-4-6')), 'json_object has no Anthropic form: dropped');
  t.strictSame(built({ ...base, parallelToolCalls: false, tools: [{ name: 'f', parameters: { type: 'object' } }] }).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
  t.strictSame(built({ ...base, toolChoice: { type: 'none' }, tools: [{ name: 'f', parameters: { type: 'object' } }] }).tool_choice, { type: 'none' });
});

t.test('parseRequest: thinking, tool_choice, system and other shapes', async (t) => {
  const p = (extra: Record<string, unknown>) => anthropicCodec.parseRequest({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }], ...extra });
  t.strictSame(p({}), { model: 'claude-sonnet-4-5', system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }], maxTokens: 1024, stream: false }, 'string content; nothing invented');
  t.strictSame(p({ thinking: { type: 'disabled' } }).thinking, { kind: 'level', level: 'none' });
  t.strictSame(p({ thinking: { type: 'adaptive' } }).thinking, { kind: 'level', level: 'auto' });
  t.strictSame(p({ thinking: { type: 'adaptive' }, output_config: { effort: 'low' } }).thinking, { kind: 'level', level: 'low' });
  t.equal(p({ thinking: { type: 'adaptive', display: 'omitted' } }).includeReasoning, undefined, 'thinking not shown: reasoning not asked for');
  t.strictSame(p({ output_config: { effort: 'max' } }).thinking, { kind: 'level', level: 'max' }, 'effort alone');
  t.strictSame(p({ tool_choice: { type: 'any' } }).toolChoice, { type: 'required' });
  t.strictSame(p({ tool_choice: { type: 'tool', name: 'get_weather' } }).toolChoice, { type: 'tool', name: 'get_weather' });
  t.strictSame(p({ tool_choice: { type: 'none' } }).toolChoice, { type: 'none' });
  t.equal(p({ tool_choice: { type: 'auto' } }).parallelToolCalls, undefined);
  t.strictSame(p({ system: 'You are terse.' }).system, [{ type: 'text', text: 'You are terse.' }]);
  t.strictSame(p({ top_p: 0.9, top_k: 40, temperature: 0 }), { ...p({}), topP: 0.9, topK: 40, temperature: 0 });
  t.strictSame(p({ output_config: { format: { type: 'json_schema', schema: { type: 'object' } } } }).responseFormat, { type: 'json_schema', name: 'output', schema: { type: 'object' } });
  t.strictSame(p({ output_format: { type: 'json_schema', schema: { type: 'object' } } }).responseFormat, { type: 'json_schema', name: 'output', schema: { type: 'object' } }, 'the beta output_format');
  t.strictSame(p({ tools: [{ type: 'bash_20250124', name: 'bash' }, { type: 'custom', name: 'f', input_schema: { type: 'object' }, strict: true }] }).tools, [{ name: 'f', parameters: { type: 'object' }, strict: true }]);
  const msgs = p({
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Search' }] },
      {
        role: 'assistant',
        content: [
          { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'x' } },
          { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [] },
          { type: 'text', text: 'Found it.', citations: [{ type: 'web_search_result_location', url: 'https://x', title: 'x', encrypted_index: 'e', cited_text: 'c' }] },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_unknown' }] },
      { role: 'system', content: 'Extra system rule.' },
    ],
  });
  t.strictSame(msgs.messages, [
    { role: 'user', content: [{ type: 'text', text: 'Search' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Found it.' }] },
    { role: 'user', content: [{ type: 'tool_result', callId: 'toolu_unknown', content: [] }] },
  ], 'server tool blocks dropped; a result for an unknown call has no name');
  t.strictSame(msgs.system, [{ type: 'text', text: 'Extra system rule.' }], 'a system-role message joins the system parts');
  t.strictSame(
    p({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { type: 'file', file_id: 'file_1' } }] } }] }] }).messages[0]!.content,
    [{ type: 'text', text: 'a' }, { type: 'image', source: { kind: 'file_id', id: 'file_1', origin: 'anthropic' } }],
    'a content-source document contributes its blocks',
  );
});

t.test('parseRequest: malformed bodies are TOLLGATE_ERR_INVALID_REQUEST with the param', async (t) => {
  const ok = { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] };
  const cases: [unknown, string][] = [
    [null, 'body'],
    [[], 'body'],
    ['{}', 'body'],
    [{ ...ok, model: undefined }, 'model'],
    [{ ...ok, model: '' }, 'model'],
    [{ ...ok, model: 42 }, 'model'],
    [{ ...ok, max_tokens: undefined }, 'max_tokens'],
    [{ ...ok, max_tokens: 0 }, 'max_tokens'],
    [{ ...ok, max_tokens: 1.5 }, 'max_tokens'],
    [{ ...ok, max_tokens: '1024' }, 'max_tokens'],
    [{ ...ok, messages: undefined }, 'messages'],
    [{ ...ok, messages: 'hi' }, 'messages'],
    [{ ...ok, messages: ['hi'] }, 'messages[0]'],
    [{ ...ok, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role'],
    [{ ...ok, messages: [{ role: 'user', content: 42 }] }, 'messages[0].content'],
    [{ ...ok, messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages[0].content[0].text'],
    [{ ...ok, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', data: 'x' } }] }] }, 'messages[0].content[0].source'],
    [{ ...ok, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', input: {} }] }] }, 'messages[0].content[0].name'],
    [{ ...ok, stream: 'yes' }, 'stream'],
    [{ ...ok, temperature: '0.5' }, 'temperature'],
    [{ ...ok, tools: {} }, 'tools'],
    [{ ...ok, tool_choice: { type: 'tool' } }, 'tool_choice.name'],
    [{ ...ok, tool_choice: { type: 'required' } }, 'tool_choice.type'],
    [{ ...ok, thinking: { type: 'enabled' } }, 'thinking.budget_tokens'],
    [{ ...ok, stop_sequences: [1] }, 'stop_sequences'],
  ];
  for (const [body, param] of cases) {
    let err: unknown;
    try {
      anthropicCodec.parseRequest(body);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof TollgateError, `${JSON.stringify(body)} throws a TollgateError`);
    t.equal((err as TollgateError).code, 'TOLLGATE_ERR_INVALID_REQUEST');
    t.equal((err as TollgateError).status, 400);
    t.equal((err as TollgateError).param, param, `param ${param}`);
  }
  t.doesNotThrow(() => anthropicCodec.parseRequest(ok), 'the minimal valid body');
});

const RESPONSE_CANONICAL: CanonicalResponse = {
  id: 'msg_01HCDu5LRGeP2o7s2xGmxyx8',
  model: SONNET,
  content: [
    { type: 'reasoning', text: 'The user wants the current weather in Paris. I should call get_weather with the city and celsius.', signature: ANSWER_SIG, origin: 'anthropic' },
    { type: 'text', text: "I'll check the current weather in Paris for you." },
    { type: 'tool_call', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' },
  ],
  stopReason: 'tool_calls',
  usage: { input: 472, cached: 2048, cacheWrite: 1024, output: 89, reasoning: null, cacheWrite1h: 0 },
};

t.test('parseResponse: thinking + text + tool_use with cache usage', async (t) => {
  const res = anthropicCodec.parseResponse(fixture('message-thinking-tool-cached.json'));
  t.strictSame(res, RESPONSE_CANONICAL, 'stop_sequence null -> no stopSequence');
  // 472 uncached + 2048 read + 1024 written + 89 out: Anthropic input_tokens excludes the cache, so nothing overlaps.
  t.equal(totalTokens(res.usage!), 3633);
});

t.test('renderResponse: the Messages shape a client SDK reads, and round trips', async (t) => {
  const json = anthropicCodec.renderResponse(RESPONSE_CANONICAL, 'claude-sonnet-4-5');
  const f = fixture('message-thinking-tool-cached.json');
  t.strictSame(json, {
    ...f,
    model: 'claude-sonnet-4-5',
    usage: { input_tokens: 472, cache_creation_input_tokens: 1024, cache_read_input_tokens: 2048, output_tokens: 89, cache_creation: { ephemeral_5m_input_tokens: 1024, ephemeral_1h_input_tokens: 0 }, },
  }, 'the fixture itself, with the client model name, the four usage counts and the cache writes by lifetime');
  t.strictSame(anthropicCodec.parseResponse(json), { ...RESPONSE_CANONICAL, model: 'claude-sonnet-4-5' }, 'render -> parse is the identity');

  const foreign: CanonicalResponse = {
    id: 'chatcmpl-BXl3dQyKu7C1zn9ZVaPxR1hq2fG4s',
    model: 'o4-mini',
    content: [
      { type: 'reasoning', text: 'summary from another family' },
      { type: 'reasoning', text: 'gemini thought', signature: 'CiQB0e2Kb-gemini-thought-signature', origin: 'gemini' },
      { type: 'reasoning', text: '', opaque: 'gAAAAABo-encrypted', redacted: true, origin: 'openai-responses' },
      { type: 'reasoning', text: '', opaque: REDACTED, redacted: true, origin: 'anthropic' },
      { type: 'text', text: 'Done.' },
      { type: 'tool_call', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', arguments: '{"location":"Paris"}' },
    ],
    stopReason: 'stop_sequence',
    stopSequence: '###',
    usage: { input: 86, cached: 1920, cacheWrite: null, output: 108, reasoning: 192 },
  };
  const r = anthropicCodec.renderResponse(foreign, 'o4-mini') as Record<string, unknown>;
  t.equal(r.id, 'msg_chatcmpl-BXl3dQyKu7C1zn9ZVaPxR1hq2fG4s', 'a foreign id gets the msg_ prefix');
  t.strictSame(r.content, [
    { type: 'thinking', thinking: 'summary from another family', signature: '' },
    { type: 'thinking', thinking: 'gemini thought', signature: '' },
    { type: 'redacted_thinking', data: REDACTED },
    { type: 'text', text: 'Done.' },
    { type: 'tool_use', id: 'call_Qd0m7f2Lx8cW4bVn1TzY6pRk', name: 'get_weather', input: { location: 'Paris' } },
  ], "another family's signature is not shown (signature ''), its redacted data not at all; tool ids pass through");
  t.equal(r.stop_reason, 'stop_sequence');
  t.equal(r.stop_sequence, '###');
  // 108 output + 192 reasoning: Anthropic counts thinking inside output_tokens.
  t.strictSame(r.usage, { input_tokens: 86, cache_creation_input_tokens: 0, cache_read_input_tokens: 1920, output_tokens: 300 });
  t.strictSame(anthropicCodec.parseResponse(r), {
    ...foreign,
    content: [foreign.content[0], { type: 'reasoning', text: 'gemini thought' }, ...foreign.content.slice(3)],
    id: 'msg_chatcmpl-BXl3dQyKu7C1zn9ZVaPxR1hq2fG4s',
    usage: { input: 86, cached: 1920, cacheWrite: 0, output: 300, reasoning: null },
  }, 'round trip modulo the documented drops: foreign opaque data, id prefix, unknown cacheWrite -> 0, reasoning folded into output');
  t.equal((anthropicCodec.renderResponse({ ...foreign, usage: null, content: [{ type: 'image', source: { kind: 'url', url: 'https://x' } }] }, 'm') as { content: unknown[] }).content.length, 0, 'non-answer parts are not rendered');
  t.strictSame((anthropicCodec.renderResponse({ ...foreign, usage: null }, 'm') as Record<string, unknown>).usage, { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 });
});

t.test('stop reasons both ways', async (t) => {
  const parsed: Record<string, StopReason> = {
    end_turn: 'end', max_tokens: 'max_tokens', stop_sequence: 'stop_sequence', tool_use: 'tool_calls', pause_turn: 'end', refusal: 'refusal', model_context_window_exceeded: 'max_tokens',
  };
  for (const [a, c] of Object.entries(parsed)) t.equal(parseStopReason(a), c, a);
  t.equal(parseStopReason(null), 'end');
  const rendered: Record<StopReason, string> = {
    end: 'end_turn', max_tokens: 'max_tokens', tool_calls: 'tool_use', stop_sequence: 'stop_sequence', content_filter: 'refusal', refusal: 'refusal', error: 'end_turn',
  };
  for (const [c, a] of Object.entries(rendered)) t.equal(renderStopReason(c as StopReason), a, c);
});

t.test('parseResponse: answers that are not messages are protocol errors', async (t) => {
  for (const body of [null, 'x', [], { type: 'message' }, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]) {
    t.throws(() => anthropicCodec.parseResponse(body), { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' }, JSON.stringify(body));
  }
  const res = anthropicCodec.parseResponse({ id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }, { type: 'redacted_thinking', data: 'abc' }, { type: 'tool_use', id: 'toolu_2', name: 'noargs', input: {} }], stop_reason: 'end_turn', stop_sequence: null });
  t.strictSame(res.content, [{ type: 'reasoning', text: '', opaque: 'abc', redacted: true, origin: 'anthropic' }, { type: 'tool_call', id: 'toolu_2', name: 'noargs', arguments: '{}' }]);
  t.equal(res.usage, null, 'no usage reported: null, not zeros');
});

t.test('anthropicUsage: buckets, zeros, nulls and garbage', async (t) => {
  t.strictSame(anthropicUsage({ input_tokens: 472, cache_creation_input_tokens: 1024, cache_read_input_tokens: 2048, output_tokens: 89 }), { input: 472, cached: 2048, cacheWrite: 1024, output: 89, reasoning: null });
  t.strictSame(anthropicUsage({ input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 }), { input: 25, cached: 0, cacheWrite: 0, output: 0, reasoning: null }, 'reported zeros stay zeros');
  t.strictSame(anthropicUsage({ input_tokens: 25, output_tokens: 3 }), { input: 25, cached: null, cacheWrite: null, output: 3, reasoning: null }, 'absent cache fields are null (older API versions)');
  t.strictSame(anthropicUsage({ input_tokens: 25, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 3 }), { input: 25, cached: null, cacheWrite: null, output: 3, reasoning: null });
  t.strictSame(anthropicUsage({ output_tokens: 89 }), { input: null, cached: null, cacheWrite: null, output: 89, reasoning: null }, "message_delta's usage");
  t.strictSame(anthropicUsage({ input_tokens: 10, output_tokens: 300, output_tokens_details: { thinking_tokens: 192 } }), { input: 10, cached: null, cacheWrite: null, output: 108, reasoning: 192 }, 'a thinking split, when reported, is taken out of output');
  for (const raw of [undefined, null, 5, 'usage', [], {}, { service_tier: 'standard' }, { input_tokens: -1, output_tokens: 'x' }]) {
    t.equal(anthropicUsage(raw), null, JSON.stringify(raw) ?? 'undefined');
  }
  t.strictSame(renderUsage({ input: null, cached: 5, cacheWrite: null, output: null, reasoning: 7 }), { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 7 });
});
