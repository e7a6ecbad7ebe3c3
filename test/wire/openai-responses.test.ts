// The `openai-responses` codec, whole requests and answers: client bodies -> canonical, canonical -> upstream
// request, upstream answers -> canonical -> client answers, and usage in the five buckets (DESIGN.md decision 4).
// Fixtures are shaped exactly like Responses API payloads; expected values are written out by hand.

import { readFileSync } from 'node:fs';
import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import type { Target } from '../../src/wire/codec.js';
import { renderUsage, responsesCodec, responsesUsage } from '../../src/wire/openai-responses/index.js';
import { TollgateError } from '../../src/core/errors.js';
import type { CanonicalRequest, CanonicalResponse, StopReason } from '../../src/wire/canonical.js';
import { totalTokens } from '../../src/ledger/types.js';
import { wireJson } from '../helpers/wire.js';

const fixture = (name: string) => new URL(`../fixtures/openai-responses/${name}`, import.meta.url);
const json = (name: string) => JSON.parse(readFileSync(fixture(name), 'utf8')) as Record<string, unknown>;

// The exchange in response-reasoning-tool-call.json, by hand.
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
// input_tokens 2143 includes 1920 cached -> 223 uncached; output_tokens 310 includes 256 reasoning -> 54.
const USAGE = { input: 223, cached: 1920, cacheWrite: null, output: 54, reasoning: 256 };

const cfg = parseConfig(
  {
    providers: {
      oai: {
        group: 'paid',
        format: 'openai-responses',
        base_url: 'https://api.openai.com/v1/',
        auth: { type: 'api_key', key: 'sk-test' },
        headers: { 'OpenAI-Organization': 'org-1' },
        models: { 'o4-mini': { capabilities: ['reasoning', 'tools'] }, 'gpt-4.1': { capabilities: ['vision', 'tools'] } },
        allow_unlisted_models: true,
      },
    },
  },
  {},
);
const provider = cfg.providers.oai!;
const target = (modelId: string): Target => ({ providerId: 'oai', provider, modelId, model: provider.models[modelId] ?? null });
const built = (req: CanonicalRequest, modelId: string) => {
  const up = responsesCodec.buildRequest(req, target(modelId));
  return { ...up, json: wireJson(up.body) as Record<string, unknown> };
};
const canon = (extra: Partial<CanonicalRequest> = {}): CanonicalRequest => ({ model: 'm', system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: false, ...extra });

t.test('usage: cached out of input_tokens, reasoning out of output_tokens', async (t) => {
  const body = json('response-reasoning-tool-call.json') as { usage: Record<string, unknown> & { total_tokens: number } };
  const u = responsesUsage(body.usage);
  t.strictSame(u, USAGE);
  t.equal(totalTokens(u!), 2453, 'the buckets add up to total_tokens: nothing counted twice');
  t.equal(body.usage.total_tokens, 2453);
  t.strictSame(renderUsage(u!), body.usage, 'rendered back by adding up: the wire object of the fixture');
});

t.test('usage: missing details are null buckets, reported zeros stay zeros, garbage is null', async (t) => {
  t.strictSame(responsesUsage({ input_tokens: 42, output_tokens: 10, total_tokens: 52 }), { input: 42, cached: null, cacheWrite: null, output: 10, reasoning: null });
  t.strictSame(responsesUsage({ input_tokens: 42, output_tokens: 10, input_tokens_details: null, output_tokens_details: {} }), { input: 42, cached: null, cacheWrite: null, output: 10, reasoning: null });
  t.strictSame(
    responsesUsage({ input_tokens: 19, input_tokens_details: { cached_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 } }),
    { input: 19, cached: 0, cacheWrite: null, output: 2, reasoning: 0 },
  );
  t.strictSame(responsesUsage({ output_tokens: 7 }), { input: null, cached: null, cacheWrite: null, output: 7, reasoning: null });
  t.strictSame(
    responsesUsage({ input_tokens: 10, input_tokens_details: { cached_tokens: 12 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 5 } }),
    { input: 0, cached: 12, cacheWrite: null, output: 0, reasoning: 5 },
    'inconsistent numbers never make a bucket negative',
  );
  for (const raw of [undefined, null, 42, 'usage', [], {}, { total_tokens: 5 }, { input_tokens: 'ten' }, { input_tokens: -1, output_tokens: NaN }]) {
    t.equal(responsesUsage(raw), null, JSON.stringify(raw) ?? String(raw));
  }
  t.strictSame(
    renderUsage({ input: 100, cached: null, cacheWrite: 50, output: 20, reasoning: null }),
    { input_tokens: 150, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 170 },
    'cache writes count as input; unreported buckets are written as 0',
  );
});

