// The `gemini` codec, request side: a client's generateContent body -> canonical (parseRequest), and canonical ->
// the upstream request (buildRequest), on fixtures shaped like what @google/genai sends.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import { TollgateError } from '../../src/core/errors.js';
import type { Target } from '../../src/wire/codec.js';
import { geminiCodec } from '../../src/wire/gemini/index.js';
import type { CanonicalRequest, ThinkingLevel } from '../../src/wire/canonical.js';
import { wireJson } from '../helpers/wire.js';

const fixture = (name: string): Record<string, unknown> => JSON.parse(readFileSync(new URL(`../fixtures/gemini/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;

const cfg = parseConfig(
  {
    providers: {
      google: {
        group: 'paid',
        format: 'gemini',
        base_url: 'https://generativelanguage.googleapis.com/v1beta/',
        auth: { type: 'api_key', key: 'AIza-test-key' },
        headers: { 'x-goog-user-project': 'tollgate-test' },
        models: {
          'gemini-2.5-flash': { capabilities: ['vision', 'pdf', 'audio', 'tools', 'reasoning', 'structured_output'], thinking: 'gemini-budget' },
          'gemini-2.5-pro': { capabilities: ['vision', 'tools', 'reasoning'] },
          'gemini-3-pro-preview': { capabilities: ['vision', 'tools', 'reasoning'], thinking: 'gemini-level' },
          'gemini-2.0-flash': { capabilities: ['vision', 'tools'] },
        },
      },
      proxy: { group: 'paid', format: 'gemini', base_url: 'https://llm.example.com/google', auth: { type: 'api_key', key: 'k2', header: 'Authorization' } },
    },
  },
  {},
);
const google = cfg.providers.google!;
const target = (modelId: string): Target => ({ providerId: 'google', provider: google, modelId, model: google.models[modelId] ?? null });

function build(req: CanonicalRequest, modelId = 'gemini-2.5-flash') {
  const up = geminiCodec.buildRequest(req, target(modelId));
  return { ...up, json: wireJson(up.body) as Record<string, unknown> };
}

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PDF = 'JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2cvUGFnZXMgMiAwIFI+PgplbmRvYmoK';
const AUDIO_URI = 'https://generativelanguage.googleapis.com/v1beta/files/8x2kq9cz1m4p';
const QUESTION = 'Does the chart in this image match the totals in the attached report and the recorded call?';
const REPORT_SCHEMA = {
  type: 'object',
  properties: { matches: { type: 'boolean' }, differences: { type: 'array', items: { type: 'string' } }, note: { type: ['string', 'null'] } },
  required: ['matches', 'differences'],
  propertyOrdering: ['matches', 'differences', 'note'],
};

const MULTIMODAL: CanonicalRequest = {
  model: '',
  stream: false,
  system: [
    { type: 'text', text: 'You are a meticulous financial analyst.' },
    { type: 'text', text: 'Report every discrepancy.' },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: QUESTION },
        { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: PNG } },
        { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: PDF } },
        { type: 'audio', source: { kind: 'file_id', id: AUDIO_URI, mediaType: 'audio/mpeg', origin: 'gemini' } },
      ],
    },
  ],
  maxTokens: 2048,
  temperature: 0.2,
  topP: 0.95,
  topK: 40,
  stop: ['END_OF_REPORT'],
  seed: 42,
  presencePenalty: 0.1,
  frequencyPenalty: 0.3,
  responseFormat: { type: 'json_schema', name: 'response', schema: REPORT_SCHEMA },
  thinking: { kind: 'budget', tokens: 1024 },
  includeReasoning: true,
  fieldNames: { responseFormat: 'generationConfig.responseSchema' },
};

const WEATHER_PARAMS = {
  type: 'object',
  properties: { location: { type: 'string', description: 'City and country, e.g. Paris, France' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['location'],
};
const TIME_PARAMS = { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'], additionalProperties: false };
const PLAN = '**Planning the lookups**\n\nTwo cities, so two calls to get_weather.\n';

const TOOLS_HISTORY: CanonicalRequest = {
  model: '',
  stream: false,
  system: [],
  messages: [
    { role: 'user', content: [{ type: 'text', text: "What's the weather in Paris and in Tokyo right now?" }] },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: PLAN },
        {
          type: 'tool_call', id: 'call_0', name: 'get_weather', arguments: '{"location":"Paris, France"}',
          signature: 'CiQB0e2Kb4m1HkT9pXw3Zr7qYv2Lc8sDf6Gh0Jn5Ua1Eo4Ti9Bk=', origin: 'gemini',
        },
        { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"location":"Tokyo, Japan"}' },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', callId: 'call_0', name: 'get_weather', content: [{ type: 'text', text: '18°C, light rain' }] },
        { type: 'tool_result', callId: 'call_1', name: 'get_weather', content: [{ type: 'text', text: '{"temperature":24,"conditions":"sunny"}' }] },
      ],
    },
  ],
  tools: [
    { name: 'get_weather', description: 'Get the current weather for a city.', parameters: WEATHER_PARAMS },
    { name: 'get_time', description: 'The current local time in an IANA time zone.', parameters: TIME_PARAMS },
  ],
  builtinTools: [{ type: 'web_search' }],
  toolChoice: { type: 'tool', name: 'get_weather' },
  thinking: { kind: 'level', level: 'low' },
  includeReasoning: true,
};

t.test('parseRequest: systemInstruction, inline image and PDF, fileData audio, generationConfig with responseSchema and thinkingBudget', async (t) => {
  t.strictSame(geminiCodec.parseRequest(fixture('request-multimodal.json')), MULTIMODAL);
});

t.test('parseRequest: functionCall/functionResponse history without ids, tools, toolConfig, thinkingLevel', async (t) => {
  const req = geminiCodec.parseRequest(fixture('request-tools-history.json'));
  t.strictSame(req, TOOLS_HISTORY);
  const first = req.messages.flatMap((m) => m.content).find((p) => p.type === 'tool_call');
  t.match(first, { signature: 'CiQB0e2Kb4m1HkT9pXw3Zr7qYv2Lc8sDf6Gh0Jn5Ua1Eo4Ti9Bk=', origin: 'gemini' }, 'the functionCall thoughtSignature rides on the call');
});

t.test('buildRequest: path, headers and body for a gemini-budget model, streamed', async (t) => {
  const up = build({ ...MULTIMODAL, stream: true });
  t.equal(up.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  t.equal(up.headers['x-goog-api-key'], 'AIza-test-key');
  t.equal(up.headers['content-type'], 'application/json');
  t.equal(up.headers.accept, 'text/event-stream');
  t.equal(up.headers['x-goog-user-project'], 'tollgate-test', 'provider headers are kept');
  t.notOk('authorization' in up.headers);
  t.strictSame(up.json, {
    contents: [
      {
        role: 'user',
        parts: [
          { text: QUESTION },
          { inlineData: { mimeType: 'image/png', data: PNG } },
          { inlineData: { mimeType: 'application/pdf', data: PDF } },
          { fileData: { mimeType: 'audio/mpeg', fileUri: AUDIO_URI } },
        ],
      },
    ],
    systemInstruction: { parts: [{ text: 'You are a meticulous financial analyst.' }, { text: 'Report every discrepancy.' }] },
    generationConfig: {
      maxOutputTokens: 2048,
      temperature: 0.2,
      topP: 0.95,
      topK: 40,
      stopSequences: ['END_OF_REPORT'],
      seed: 42,
      presencePenalty: 0.1,
      frequencyPenalty: 0.3,
      responseMimeType: 'application/json',
      responseJsonSchema: REPORT_SCHEMA,
      thinkingConfig: { thinkingBudget: 1024, includeThoughts: true },
    },
  });

  const unary = build(MULTIMODAL);
  t.equal(unary.path, '/v1beta/models/gemini-2.5-flash:generateContent');
  t.equal(unary.headers.accept, 'application/json');
  t.equal(build(MULTIMODAL, 'models/gemini-2.5-flash').path, '/v1beta/models/gemini-2.5-flash:generateContent', "a 'models/' prefix on the id is not doubled");
});

t.test('buildRequest: tool history, tools and toolConfig for a gemini-level model', async (t) => {
  const up = build(TOOLS_HISTORY, 'gemini-3-pro-preview');
  t.equal(up.path, '/v1beta/models/gemini-3-pro-preview:generateContent');
  t.strictSame(up.json, {
    contents: [
      { role: 'user', parts: [{ text: "What's the weather in Paris and in Tokyo right now?" }] },
      {
        role: 'model',
        parts: [
          { text: PLAN, thought: true },
          // The call's own thought signature goes back with it (Gemini 3 rejects a function-call turn without it).
          { functionCall: { id: 'call_0', name: 'get_weather', args: { location: 'Paris, France' } }, thoughtSignature: 'CiQB0e2Kb4m1HkT9pXw3Zr7qYv2Lc8sDf6Gh0Jn5Ua1Eo4Ti9Bk=' },
          { functionCall: { id: 'call_1', name: 'get_weather', args: { location: 'Tokyo, Japan' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'call_0', name: 'get_weather', response: { output: '18°C, light rain' } } },
          { functionResponse: { id: 'call_1', name: 'get_weather', response: { temperature: 24, conditions: 'sunny' } } },
        ],
      },
    ],
    tools: [
      {
        functionDeclarations: [
          { name: 'get_weather', description: 'Get the current weather for a city.', parametersJsonSchema: WEATHER_PARAMS },
          { name: 'get_time', description: 'The current local time in an IANA time zone.', parametersJsonSchema: TIME_PARAMS },
        ],
      },
      { googleSearch: {} },
    ],
    toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    generationConfig: { thinkingConfig: { thinkingLevel: 'low', includeThoughts: true } },
  });
});

t.test('parse -> build -> parse keeps the canonical request', async (t) => {
  for (const name of ['request-multimodal.json', 'request-tools-history.json']) {
    // The client's responseSchema goes up as responseJsonSchema: the name it was given by is not part of the trip.
    const { fieldNames: _given, ...first } = geminiCodec.parseRequest(fixture(name));
    const again = geminiCodec.parseRequest(build(first, 'gemini-2.5-flash').json);
    // A gemini-budget model turns the level 'low' into its budget; everything else survives as is.
    t.strictSame(again, first.thinking?.kind === 'level' ? { ...first, thinking: { kind: 'budget', tokens: 1024 } } : first, name);
  }
});

t.test('thinking: budgets, levels, clamping and capability', async (t) => {
  const thinking = (th: ThinkingLevel | undefined, modelId: string, includeReasoning?: boolean) => {
    const req: CanonicalRequest = { model: '', stream: false, system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], ...(th && { thinking: th }), ...(includeReasoning !== undefined && { includeReasoning }) };
    return (build(req, modelId).json.generationConfig as Record<string, unknown> | undefined)?.thinkingConfig;
  };
  const level = (l: Extract<ThinkingLevel, { kind: 'level' }>['level']): ThinkingLevel => ({ kind: 'level', level: l });
  // The shared table of docs/thinking.md (src/wire/thinking.ts): gemini-budget 512..24576, 0 = off, -1 = dynamic.
  const budgets = { none: 0, minimal: 512, low: 1024, medium: 8192, high: 24576, xhigh: 24576, max: 24576, auto: -1 } as const;
  for (const [l, b] of Object.entries(budgets)) t.strictSame(thinking(level(l as keyof typeof budgets), 'gemini-2.5-flash'), { thinkingBudget: b }, `gemini-budget ${l} -> ${b}`);
  t.strictSame(thinking(level('high'), 'gemini-2.5-pro'), { thinkingBudget: 24576 }, 'a reasoning model without a thinking family gets a budget');
  t.strictSame(thinking({ kind: 'budget', tokens: 5000 }, 'gemini-2.5-flash'), { thinkingBudget: 5000 });
  t.strictSame(thinking({ kind: 'budget', tokens: 100000 }, 'gemini-2.5-flash'), { thinkingBudget: 24576 }, 'clamped to the family maximum');
  t.strictSame(thinking({ kind: 'budget', tokens: 100 }, 'gemini-2.5-flash'), { thinkingBudget: 512 }, 'clamped to the family minimum');

  // gemini-level (Gemini 3): thinking cannot be turned off, none is minimal; xhigh and max are high.
  const levels = { none: 'minimal', minimal: 'minimal', low: 'low', medium: 'medium', high: 'high', xhigh: 'high', max: 'high' } as const;
  for (const [l, g] of Object.entries(levels)) t.strictSame(thinking(level(l as keyof typeof levels), 'gemini-3-pro-preview'), { thinkingLevel: g }, `gemini-level ${l} -> ${g}`);
  t.equal(thinking(level('auto'), 'gemini-3-pro-preview'), undefined, 'auto on a gemini-level model: the model default, no thinkingConfig');
  t.strictSame(thinking(level('auto'), 'gemini-3-pro-preview', true), { includeThoughts: true });
  t.strictSame(thinking({ kind: 'budget', tokens: 8000 }, 'gemini-3-pro-preview'), { thinkingLevel: 'medium' }, 'a budget becomes a level');

  t.equal(thinking(level('high'), 'gemini-2.0-flash', true), undefined, 'no reasoning capability: no thinkingConfig');
  t.equal(thinking(level('high'), 'gemini-unlisted', true), undefined, 'an unlisted model: capabilities unknown, no thinkingConfig');
  t.equal(thinking(undefined, 'gemini-2.5-flash'), undefined, 'nothing asked, nothing sent');
  t.strictSame(thinking(undefined, 'gemini-2.5-flash', true), { includeThoughts: true });
  t.strictSame(thinking(level('low'), 'gemini-2.5-flash', false), { thinkingBudget: 1024 }, 'includeReasoning false: no includeThoughts');
});

t.test('parseRequest: thinkingConfig, toolConfig and responseMimeType variants', async (t) => {
  const parse = (generationConfig: unknown, extra: Record<string, unknown> = {}) => geminiCodec.parseRequest({ contents: [], generationConfig, ...extra });
  t.strictSame(parse({ thinkingConfig: { thinkingBudget: -1 } }).thinking, { kind: 'level', level: 'auto' });
  t.strictSame(parse({ thinkingConfig: { thinkingBudget: 0 } }).thinking, { kind: 'level', level: 'none' });
  t.strictSame(parse({ thinkingConfig: { thinkingBudget: 2048 } }).thinking, { kind: 'budget', tokens: 2048 });
  t.strictSame(parse({ thinkingConfig: { thinkingLevel: 'high' } }).thinking, { kind: 'level', level: 'high' });
  t.strictSame(parse({ thinkingConfig: { thinkingLevel: 'MINIMAL' } }).thinking, { kind: 'level', level: 'minimal' });
  t.equal(parse({ thinkingConfig: { includeThoughts: false } }).includeReasoning, false);
  t.equal(parse({ thinkingConfig: {} }).thinking, undefined);
  t.strictSame(parse({ responseMimeType: 'application/json' }).responseFormat, { type: 'json_object' });
  t.strictSame(parse({ responseMimeType: 'text/plain' }).responseFormat, { type: 'text' });
  t.strictSame(parse({ responseMimeType: 'application/json', responseJsonSchema: { type: 'object', properties: { a: { type: 'integer' } } } }).responseFormat, {
    type: 'json_schema',
    name: 'response',
    schema: { type: 'object', properties: { a: { type: 'integer' } } },
  });
  t.equal(parse(undefined).responseFormat, undefined);

  const choice = (functionCallingConfig: unknown) => parse(undefined, { toolConfig: { functionCallingConfig } }).toolChoice;
  t.strictSame(choice({ mode: 'AUTO' }), { type: 'auto' });
  t.strictSame(choice({ mode: 'NONE' }), { type: 'none' });
  t.strictSame(choice({ mode: 'ANY' }), { type: 'required' });
  t.strictSame(choice({ mode: 'ANY', allowedFunctionNames: ['a', 'b'] }), { type: 'required' }, 'several allowed names: required');
  t.strictSame(choice({ mode: 'ANY', allowedFunctionNames: ['a'] }), { type: 'tool', name: 'a' });
  t.equal(choice({}), undefined);
  t.equal(parse(undefined, { tools: [{ googleSearch: {} }, { codeExecution: {} }] }).tools, undefined, 'built-in tools only: no canonical tools, no error');
  t.strictSame(parse(undefined, { tools: [{ functionDeclarations: [{ name: 'ping' }] }] }).tools, [{ name: 'ping', parameters: { type: 'object', properties: {} } }], 'a function without parameters');
  t.strictSame(parse(undefined, { systemInstruction: { parts: [{ text: 'Be brief.' }] } }).system, [{ type: 'text', text: 'Be brief.' }], 'systemInstruction without a role');
});

t.test('parseRequest: ids Gemini sent are kept; functionResponse pairs by id, else by name (made-up ids first, oldest first)', async (t) => {
  const req = geminiCodec.parseRequest({
    contents: [
      { role: 'model', parts: [{ functionCall: { id: 'fc-a', name: 'lookup', args: { q: 1 } } }, { functionCall: { name: 'lookup', args: {} } }, { functionCall: { name: 'other' } }] },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'other', response: { error: 'timeout' } } },
          { functionResponse: { name: 'lookup', response: { output: { rows: 2 } } } },
          { functionResponse: { id: 'fc-a', name: 'lookup', response: {} } },
          { functionResponse: { name: 'orphan', response: { output: 'x' } } },
        ],
      },
      { role: 'model', parts: [{ functionCall: { id: 'x9', name: 'solo', args: {} } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'solo', response: { output: 'done' } } }] },
    ],
  });
  t.strictSame(req.messages, [
    {
      role: 'assistant',
      content: [
        { type: 'tool_call', id: 'fc-a', name: 'lookup', arguments: '{"q":1}' },
        { type: 'tool_call', id: 'call_1', name: 'lookup', arguments: '{}' },
        { type: 'tool_call', id: 'call_2', name: 'other', arguments: '{}' },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', callId: 'call_2', name: 'other', content: [{ type: 'text', text: 'timeout' }], isError: true },
        { type: 'tool_result', callId: 'call_1', name: 'lookup', content: [{ type: 'text', text: '{"rows":2}' }] },
        { type: 'tool_result', callId: 'fc-a', name: 'lookup', content: [{ type: 'text', text: '{}' }] },
        { type: 'tool_result', callId: 'orphan', name: 'orphan', content: [{ type: 'text', text: 'x' }] },
      ],
    },
    { role: 'assistant', content: [{ type: 'tool_call', id: 'x9', name: 'solo', arguments: '{}' }] },
    { role: 'user', content: [{ type: 'tool_result', callId: 'x9', name: 'solo', content: [{ type: 'text', text: 'done' }] }] },
  ]);
});

t.test('buildRequest: tool results, arguments, media and dropped parts', async (t) => {
  const req: CanonicalRequest = {
    model: 'x',
    stream: false,
    system: [{ type: 'text', text: 'sys' }, { type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } }],
    messages: [
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: '', opaque: 'enc', redacted: true },
          { type: 'reasoning', text: 'thinking', signature: 'sig-1', origin: 'gemini' },
          { type: 'reasoning', text: 'foreign', signature: 'sig-anthropic', origin: 'anthropic' },
          { type: 'text', text: 'Calling.' },
          { type: 'tool_call', id: 'toolu_1', name: 'search', arguments: '{"q": "tollgate"}' },
          { type: 'tool_call', id: 'toolu_2', name: 'noop', arguments: '' },
          { type: 'tool_call', id: 'toolu_3', name: 'broken', arguments: '{"q": "trunc' },
          { type: 'tool_call', id: 'toolu_4', name: 'list', arguments: '[1,2]' },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', callId: 'toolu_1', content: [{ type: 'text', text: 'line 1' }, { type: 'text', text: 'line 2' }] },
          { type: 'tool_result', callId: 'toolu_2', content: [{ type: 'text', text: '{"ok":true}' }] },
          { type: 'tool_result', callId: 'toolu_3', name: 'broken', content: [{ type: 'text', text: 'bad arguments' }], isError: true },
          { type: 'tool_result', callId: 'toolu_4', content: [{ type: 'text', text: '[3,4]' }] },
          { type: 'tool_result', callId: 'unknown', content: [] },
          { type: 'image', source: { kind: 'url', url: 'data:image/jpeg;base64,/9j/4AAQ' } },
          { type: 'image', source: { kind: 'url', url: 'https://example.com/b.png' } },
          { type: 'file', source: { kind: 'file_id', id: 'files/abc' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'reasoning', text: '', redacted: true }] },
    ],
    parallelToolCalls: false,
    user: 'u-1',
    metadata: { team: 'a' },
    responseFormat: { type: 'json_object' },
    toolChoice: { type: 'none' },
  };
  const body = build(req, 'gemini-2.0-flash').json;
  t.strictSame(body, {
    contents: [
      {
        role: 'model',
        parts: [
          { text: 'thinking', thought: true, thoughtSignature: 'sig-1' },
          { text: 'foreign', thought: true },
          { text: 'Calling.' },
          { functionCall: { id: 'toolu_1', name: 'search', args: { q: 'tollgate' } } },
          { functionCall: { id: 'toolu_2', name: 'noop', args: {} } },
          { functionCall: { id: 'toolu_3', name: 'broken', args: {} } },
          { functionCall: { id: 'toolu_4', name: 'list', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'toolu_1', name: 'search', response: { output: 'line 1\nline 2' } } },
          { functionResponse: { id: 'toolu_2', name: 'noop', response: { ok: true } } },
          { functionResponse: { id: 'toolu_3', name: 'broken', response: { error: 'bad arguments' } } },
          { functionResponse: { id: 'toolu_4', name: 'list', response: { output: '[3,4]' } } },
          { functionResponse: { id: 'unknown', name: 'unknown', response: { output: '' } } },
          { inlineData: { mimeType: 'image/jpeg', data: '/9j/4AAQ' } },
          { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/b.png' } },
          { fileData: { fileUri: 'files/abc' } },
        ],
      },
    ],
    systemInstruction: { parts: [{ text: 'sys' }] },
    generationConfig: { responseMimeType: 'application/json' },
  }, 'redacted reasoning, an empty message, system media, user/metadata/parallelToolCalls and a toolChoice without tools are not sent; another family\'s signature is not sent; a URL image says its type');

  const withTools = build({ ...req, tools: [{ name: 'search', parameters: { type: 'object' }, strict: true }] }, 'gemini-2.0-flash').json;
  t.strictSame(withTools.tools, [{ functionDeclarations: [{ name: 'search', parametersJsonSchema: { type: 'object' } }] }]);
  t.strictSame(withTools.toolConfig, { functionCallingConfig: { mode: 'NONE' } });
  for (const [choice, cfg] of [
    [{ type: 'auto' }, { mode: 'AUTO' }],
    [{ type: 'required' }, { mode: 'ANY' }],
    [{ type: 'tool', name: 'search' }, { mode: 'ANY', allowedFunctionNames: ['search'] }],
  ] as const) {
    t.strictSame(build({ ...req, tools: [{ name: 'search', parameters: {} }], toolChoice: choice }).json.toolConfig, { functionCallingConfig: cfg }, choice.type);
  }
});

t.test('buildRequest: base URL path, custom auth header, no auth', async (t) => {
  const req: CanonicalRequest = { model: '', stream: true, system: [], messages: [] };
  const proxy = cfg.providers.proxy!;
  const up = geminiCodec.buildRequest(req, { providerId: 'proxy', provider: proxy, modelId: 'gemini-2.5-flash', model: null });
  t.equal(up.path, '/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  t.equal(up.headers.authorization, 'Bearer k2', 'an Authorization header carries a bearer token');
  t.notOk('x-goog-api-key' in up.headers);
  t.strictSame(wireJson(up.body), { contents: [] });

  const open = parseConfig({ providers: { local: { group: 'free', format: 'gemini', base_url: 'http://127.0.0.1:9000/v1beta' } } }, {}).providers.local!;
  const r2 = geminiCodec.buildRequest(req, { providerId: 'local', provider: open, modelId: 'm', model: null });
  t.equal(r2.path, '/v1beta/models/m:streamGenerateContent?alt=sse');
  t.notOk('x-goog-api-key' in r2.headers || 'authorization' in r2.headers, 'auth none: no key header');
});

t.test('parseRequest: malformed bodies are TOLLGATE_ERR_INVALID_REQUEST with the offending param', async (t) => {
  const cases: [unknown, string | undefined][] = [
    [null, undefined],
    ['contents', undefined],
    [[], undefined],
    [{}, 'contents'],
    [{ contents: 'hi' }, 'contents'],
    [{ contents: ['hi'] }, 'contents[0]'],
    [{ contents: [{ role: 'user' }] }, 'contents[0].parts'],
    [{ contents: [{ role: 'system', parts: [] }] }, 'contents[0].role'],
    [{ contents: [{ parts: [{ text: 'a' }, 'b'] }] }, 'contents[0].parts[1]'],
    [{ contents: [{ parts: [{ inlineData: { mimeType: 'image/png' } }] }] }, 'contents[0].parts[0].inlineData'],
    [{ contents: [{ parts: [{ fileData: { mimeType: 'image/png' } }] }] }, 'contents[0].parts[0].fileData'],
    [{ contents: [{ role: 'model', parts: [{ functionCall: { args: {} } }] }] }, 'contents[0].parts[0].functionCall.name'],
    [{ contents: [{ role: 'model', parts: [{ functionCall: { name: 'f', args: '{}' } }] }] }, 'contents[0].parts[0].functionCall.args'],
    [{ contents: [{ parts: [{ functionResponse: { response: {} } }] }] }, 'contents[0].parts[0].functionResponse.name'],
    [{ contents: [{ parts: [{ functionResponse: { name: 'f', response: 'ok' } }] }] }, 'contents[0].parts[0].functionResponse.response'],
    [{ contents: [], systemInstruction: 42 }, 'systemInstruction'],
    [{ contents: [], tools: {} }, 'tools'],
    [{ contents: [], tools: [{ functionDeclarations: [{ description: 'x' }] }] }, 'tools[0].functionDeclarations[0].name'],
    [{ contents: [], toolConfig: { functionCallingConfig: { mode: 'SOMETIMES' } } }, 'toolConfig.functionCallingConfig.mode'],
    [{ contents: [], generationConfig: [] }, 'generationConfig'],
    [{ contents: [], generationConfig: { temperature: 'hot' } }, 'generationConfig.temperature'],
    [{ contents: [], generationConfig: { stopSequences: 'END' } }, 'generationConfig.stopSequences'],
    [{ contents: [], generationConfig: { thinkingConfig: { thinkingBudget: -2 } } }, 'generationConfig.thinkingConfig.thinkingBudget'],
    [{ contents: [], generationConfig: { thinkingConfig: { thinkingLevel: 'extreme' } } }, 'generationConfig.thinkingConfig.thinkingLevel'],
  ];
  for (const [body, param] of cases) {
    try {
      geminiCodec.parseRequest(body);
      t.fail(`accepted ${JSON.stringify(body)}`);
    } catch (err) {
      t.ok(err instanceof TollgateError && err.code === 'TOLLGATE_ERR_INVALID_REQUEST', `${JSON.stringify(body)} -> INVALID_REQUEST`);
      t.equal((err as TollgateError).param, param, `${JSON.stringify(body)} -> param ${param}`);
    }
  }
  t.strictSame(geminiCodec.parseRequest({ contents: [] }), { model: '', system: [], messages: [], stream: false }, 'the smallest valid body; model and stream come from the URL');
});