t.test('parseRequest: instructions, developer message, images, sampling, user and metadata', async (t) => {
  const req = responsesCodec.parseRequest(json('request-instructions-images.json'));
  t.strictSame(req, {
    model: 'openai/gpt-4.1',
    system: [
      { type: 'text', text: 'You are a careful art critic. Answer in two sentences.' },
      { type: 'text', text: "Never guess the painter's name." },
    ],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare these two paintings.' },
          {
            type: 'image',
            source: { kind: 'url', url: 'https://upload.wikimedia.org/wikipedia/commons/thumb/e/ea/Van_Gogh_-_Starry_Night_-_Google_Art_Project.jpg/1280px-Van_Gogh_-_Starry_Night_-_Google_Art_Project.jpg' },
            detail: 'high',
          },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==' }, detail: 'auto' },
          { type: 'image', source: { kind: 'file_id', id: 'file-7Xk2PqRt9LmN3vB8cD1eF4', origin: 'openai-responses' }, detail: 'low' },
        ],
      },
    ],
    stream: false,
    maxTokens: 300,
    temperature: 0.4,
    topP: 0.9,
    user: 'user-1842',
    metadata: { session: 's-77', attempt: '2' },
    unmapped: ['store'],
  });
});

t.test('parseRequest: input_file as a PDF data URL, a file id and a URL', async (t) => {
  const req = responsesCodec.parseRequest(json('request-pdf.json'));
  t.strictSame(req.messages, [
    {
      role: 'user',
      content: [
        { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0xLjQKJcfsj6IKNSAwIG9iago8PC9MZW5ndGggNiAwIFI+PgpzdHJlYW0K' }, filename: 'invoice-0042.pdf' },
        { type: 'file', source: { kind: 'file_id', id: 'file-Bq8Zt3LmX2wV9rN6kP4yH1', origin: 'openai-responses' } },
        { type: 'file', source: { kind: 'url', url: 'https://www.berkshirehathaway.com/letters/2024ltr.pdf' } },
        { type: 'text', text: 'What is the total on the invoice, and does the letter mention it?' },
      ],
    },
  ]);
  t.strictSame(req.system, []);
  const bare = responsesCodec.parseRequest({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_file', filename: 'a.PDF', file_data: 'JVBERi0x' }] }] });
  t.strictSame(bare.messages[0]!.content, [{ type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0x' }, filename: 'a.PDF' }], 'bare base64: media type from the file name');
});

const TOOL_HISTORY_MESSAGES = [
  { role: 'user', content: [{ type: 'text', text: "What's the weather in Paris right now?" }] },
  {
    role: 'assistant',
    content: [
      {
        type: 'reasoning',
        text: '**Deciding on a tool call**\n\nThe user wants the current weather in Paris.\n\n**Choosing units**\n\nParis uses Celsius.',
        opaque: ENVELOPE,
        origin: 'openai-responses',
      },
      { type: 'text', text: TEXT },
      { type: 'tool_call', id: CALL, name: 'get_weather', arguments: ARGS },
      { type: 'tool_call', id: 'call_Hb7nW2qZ5tX9mK3vL8pR4sYd', name: 'get_air_quality', arguments: '{"city":"Paris"}' },
    ],
  },
  {
    role: 'user',
    content: [
      // The name comes from the function_call each output answers (function_call_output carries none).
      { type: 'tool_result', callId: CALL, name: 'get_weather', content: [{ type: 'text', text: '{"temperature":18,"unit":"celsius","conditions":"light rain"}' }] },
      {
        type: 'tool_result',
        callId: 'call_Hb7nW2qZ5tX9mK3vL8pR4sYd',
        name: 'get_air_quality',
        content: [
          { type: 'text', text: 'AQI 42 (good). Map attached.' },
          { type: 'image', source: { kind: 'url', url: 'https://example.com/aqi/paris.png' }, detail: 'low' },
        ],
      },
    ],
  },
  { role: 'user', content: [{ type: 'text', text: 'Should I take an umbrella?' }] },
];
const WEATHER_PARAMS = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
};

t.test('parseRequest: function_call / function_call_output / reasoning history, tools, tool_choice, reasoning', async (t) => {
  const req = responsesCodec.parseRequest(json('request-tool-history.json'));
  t.strictSame(req, {
    model: 'openai/o4-mini',
    system: [{ type: 'text', text: 'You are a weather assistant. Call get_weather for current conditions.' }],
    messages: TOOL_HISTORY_MESSAGES,
    stream: true,
    tools: [
      { name: 'get_weather', parameters: WEATHER_PARAMS, description: 'Get the current weather for a city', strict: true },
      { name: 'get_air_quality', parameters: { type: 'object', properties: {} } },
    ],
    builtinTools: [{ type: 'web_search' }],
    toolChoice: { type: 'tool', name: 'get_weather' },
    parallelToolCalls: false,
    thinking: { kind: 'level', level: 'high' },
    includeReasoning: true,
  });
});

t.test('parseRequest: text.format json_schema, input string, reasoning effort, safety_identifier', async (t) => {
  const req = responsesCodec.parseRequest(json('request-json-schema.json'));
  t.strictSame(req, {
    model: 'openai/gpt-5-mini',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Extract the event: Alice and Bob meet for lunch on Friday.' }] }],
    stream: false,
    responseFormat: {
      type: 'json_schema',
      name: 'calendar_event',
      schema: {
        type: 'object',
        properties: { name: { type: 'string' }, date: { type: 'string' }, participants: { type: 'array', items: { type: 'string' } } },
        required: ['name', 'date', 'participants'],
        additionalProperties: false,
      },
      strict: true,
    },
    thinking: { kind: 'level', level: 'minimal' },
    user: 'hashed-user-9f2c',
    unmapped: ['text.verbosity'],
  });
});

t.test('parseRequest: tool_choice forms, reasoning forms, text formats', async (t) => {
  const tools = [
    { type: 'function', name: 'a', parameters: { type: 'object' } },
    { type: 'function', name: 'b', parameters: { type: 'object' } },
  ];
  const parse = (extra: Record<string, unknown>) => responsesCodec.parseRequest({ model: 'm', input: 'x', tools, ...extra });
  t.strictSame(parse({ tool_choice: 'required' }).toolChoice, { type: 'required' });
  t.strictSame(parse({ tool_choice: 'none' }).toolChoice, { type: 'none' });
  t.strictSame(parse({ tool_choice: 'auto' }).toolChoice, { type: 'auto' });
  const allowed = parse({ tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'b' }] } });
  t.strictSame(allowed.toolChoice, { type: 'required' }, 'allowed_tools keeps its mode');
  t.strictSame(allowed.tools!.map((x) => x.name), ['b'], 'and only the allowed tools');
  t.equal(parse({ tool_choice: { type: 'web_search_preview' } }).toolChoice, undefined, 'forcing web search without the tool: no choice');
  const search = responsesCodec.parseRequest({ model: 'm', input: 'x', tools: [{ type: 'web_search_preview' }], tool_choice: { type: 'web_search_preview' } });
  t.strictSame([search.builtinTools, search.toolChoice, search.tools], [[{ type: 'web_search' }], { type: 'builtin', tool: 'web_search' }, undefined], 'forcing the web search tool forces the built-in search');
  t.throws(() => parse({ tool_choice: { type: 'file_search' } }), { code: 'TOLLGATE_ERR_NOT_SUPPORTED', param: 'tool_choice' }, 'forcing a hosted tool with no equivalent is a 400');
  t.equal(responsesCodec.parseRequest({ model: 'm', input: 'x', tools: [{ type: 'web_search' }], tool_choice: 'required' }).tools, undefined, 'only hosted tools: no function tools');
  t.equal(responsesCodec.parseRequest({ model: 'm', input: 'x', tools: [{ type: 'web_search' }], tool_choice: 'required' }).toolChoice, undefined, 'and no function choice');
  t.strictSame(responsesCodec.parseRequest({ model: 'm', input: 'x', tools: [{ type: 'file_search', vector_store_ids: ['vs'] }, { type: 'mcp' }] }).unmapped, ['tools.file_search', 'tools.mcp'], 'hosted tools with no equivalent are listed');

  const r = (reasoning: unknown) => responsesCodec.parseRequest({ model: 'm', input: 'x', reasoning });
  for (const effort of ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const) t.strictSame(r({ effort }).thinking, { kind: 'level', level: effort }, effort);
  t.equal(r({ effort: 'low' }).includeReasoning, undefined, 'no summary asked: includeReasoning unset');
  t.equal(r({ summary: 'detailed' }).includeReasoning, true);
  t.equal(r({ summary: 'detailed' }).thinking, undefined);
  t.equal(r({ effort: null, summary: null }).thinking, undefined);
  t.equal(r({ generate_summary: 'concise' }).includeReasoning, true, 'the deprecated spelling');

  const f = (format: unknown) => responsesCodec.parseRequest({ model: 'm', input: 'x', text: { format } }).responseFormat;
  t.strictSame(f({ type: 'text' }), { type: 'text' });
  t.strictSame(f({ type: 'json_object' }), { type: 'json_object' });
  t.strictSame(f({ type: 'json_schema', name: 'n', schema: { type: 'object' } }), { type: 'json_schema', name: 'n', schema: { type: 'object' } });
});

t.test('parseRequest: a (level) suffix on the model is removed and wins over reasoning.effort', async (t) => {
  const req = responsesCodec.parseRequest({ model: 'openai/o4-mini(low)', input: 'x', reasoning: { effort: 'high', summary: 'auto' } });
  t.equal(req.model, 'openai/o4-mini');
  t.strictSame(req.thinking, { kind: 'level', level: 'low' });
  t.equal(req.includeReasoning, true);
  t.strictSame(responsesCodec.parseRequest({ model: 'openai/o4-mini(8000)', input: 'x' }).thinking, { kind: 'budget', tokens: 8000 });
  const notASuffix = responsesCodec.parseRequest({ model: 'openai/model(v2)', input: 'x' });
  t.equal(notASuffix.model, 'openai/model(v2)', 'parentheses that are not a level stay in the name');
  t.equal(notASuffix.thinking, undefined);
});

t.test('parseRequest: assistant messages, skipped items, merged turns', async (t) => {
  const req = responsesCodec.parseRequest({
    model: 'm',
    input: [
      { type: 'message', role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
      { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] },
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 'x', tools: [] },
      { role: 'system', content: [{ type: 'input_text', text: 'sys' }] },
      { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] },
    ],
  });
  t.strictSame(req.messages, [
    { role: 'user', content: [{ type: 'text', text: 'one' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'two' }, { type: 'text', text: 'no' }] },
  ], 'consecutive assistant items merge; an empty reasoning item, unknown items and a user message of unknown parts drop');
  t.strictSame(req.system, [{ type: 'text', text: 'sys' }]);
});

t.test('parseRequest: malformed bodies are TOLLGATE_ERR_INVALID_REQUEST naming the param', async (t) => {
  const bad: [unknown, string | undefined][] = [
    [null, undefined],
    [[], undefined],
    ['{"model":"m"}', undefined],
    [{ input: 'x' }, 'model'],
    [{ model: 42, input: 'x' }, 'model'],
    [{ model: '', input: 'x' }, 'model'],
    [{ model: 'm' }, 'input'],
    [{ model: 'm', input: 42 }, 'input'],
    [{ model: 'm', input: { role: 'user', content: 'x' } }, 'input'],
    [{ model: 'm', input: 'x', previous_response_id: 'resp_123' }, 'previous_response_id'],
    [{ model: 'm', input: 'x', conversation: 'conv_1' }, 'conversation'],
    [{ model: 'm', input: ['x'] }, 'input[0]'],
    [{ model: 'm', input: [{ role: 'user', content: 'a' }, 42] }, 'input[1]'],
    [{ model: 'm', input: [{ role: 'tool', content: 'a' }] }, 'input[0].role'],
    [{ model: 'm', input: [{ role: 'user', content: 42 }] }, 'input[0].content'],
    [{ model: 'm', input: [{ role: 'user', content: [{ type: 'input_text' }] }] }, 'input[0].content[0].text'],
    [{ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', detail: 'auto' }] }] }, 'input[0].content[0]'],
    [{ model: 'm', input: [{ role: 'user', content: [{ type: 'input_file' }] }] }, 'input[0].content[0]'],
    [{ model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
    [{ model: 'm', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: {} }] }, 'input[0].arguments'],
    [{ model: 'm', input: [{ type: 'function_call_output', output: 'x' }] }, 'input[0].call_id'],
    [{ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
    [{ model: 'm', input: 'x', tools: {} }, 'tools'],
    [{ model: 'm', input: 'x', tools: [{ type: 'function' }] }, 'tools[0].name'],
    [{ model: 'm', input: 'x', tool_choice: 'sometimes' }, 'tool_choice'],
    [{ model: 'm', input: 'x', reasoning: { effort: 'extreme' } }, 'reasoning.effort'],
    [{ model: 'm', input: 'x', temperature: '0.5' }, 'temperature'],
    [{ model: 'm', input: 'x', max_output_tokens: '100' }, 'max_output_tokens'],
    [{ model: 'm', input: 'x', text: { format: { type: 'json_schema', schema: {} } } }, 'text.format.name'],
    [{ model: 'm', input: 'x', text: { format: { type: 'yaml' } } }, 'text.format.type'],
  ];
  for (const [body, param] of bad) {
    let err: unknown;
    try {
      responsesCodec.parseRequest(body);
    } catch (e) {
      err = e;
    }
    const label = JSON.stringify(body);
    t.ok(err instanceof TollgateError, `${label} throws a TollgateError`);
    t.equal((err as TollgateError).code, 'TOLLGATE_ERR_INVALID_REQUEST', label);
    t.equal((err as TollgateError).status, 400, label);
    t.equal((err as TollgateError).param, param, `${label}: param ${param}`);
  }
  t.match(
    (() => {
      try {
        responsesCodec.parseRequest({ model: 'm', input: 'x', previous_response_id: 'resp_1' });
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    })(),
    /stateless.*send the whole conversation/,
    'the message says why and what to do instead',
  );
  t.doesNotThrow(() => responsesCodec.parseRequest({ model: 'm', input: 'x', previous_response_id: null, store: true, include: ['x'] }), 'null previous_response_id is fine');
});

t.test('buildRequest: the tool-history request to a reasoning model', async (t) => {
  const up = built(responsesCodec.parseRequest(json('request-tool-history.json')), 'o4-mini');
  t.equal(up.path, '/v1/responses');
  t.strictSame(up.headers, { 'OpenAI-Organization': 'org-1', 'content-type': 'application/json', accept: 'text/event-stream', authorization: 'Bearer sk-test' });
  t.strictSame(up.json, {
    model: 'o4-mini',
    instructions: 'You are a weather assistant. Call get_weather for current conditions.',
    input: [
      { role: 'user', content: [{ type: 'input_text', text: "What's the weather in Paris right now?" }] },
      {
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: '**Deciding on a tool call**\n\nThe user wants the current weather in Paris.\n\n**Choosing units**\n\nParis uses Celsius.' }],
        encrypted_content: ENC,
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: TEXT }] },
      { type: 'function_call', call_id: CALL, name: 'get_weather', arguments: ARGS },
      { type: 'function_call', call_id: 'call_Hb7nW2qZ5tX9mK3vL8pR4sYd', name: 'get_air_quality', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: CALL, output: '{"temperature":18,"unit":"celsius","conditions":"light rain"}' },
      {
        type: 'function_call_output',
        call_id: 'call_Hb7nW2qZ5tX9mK3vL8pR4sYd',
        output: [
          { type: 'input_text', text: 'AQI 42 (good). Map attached.' },
          { type: 'input_image', image_url: 'https://example.com/aqi/paris.png', detail: 'low' },
        ],
      },
      { role: 'user', content: [{ type: 'input_text', text: 'Should I take an umbrella?' }] },
    ],
    tools: [
      { type: 'function', name: 'get_weather', description: 'Get the current weather for a city', parameters: WEATHER_PARAMS, strict: true },
      { type: 'function', name: 'get_air_quality', parameters: { type: 'object', properties: {} }, strict: false },
      { type: 'web_search' },
    ],
    tool_choice: { type: 'function', name: 'get_weather' },
    parallel_tool_calls: false,
    reasoning: { effort: 'high', summary: 'auto' },
    include: ['reasoning.encrypted_content'],
    stream: true,
    store: false,
  });
});

t.test('buildRequest: instructions, images, sampling to a model without reasoning', async (t) => {
  const up = built(responsesCodec.parseRequest(json('request-instructions-images.json')), 'gpt-4.1');
  t.equal(up.headers.accept, 'application/json');
  t.strictSame(up.json, {
    model: 'gpt-4.1',
    instructions: "You are a careful art critic. Answer in two sentences.\n\nNever guess the painter's name.",
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Compare these two paintings.' },
          { type: 'input_image', image_url: 'https://upload.wikimedia.org/wikipedia/commons/thumb/e/ea/Van_Gogh_-_Starry_Night_-_Google_Art_Project.jpg/1280px-Van_Gogh_-_Starry_Night_-_Google_Art_Project.jpg', detail: 'high' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', detail: 'auto' },
          { type: 'input_image', file_id: 'file-7Xk2PqRt9LmN3vB8cD1eF4', detail: 'low' },
        ],
      },
    ],
    max_output_tokens: 300,
    temperature: 0.4,
    top_p: 0.9,
    stream: false,
    store: false,
    user: 'user-1842',
    metadata: { session: 's-77', attempt: '2' },
  });
});

t.test('buildRequest: input_file parts, json_schema format', async (t) => {
  const pdf = built(responsesCodec.parseRequest(json('request-pdf.json')), 'gpt-4.1');
  t.strictSame(pdf.json.input, [
    {
      role: 'user',
      content: [
        { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0xLjQKJcfsj6IKNSAwIG9iago8PC9MZW5ndGggNiAwIFI+PgpzdHJlYW0K', filename: 'invoice-0042.pdf' },
        { type: 'input_file', file_id: 'file-Bq8Zt3LmX2wV9rN6kP4yH1' },
        { type: 'input_file', file_url: 'https://www.berkshirehathaway.com/letters/2024ltr.pdf' },
        { type: 'input_text', text: 'What is the total on the invoice, and does the letter mention it?' },
      ],
    },
  ]);
  const js = built(responsesCodec.parseRequest(json('request-json-schema.json')), 'o4-mini');
  t.strictSame(js.json, {
    model: 'o4-mini',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'Extract the event: Alice and Bob meet for lunch on Friday.' }] }],
    text: {
      format: {
        type: 'json_schema',
        name: 'calendar_event',
        schema: {
          type: 'object',
          properties: { name: { type: 'string' }, date: { type: 'string' }, participants: { type: 'array', items: { type: 'string' } } },
          required: ['name', 'date', 'participants'],
          additionalProperties: false,
        },
        strict: true,
      },
    },
    reasoning: { effort: 'minimal' },
    include: ['reasoning.encrypted_content'],
    stream: false,
    store: false,
    user: 'hashed-user-9f2c',
  });
  t.strictSame(built(canon({ responseFormat: { type: 'json_object' } }), 'gpt-4.1').json.text, { format: { type: 'json_object' } });
});

t.test('buildRequest: thinking levels and budgets -> reasoning.effort (the openai family of docs/thinking.md)', async (t) => {
  const levels: [CanonicalRequest['thinking'], string | undefined][] = [
    [{ kind: 'level', level: 'none' }, 'none'],
    [{ kind: 'level', level: 'minimal' }, 'minimal'],
    [{ kind: 'level', level: 'low' }, 'low'],
    [{ kind: 'level', level: 'medium' }, 'medium'],
    [{ kind: 'level', level: 'high' }, 'high'],
    [{ kind: 'level', level: 'xhigh' }, 'xhigh'],
    [{ kind: 'level', level: 'max' }, 'max'],
    [{ kind: 'level', level: 'auto' }, undefined],
    [{ kind: 'budget', tokens: 1 }, 'low'],
    [{ kind: 'budget', tokens: 4095 }, 'low'],
    [{ kind: 'budget', tokens: 4096 }, 'medium'],
    [{ kind: 'budget', tokens: 8000 }, 'medium'],
    [{ kind: 'budget', tokens: 16383 }, 'medium'],
    [{ kind: 'budget', tokens: 16384 }, 'high'],
    [{ kind: 'budget', tokens: 100000 }, 'high'],
  ];
  for (const [thinking, effort] of levels) {
    const sent = built(canon({ thinking }), 'o4-mini').json;
    t.strictSame(sent.reasoning, effort === undefined ? undefined : { effort }, JSON.stringify(thinking));
    t.strictSame(sent.include, ['reasoning.encrypted_content'], 'a reasoning model always asks for encrypted reasoning');
  }
  t.strictSame(built(canon({ thinking: { kind: 'level', level: 'auto' }, includeReasoning: true }), 'o4-mini').json.reasoning, { summary: 'auto' }, 'auto + summaries: summary only');
  t.strictSame(built(canon({ includeReasoning: true }), 'o4-mini').json.reasoning, { summary: 'auto' });

  const listed = built(canon({ thinking: { kind: 'level', level: 'high' }, includeReasoning: true }), 'gpt-4.1').json;
  t.notOk('reasoning' in listed, 'a listed model without the reasoning capability: no reasoning field');
  t.notOk('include' in listed, 'and no include');
  const unlisted = built(canon({ thinking: { kind: 'level', level: 'high' }, includeReasoning: true }), 'unlisted-model').json;
  t.strictSame(unlisted.reasoning, { effort: 'high', summary: 'auto' }, 'an unlisted model is trusted with the reasoning the client asked for');
  t.strictSame(unlisted.include, ['reasoning.encrypted_content']);
  const plain = built(canon({ temperature: 0.3 }), 'unlisted-model').json;
  t.notOk('reasoning' in plain, 'an unlisted model asked for no reasoning gets none');
  t.notOk('include' in plain);
  t.equal(plain.temperature, 0.3);
});

t.test('buildRequest: temperature / top_p are removed for reasoning models unless the effort is none', async (t) => {
  const sampling = { temperature: 0.2, topP: 0.5 };
  const r1 = built(canon({ ...sampling, thinking: { kind: 'level', level: 'high' } }), 'o4-mini').json;
  t.notOk('temperature' in r1);
  t.notOk('top_p' in r1);
  const r2 = built(canon(sampling), 'o4-mini').json;
  t.notOk('temperature' in r2, 'no thinking given: the model default effort is not none');
  const r3 = built(canon({ ...sampling, thinking: { kind: 'level', level: 'none' } }), 'o4-mini').json;
  t.equal(r3.temperature, 0.2);
  t.equal(r3.top_p, 0.5);
  const r4 = built(canon(sampling), 'gpt-4.1').json;
  t.equal(r4.temperature, 0.2);
  t.equal(r4.top_p, 0.5);
});

t.test('buildRequest: reasoning parts go back only as this family\'s encrypted content, to a reasoning model', async (t) => {
  const theirs = `{"format":"openai-responses","encrypted_content":"enc-B"}`;
  const req = canon({
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'q' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'ours in opaque', opaque: `{"format":"openai-responses","id":"rs_1","encrypted_content":"enc-A"}` },
          { type: 'reasoning', text: '', signature: theirs },
          { type: 'reasoning', text: 'anthropic thinking', signature: 'EqQBCkgIARABGAIiQL0xJ2Vh' },
          { type: 'reasoning', text: '', opaque: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP', redacted: true },
          { type: 'reasoning', text: 'gemini thought' },
          { type: 'reasoning', text: 'tagged elsewhere', opaque: `{"format":"openai-responses","encrypted_content":"enc-C"}`, origin: 'anthropic' },
          { type: 'text', text: 'answer' },
        ],
      },
    ],
  });
  t.strictSame(built(req, 'o4-mini').json.input, [
    { role: 'user', content: [{ type: 'input_text', text: 'q' }] },
    { type: 'reasoning', summary: [{ type: 'summary_text', text: 'ours in opaque' }], encrypted_content: 'enc-A' },
    { type: 'reasoning', summary: [], encrypted_content: 'enc-B' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'answer' }] },
  ], 'ids are not sent (store: false); other families\' reasoning is dropped');
  t.strictSame(built(req, 'gpt-4.1').json.input, [
    { role: 'user', content: [{ type: 'input_text', text: 'q' }] },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'answer' }] },
  ], 'a model without reasoning gets no reasoning items');
});

t.test('buildRequest: unsupported parameters removed, tool strict explicit, auth variants', async (t) => {
  const sent = built(
    canon({
      stop: ['END'],
      seed: 7,
      topK: 40,
      presencePenalty: 0.5,
      frequencyPenalty: 0.5,
      tools: [{ name: 'f', parameters: { type: 'object' } }],
      toolChoice: { type: 'required' },
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'audio', source: { kind: 'base64', mediaType: 'audio/wav', data: 'UklGR' } }] }],
    }),
    'gpt-4.1',
  ).json;
  for (const k of ['stop', 'seed', 'top_k', 'presence_penalty', 'frequency_penalty', 'topK', 'presencePenalty']) t.notOk(k in sent, `${k} removed`);
  t.strictSame(sent.tools, [{ type: 'function', name: 'f', parameters: { type: 'object' }, strict: false }], 'strict false, never omitted');
  t.equal(sent.tool_choice, 'required');
  t.strictSame(sent.input, [{ role: 'user', content: [{ type: 'input_text', text: 'x' }] }], 'audio has no Responses input part');

  const noTools = built(canon({ toolChoice: { type: 'none' }, parallelToolCalls: true }), 'gpt-4.1').json;
  t.notOk('tool_choice' in noTools, 'no tools: no tool_choice');
  t.notOk('parallel_tool_calls' in noTools);

  const az = parseConfig({ providers: { az: { group: 'paid', format: 'openai-responses', base_url: 'https://x.example.com/openai/v1', auth: { type: 'api_key', key: 'k', header: 'api-key' } } } }, {}).providers.az!;
  const r2 = responsesCodec.buildRequest(canon(), { providerId: 'az', provider: az, modelId: 'm', model: null });
  t.equal(r2.path, '/openai/v1/responses');
  t.equal(r2.headers['api-key'], 'k', 'a custom auth header carries the bare key');
  t.notOk('authorization' in r2.headers);
  const open = parseConfig({ providers: { local: { group: 'free', format: 'openai-responses', base_url: 'http://127.0.0.1:8000' } } }, {}).providers.local!;
  const r3 = responsesCodec.buildRequest(canon(), { providerId: 'local', provider: open, modelId: 'm', model: null });
  t.equal(r3.path, '/responses');
  t.notOk('authorization' in r3.headers, 'auth none: no credentials');
});

const FIXTURE_CANONICAL: CanonicalResponse = {
  id: RID,
  model: 'o4-mini-2025-04-16',
  content: [
    { type: 'reasoning', text: SUMMARY, opaque: ENVELOPE, origin: 'openai-responses' },
    { type: 'text', text: TEXT },
    { type: 'tool_call', id: CALL, name: 'get_weather', arguments: ARGS },
  ],
  stopReason: 'tool_calls',
  usage: USAGE,
};

t.test('parseResponse: reasoning summary + message + function_call, cached and reasoning usage', async (t) => {
  t.strictSame(responsesCodec.parseResponse(json('response-reasoning-tool-call.json')), FIXTURE_CANONICAL);
});

t.test('parseResponse: stop reasons', async (t) => {
  const base = json('response-reasoning-tool-call.json');
  const output = base.output as Record<string, unknown>[];
  const noCall = output.slice(0, 2);
  const stop = (over: Record<string, unknown>) => responsesCodec.parseResponse({ ...base, ...over }).stopReason;
  t.equal(stop({}), 'tool_calls');
  t.equal(stop({ output: noCall }), 'end');
  t.equal(stop({ output: noCall, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } }), 'max_tokens');
  t.equal(stop({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } }), 'max_tokens', 'cut inside a call: max_tokens, not tool_calls');
  t.equal(stop({ output: noCall, status: 'incomplete', incomplete_details: { reason: 'content_filter' } }), 'content_filter');
  t.equal(stop({ output: noCall, status: 'failed', error: { code: 'server_error', message: 'x' } }), 'error');
  t.equal(
    stop({ output: [{ id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: "I can't help with that." }] }] }),
    'refusal',
  );
  const noUsage = responsesCodec.parseResponse({ ...base, usage: null });
  t.equal(noUsage.usage, null, 'no usage reported: null, not zeros');
  for (const garbage of [null, 'x', {}, { output: 'none' }]) {
    t.throws(() => responsesCodec.parseResponse(garbage), { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' }, JSON.stringify(garbage));
  }
});

t.test('renderResponse: the fields the SDK reads', async (t) => {
  const body = responsesCodec.renderResponse(FIXTURE_CANONICAL, 'o4-mini') as Record<string, unknown>;
  const stem = RID.slice('resp_'.length);
  t.equal(body.id, RID);
  t.equal(body.object, 'response');
  t.equal(body.status, 'completed');
  t.equal(body.model, 'o4-mini', 'the model the client asked for');
  t.equal(body.error, null);
  t.equal(body.incomplete_details, null);
  t.equal(typeof body.created_at, 'number');
  t.notOk('output_text' in body, 'output_text is computed by the SDK, not sent');
  t.strictSame(body.output, [
    { id: RS, type: 'reasoning', summary: [{ type: 'summary_text', text: SUMMARY }], encrypted_content: ENC },
    { id: `msg_${stem}_1`, type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [], text: TEXT }], role: 'assistant' },
    { id: 'fc_Qm3vT8pL2xR7kN4wY9sB1dFh', type: 'function_call', status: 'completed', arguments: ARGS, call_id: CALL, name: 'get_weather' },
  ]);
  t.strictSame(body.usage, (json('response-reasoning-tool-call.json') as { usage: unknown }).usage, 'usage adds back up to the upstream numbers');
});

t.test('renderResponse -> parseResponse round trips', async (t) => {
  const roundTrip = (res: CanonicalResponse) => responsesCodec.parseResponse(responsesCodec.renderResponse(res, res.model));
  t.strictSame(roundTrip(FIXTURE_CANONICAL), FIXTURE_CANONICAL);
  for (const stopReason of ['end', 'max_tokens', 'content_filter', 'refusal', 'error'] as StopReason[]) {
    const res: CanonicalResponse = { id: 'resp_abc', model: 'gpt-4.1', content: [{ type: 'text', text: 'Hello' }, { type: 'text', text: ' there' }], stopReason, usage: { input: 5, cached: 0, cacheWrite: null, output: 2, reasoning: 0 } };
    t.strictSame(roundTrip(res), res, stopReason);
  }
  const plain: CanonicalResponse = { id: 'resp_x', model: 'm', content: [{ type: 'reasoning', text: 'thought' }, { type: 'text', text: 'hi' }], stopReason: 'end', usage: null };
  t.strictSame(roundTrip(plain), plain, 'reasoning without encrypted content, no usage');
  t.equal(roundTrip({ ...plain, stopReason: 'stop_sequence' }).stopReason, 'end', 'no stop sequences in the Responses API: completed');
});

t.test('renderResponse: incomplete, refusal, failed, foreign ids and reasoning', async (t) => {
  const res: CanonicalResponse = { id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG', model: 'gpt-4o', content: [{ type: 'text', text: 'Once upon a' }], stopReason: 'max_tokens', usage: null };
  const inc = responsesCodec.renderResponse(res, 'gpt-4o') as Record<string, unknown> & { output: Record<string, unknown>[] };
  t.equal(inc.id, 'resp_chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG');
  t.equal(inc.status, 'incomplete');
  t.strictSame(inc.incomplete_details, { reason: 'max_output_tokens' });
  t.equal(inc.output[0]!.status, 'incomplete', 'the cut message is incomplete');
  t.equal(inc.usage, null);
  const refusal = responsesCodec.renderResponse({ ...res, stopReason: 'refusal' }, 'gpt-4o') as { output: { content: unknown[] }[] };
  t.strictSame(refusal.output[0]!.content, [{ type: 'refusal', refusal: 'Once upon a' }]);
  const failed = responsesCodec.renderResponse({ ...res, stopReason: 'error' }, 'gpt-4o') as Record<string, unknown>;
  t.equal(failed.status, 'failed');
  t.match(failed.error, { code: 'server_error', message: String });

  const foreign = responsesCodec.renderResponse(
    {
      id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'reasoning', text: 'Let me think.', signature: 'EqQBCkgIARABGAIiQL0xJ2Vh' },
        { type: 'reasoning', text: '', opaque: 'EmwKAhgBEgy3va3pzix', redacted: true },
        { type: 'text', text: 'Done.' },
      ],
      stopReason: 'end',
      usage: null,
    },
    'claude',
  ) as { output: Record<string, unknown>[] };
  t.strictSame(foreign.output, [
    { id: 'rs_msg_01XFDUDYJgAACzvnptvVoYEL_0', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Let me think.' }] },
    { id: 'msg_msg_01XFDUDYJgAACzvnptvVoYEL_1', type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'Done.' }], role: 'assistant' },
  ], "another family's signature is not sent as encrypted content; redacted thinking with no text is skipped");
});

t.test('parseRequest -> buildRequest -> the same body for a same-family history', async (t) => {
  // A client resending the fixture answer's output as history: the reasoning item goes back with its encrypted content.
  const answer = json('response-reasoning-tool-call.json');
  const req = responsesCodec.parseRequest({ model: 'openai/o4-mini', input: [{ role: 'user', content: 'Weather in Paris?' }, ...(answer.output as unknown[]), { type: 'function_call_output', call_id: CALL, output: '18C' }] });
  t.strictSame(req.messages[1], { role: 'assistant', content: FIXTURE_CANONICAL.content }, 'the output items parse to the same parts as the answer');
  const input = built(req, 'o4-mini').json.input as Record<string, unknown>[];
  t.strictSame(input[1], { type: 'reasoning', summary: [{ type: 'summary_text', text: SUMMARY }], encrypted_content: ENC });
  t.strictSame(input.at(-1), { type: 'function_call_output', call_id: CALL, output: '18C' });
});
