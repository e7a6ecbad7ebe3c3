// Every client format, through its official SDK, against an OpenAI Chat Completions upstream (format `openai`, the
// fake of test/helpers/fake-openai.ts on a real socket), streamed and not. The OpenAI Chat client is run twice: on
// the byte-for-byte fast path (src/pipeline/chat.ts: no thinking suffix) and on the translated path (the same model
// with the `(auto)` suffix, which forces the canonical pipeline and, for the `openai` thinking family, sends no
// thinking parameter: docs/thinking.md). For each: (a) the text answer arrives in the client's shape; (b) a tool
// definition and a base64 PNG reach the upstream as OpenAI `tools` and an `image_url` data URL, and the model's
// tool call comes back in the client's own shape; (c) the recorded row holds the hand-computed buckets and cost,
// the same streamed and not; (d) DeepSeek-style `reasoning_content` reaches each client as its own reasoning shape;
// (e) a `(high)` suffix reaches the upstream as `reasoning_effort: 'high'` for the reasoning model only.
// Failure paths are in to-openai-failures.test.ts.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { DEFAULT_REASONING, DEFAULT_TOOL_ARGS, DEFAULT_WORDS, fakeProvider, startFakeOpenAI, toolCallIdFor, type Received } from '../helpers/fake-openai.js';
import { argsOf, ASK_TOOL, bucketsOf, PNG, rowOf, spyFetch, TOOL, type Ask } from '../helpers/clients.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, {
  providers: {
    oai: fakeProvider(up.baseUrl, {
      models: {
        o3: { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'openai' },
        'gpt-4o': { kind: 'llm', capabilities: ['tools', 'vision'] },
        'deepseek-reasoner': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'deepseek' },
      },
    }),
  },
});

const MODEL = 'oai/o3'; // tools, vision, reasoning; thinking: openai
const PLAIN = 'oai/gpt-4o'; // tools, vision; no reasoning
const DEEPSEEK = 'oai/deepseek-reasoner'; // tools, vision, reasoning; thinking: deepseek
const TEXT = DEFAULT_WORDS.join(''); // 'Hello from the fake upstream'
const REASONING = DEFAULT_REASONING.join('');
const UPSTREAM_AUTH = 'Bearer sk-upstream-secret-123'; // fakeProvider's key
const FAKE_CREATED = 1731000000; // the fake's `created`

// Hand computation (fake-openai.ts DEFAULT_USAGE): prompt_tokens 11 of which prompt_tokens_details.cached_tokens 3,
// completion_tokens 7 of which completion_tokens_details.reasoning_tokens 2 (docs/translation.md "Usage", OpenAI
// Chat row) -> input 11 - 3 = 8, cached 3, cache write null (OpenAI has no such count), output 7 - 2 = 5,
// reasoning 2; total 8 + 3 + 5 + 2 = 18.
// Cost at fakeProvider's price (USD per 1M: input 2.5, output 10, cached 1.25; no reasoning price, so reasoning
// is billed as output), group paid so cost = list cost:
//   8 x 2.5 = 20;  3 x 1.25 = 3.75;  5 x 10 = 50;  2 x 10 = 20;  sum 93.75 per 1M tokens = 0.00009375 USD.
const PRICE = { input: 2.5, output: 10, cached: 1.25 };
const BUCKETS = [8, 3, null, 5, 2, 18];
const COST = (8 * PRICE.input + 3 * PRICE.cached + 5 * PRICE.output + 2 * PRICE.output) / 1e6;
t.equal(COST, 93.75 / 1e6, 'the cost computed by hand');

const DATA_URL = `data:image/png;base64,${PNG}`;
/** The max_tokens the Anthropic client sends (it must send one). */
const MAX_TOKENS = 1024;

interface Call {
  id: string | undefined;
  name: string;
  args: unknown;
}
interface Answer {
  text: string;
  calls: Call[];
  stop: string | null | undefined;
  usage: unknown;
  reasoning: string;
  /** The client's reasoning, block by block, in its own shape (for the order and the kind of block). */
  shape: string[];
  /** Chat only: the upstream's system_fingerprint and created, which only the byte-for-byte fast path keeps. */
  fingerprint?: string | null | undefined;
  created?: number;
  requestId: string;
}
interface Client {
  name: string;
  endpoint: string;
  ask(a: Ask): Promise<Answer>;
  stops: { end: string; tool: string };
  /** The usage the client sees for DEFAULT_USAGE, in its own conventions (docs/translation.md "Usage"). */
  usage: Record<string, unknown>;
  /** Whether the client sees the upstream tool call id. */
  keepsToolId: boolean;
}

// ------------------------------------------------------------------------------------------------ OpenAI Chat

const chatSpy = spyFetch();
const openaiChat = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: chatSpy.fetch });

/** `(auto)` forces the translated path; a model that already names a level keeps it. */
const withAuto = (model: string) => (model.endsWith(')') ? model : `${model}(auto)`);

function chatClient(path: 'fast' | 'translated'): Client {
  return {
    name: `openai chat, ${path} path (openai SDK) -> /v1/chat/completions`,
    endpoint: 'chat.completions',
    stops: { end: 'stop', tool: 'tool_calls' },
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 2 } },
    keepsToolId: true,
    async ask({ model, stream, tools }) {
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = tools
        ? [{ role: 'user', content: [{ type: 'text', text: ASK_TOOL }, { type: 'image_url', image_url: { url: DATA_URL } }] }]
        : [{ role: 'user', content: 'hi' }];
      const toolDefs: OpenAI.Chat.ChatCompletionTool[] | undefined = tools
        ? [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }]
        : undefined;
      const params = { model: path === 'fast' ? model : withAuto(model), messages, ...(toolDefs ? { tools: toolDefs } : {}) };
      if (!stream) {
        const r = await openaiChat.chat.completions.create(params);
        const msg = r.choices[0]!.message;
        const reasoning = (msg as { reasoning_content?: string }).reasoning_content ?? '';
        return {
          text: msg.content ?? '',
          calls: (msg.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ id: c.id, name: c.function.name, args: argsOf(c.function.arguments) }] : [])),
          stop: r.choices[0]!.finish_reason,
          usage: r.usage,
          reasoning,
          shape: reasoning ? ['reasoning_content'] : [],
          fingerprint: r.system_fingerprint,
          created: r.created,
          requestId: chatSpy.last.headers.get('x-request-id') ?? '',
        };
      }
      const s = await openaiChat.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
      let text = '';
      let reasoning = '';
      let stop: string | null = null;
      let usage: unknown;
      let fingerprint: string | null | undefined;
      let created: number | undefined;
      const shape: string[] = [];
      const calls = new Map<number, { id: string; name: string; args: string }>();
      for await (const c of s) {
        fingerprint ??= c.system_fingerprint;
        created ??= c.created;
        if (c.usage) usage = c.usage;
        const choice = c.choices[0];
        if (!choice) continue;
        const r = (choice.delta as { reasoning_content?: string | null }).reasoning_content ?? '';
        if (r && shape.at(-1) !== 'reasoning_content') shape.push('reasoning_content');
        if (choice.delta.content && shape.at(-1) !== 'content') shape.push('content');
        reasoning += r;
        text += choice.delta.content ?? '';
        for (const tc of choice.delta.tool_calls ?? []) {
          const call = calls.get(tc.index) ?? { id: '', name: '', args: '' };
          call.id += tc.id ?? '';
          call.name += tc.function?.name ?? '';
          call.args += tc.function?.arguments ?? '';
          calls.set(tc.index, call);
        }
        if (choice.finish_reason) stop = choice.finish_reason;
      }
      return {
        text,
        calls: [...calls.values()].map((c) => ({ id: c.id, name: c.name, args: argsOf(c.args) })),
        stop,
        usage,
        reasoning,
        shape: shape.filter((s) => s === 'reasoning_content'),
        fingerprint,
        created,
        requestId: chatSpy.last.headers.get('x-request-id') ?? '',
      };
    },
  };
}
const chatFast = chatClient('fast');
const chatTranslated = chatClient('translated');

// ------------------------------------------------------------------------------------------------ OpenAI Responses

const respSpy = spyFetch();
const openaiResp = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: respSpy.fetch });

function fromResponse(r: OpenAI.Responses.Response): Pick<Answer, 'text' | 'calls' | 'reasoning' | 'shape'> {
  const calls: Answer['calls'] = [];
  let reasoning = '';
  let text = '';
  const shape: string[] = [];
  for (const item of r.output) {
    if (item.type === 'message') for (const p of item.content) if (p.type === 'output_text') text += p.text;
    if (item.type === 'function_call') calls.push({ id: item.call_id, name: item.name, args: argsOf(item.arguments) });
    if (item.type === 'reasoning') {
      reasoning += item.summary.map((s) => s.text).join('');
      shape.push('reasoning item');
    }
    if (item.type === 'message') shape.push('message item');
  }
  return { text, calls, reasoning, shape };
}

const responses: Client = {
  name: 'openai responses (openai SDK responses.create) -> /v1/responses',
  endpoint: 'responses',
  stops: { end: 'completed', tool: 'completed' },
  usage: { input_tokens: 11, input_tokens_details: { cached_tokens: 3 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 18 },
  keepsToolId: true,
  async ask({ model, stream, tools }) {
    const input: OpenAI.Responses.ResponseInput = tools
      ? [{ role: 'user', content: [{ type: 'input_text', text: ASK_TOOL }, { type: 'input_image', image_url: DATA_URL, detail: 'auto' }] }]
      : [{ role: 'user', content: 'hi' }];
    const toolDefs: OpenAI.Responses.Tool[] | undefined = tools
      ? [{ type: 'function', name: TOOL.name, description: TOOL.description, parameters: TOOL.schema, strict: false }]
      : undefined;
    const params = { model, input, ...(toolDefs ? { tools: toolDefs } : {}) };
    if (!stream) {
      const r = await openaiResp.responses.create(params);
      const a = fromResponse(r);
      if (a.text !== r.output_text) throw new Error(`output_text ${JSON.stringify(r.output_text)} is not the text of the output items ${JSON.stringify(a.text)}`);
      return { stop: r.status, usage: r.usage, ...a, requestId: respSpy.last.headers.get('x-request-id') ?? '' };
    }
    const s = await openaiResp.responses.create({ ...params, stream: true });
    let text = '';
    let summary = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of s) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.reasoning_summary_text.delta') summary += e.delta;
      if (e.type === 'response.completed') final = e.response;
    }
    if (!final) throw new Error('no response.completed');
    const a = fromResponse(final);
    if (text !== a.text) throw new Error(`the text deltas (${JSON.stringify(text)}) do not add up to the final response (${JSON.stringify(a.text)})`);
    if (summary !== a.reasoning) throw new Error(`the summary deltas (${JSON.stringify(summary)}) do not add up to the final reasoning (${JSON.stringify(a.reasoning)})`);
    return { stop: final.status, usage: final.usage, ...a, requestId: respSpy.last.headers.get('x-request-id') ?? '' };
  },
};

// ------------------------------------------------------------------------------------------------ Anthropic

const anthSpy = spyFetch();
// An explicit timeout: without one the SDK may refuse a non-streamed request it thinks could run over 10 minutes.
const anthropicClient = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client-unused', maxRetries: 0, timeout: 60_000, fetch: anthSpy.fetch });

function fromMessage(m: Anthropic.Message, requestId: string): Answer {
  let text = '';
  let reasoning = '';
  const calls: Answer['calls'] = [];
  const shape: string[] = [];
  for (const b of m.content) {
    shape.push(b.type === 'thinking' ? `thinking (signature ${JSON.stringify(b.signature)})` : b.type);
    if (b.type === 'text') text += b.text;
    if (b.type === 'tool_use') calls.push({ id: b.id, name: b.name, args: b.input });
    if (b.type === 'thinking') reasoning += b.thinking;
  }
  return { text, calls, stop: m.stop_reason, usage: m.usage, reasoning, shape, requestId };
}

const anthropic: Client = {
  name: 'anthropic (@anthropic-ai/sdk) -> /v1/messages',
  endpoint: 'messages',
  stops: { end: 'end_turn', tool: 'tool_use' },
  // Anthropic counts input without cache reads, and output with thinking.
  usage: { input_tokens: 8, cache_read_input_tokens: 3, output_tokens: 7 },
  keepsToolId: true,
  async ask({ model, stream, tools }) {
    const messages: Anthropic.MessageParam[] = tools
      ? [{ role: 'user', content: [{ type: 'text', text: ASK_TOOL }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }]
      : [{ role: 'user', content: 'hi' }];
    const toolDefs: Anthropic.Tool[] | undefined = tools
      ? [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema as Anthropic.Tool.InputSchema }]
      : undefined;
    const params = { model, max_tokens: MAX_TOKENS, messages, ...(toolDefs ? { tools: toolDefs } : {}) };
    if (!stream) return fromMessage(await anthropicClient.messages.create(params), anthSpy.last.headers.get('x-request-id') ?? '');
    const s = anthropicClient.messages.stream(params);
    let text = '';
    let thinking = '';
    s.on('text', (d) => (text += d));
    s.on('thinking', (d) => (thinking += d));
    const a = fromMessage(await s.finalMessage(), anthSpy.last.headers.get('x-request-id') ?? '');
    if (text !== a.text) throw new Error(`the text events (${JSON.stringify(text)}) do not add up to the final message (${JSON.stringify(a.text)})`);
    if (thinking !== a.reasoning) throw new Error(`the thinking events (${JSON.stringify(thinking)}) do not add up to the final message (${JSON.stringify(a.reasoning)})`);
    return a;
  },
};

// ------------------------------------------------------------------------------------------------ Gemini

const gemSpy = spyFetch();
const genai = new GoogleGenAI({ apiKey: 'client-unused', httpOptions: { baseUrl: gw.url, fetch: gemSpy.fetch } });

interface GenResponse {
  candidates?: { content?: { parts?: { text?: string; thought?: boolean; thoughtSignature?: string; functionCall?: { id?: string; name?: string; args?: unknown } }[] }; finishReason?: string }[];
  usageMetadata?: unknown;
}

function addGemini(a: Answer, r: GenResponse): void {
  const cand = r.candidates?.[0];
  for (const p of cand?.content?.parts ?? []) {
    if (p.thought === true) {
      a.reasoning += p.text ?? '';
      if (a.shape.at(-1) !== 'thought part') a.shape.push('thought part');
    } else if (typeof p.text === 'string') a.text += p.text;
    if (p.functionCall) a.calls.push({ id: p.functionCall.id, name: p.functionCall.name ?? '', args: p.functionCall.args });
  }
  if (cand?.finishReason) a.stop = cand.finishReason;
  if (r.usageMetadata) a.usage = r.usageMetadata;
}

const gemini: Client = {
  name: 'gemini (@google/genai) -> /v1beta/models/{model}:generateContent',
  endpoint: 'generate_content',
  stops: { end: 'STOP', tool: 'STOP' },
  // Gemini counts thinking apart from candidatesTokenCount.
  usage: { promptTokenCount: 11, cachedContentTokenCount: 3, candidatesTokenCount: 5, thoughtsTokenCount: 2, totalTokenCount: 18 },
  keepsToolId: false,
  async ask({ model, stream, tools }) {
    const contents = tools ? [{ role: 'user', parts: [{ text: ASK_TOOL }, { inlineData: { mimeType: 'image/png', data: PNG } }] }] : 'hi';
    const config = tools ? { tools: [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.schema }] }] } : undefined;
    const params = { model, contents, ...(config ? { config } : {}) };
    const a: Answer = { text: '', calls: [], stop: null, usage: undefined, reasoning: '', shape: [], requestId: '' };
    if (!stream) addGemini(a, (await genai.models.generateContent(params)) as GenResponse);
    else for await (const chunk of await genai.models.generateContentStream(params)) addGemini(a, chunk as GenResponse);
    a.requestId = gemSpy.last.headers.get('x-request-id') ?? '';
    return a;
  },
};

// ------------------------------------------------------------------------------------------------ checks

function checkRow(t: Test, row: Record<string, unknown>, endpoint: string, stream: boolean, model = MODEL): void {
  t.match(row, { endpoint, provider: 'oai', provider_group: 'paid', model, requested_model: model, status: 'success', http_status: 200, error_type: '', usage_source: 'reported' }, 'row: success');
  t.equal(Boolean(row.stream), stream, 'stream flag');
  t.same(bucketsOf(row), BUCKETS, 'buckets: input 8, cached 3, cache write null, output 5, reasoning 2, total 18');
  t.equal(Number(row.cost), COST, 'cost = (8 x 2.5 + 3 x 1.25 + 5 x 10 + 2 x 10) / 1e6');
  t.equal(Number(row.list_cost), COST, 'list cost (paid group)');
}

/** The last upstream request: POST /v1/chat/completions with the provider key, the prefix removed, the stream flag. */
function checkUpstream(t: Test, stream: boolean, modelId = 'o3'): Received {
  const r = up.received.at(-1)!;
  t.equal(r.path, '/v1/chat/completions', 'upstream path');
  t.equal(r.headers.authorization, UPSTREAM_AUTH, 'the provider key as Authorization: Bearer');
  t.notOk(r.headers['x-api-key'], 'no client x-api-key forwarded');
  t.notOk(r.headers['x-goog-api-key'], 'no client x-goog-api-key forwarded');
  t.equal(r.body.model, modelId, 'provider prefix (and suffix) removed');
  t.equal(r.body.stream === true, stream, 'stream flag');
  if (stream) t.same(r.body.stream_options, { include_usage: true }, 'a stream asks for its usage');
  else t.notOk(r.body.stream_options, 'no stream_options without a stream');
  return r;
}

/** The messages' user content as a list of parts (a plain string is one text part). */
function userParts(r: Received): Record<string, unknown>[] {
  const msgs = r.body.messages as { role: string; content: unknown }[];
  const users = msgs.filter((m) => m.role === 'user');
  return users.flatMap((m) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as Record<string, unknown>[])));
}

/** What tells the two Chat paths apart: the fast path forwards the upstream's bytes (system_fingerprint, created). */
function checkChatPath(t: Test, c: Client, a: Answer): void {
  if (c === chatFast) {
    t.equal(a.fingerprint, 'fp_fake', "fast path: the upstream's own bytes (system_fingerprint kept)");
    t.equal(a.created, FAKE_CREATED, "fast path: the upstream's created");
  } else if (c === chatTranslated) {
    t.notOk(a.fingerprint, 'translated path: rendered by the gateway (no upstream system_fingerprint)');
    t.not(a.created, FAKE_CREATED, "translated path: the gateway's created");
  }
}

// ------------------------------------------------------------------------------------------------ the matrix

const CLIENTS = [chatFast, chatTranslated, responses, anthropic, gemini];

for (const c of CLIENTS) {
  t.test(c.name, async (t) => {
    const rows: Record<string, Record<string, unknown>> = {};
    for (const stream of [false, true]) {
      await t.test(stream ? 'streamed' : 'non-streamed', async (t) => {
        await t.test('(a, c) plain text: the answer, the client-side usage, the row', async (t) => {
          up.next({ kind: 'ok' });
          const a = await c.ask({ model: MODEL, stream });
          t.equal(a.text, TEXT, 'text');
          t.equal(a.stop, c.stops.end, 'stop reason');
          t.same(a.calls, [], 'no tool call');
          t.equal(a.reasoning, '', 'no reasoning');
          t.match(a.usage, c.usage, 'usage in the client format');
          checkChatPath(t, c, a);
          const r = checkUpstream(t, stream);
          t.same(userParts(r), [{ type: 'text', text: 'hi' }], 'the prompt reached the upstream');
          t.notOk('reasoning_effort' in r.body, 'no reasoning_effort without a suffix (auto sends none)');
          t.notOk('tools' in r.body, 'no tools');
          t.ok(a.requestId, 'x-request-id');
          const row = await rowOf(gw, a.requestId);
          checkRow(t, row, c.endpoint, stream);
          if (stream) t.ok(row.ttft_ms !== null && Number(row.ttft_ms) >= 0, 'a streamed row has a time to first token');
          rows[String(stream)] = row;
        });

        await t.test('(b) a tool definition and an image: OpenAI tools and image_url up, the tool call back', async (t) => {
          up.next({ kind: 'tool' });
          const a = await c.ask({ model: MODEL, stream, tools: true });
          t.same(a.calls.map((x) => ({ name: x.name, args: x.args })), [{ name: TOOL.name, args: DEFAULT_TOOL_ARGS }], 'the call in the client shape: name and parsed arguments');
          if (c.keepsToolId) t.equal(a.calls[0]?.id, toolCallIdFor(up.received.length), "the upstream's tool call id");
          t.equal(a.stop, c.stops.tool, 'stop reason of a tool call');
          t.equal(a.text, '', 'no text');
          checkChatPath(t, c, a);
          const r = checkUpstream(t, stream);
          const tools = r.body.tools as { type: string; function: Record<string, unknown> }[];
          t.equal(tools?.length, 1, 'one tool');
          t.equal(tools?.[0]?.type, 'function', 'a function tool');
          t.match(tools?.[0]?.function, { name: TOOL.name, description: TOOL.description }, 'named and described');
          t.match(tools?.[0]?.function.parameters, { type: /^object$/i, required: ['city'], properties: { city: { type: /^string$/i }, unit: { enum: ['celsius', 'fahrenheit'] } } }, 'with its parameter schema');
          const msgs = r.body.messages as { role: string }[];
          t.same(msgs.map((m) => m.role), ['user'], 'one user message');
          const parts = userParts(r);
          t.same(parts.filter((p) => p.type === 'image_url').map((p) => (p.image_url as { url: string }).url), [DATA_URL], 'the image as an image_url data URL');
          t.same(parts.filter((p) => p.type === 'text'), [{ type: 'text', text: ASK_TOOL }], 'the question as text');
          checkRow(t, await rowOf(gw, a.requestId), c.endpoint, stream);
        });

        await t.test('(d) reasoning_content (DeepSeek): the client gets it as its own reasoning shape', async (t) => {
          up.next({ kind: 'reasoning' });
          const a = await c.ask({ model: DEEPSEEK, stream });
          t.equal(a.text, TEXT, 'the reasoning is not in the answer text');
          t.equal(a.stop, c.stops.end);
          t.equal(a.reasoning, REASONING, 'the reasoning, whole');
          if (c === chatFast) t.same(a.shape, ['reasoning_content'], 'fast path: reasoning_content, passed through as it came');
          else if (c === chatTranslated) t.same(a.shape, ['reasoning_content'], 'translated path: rendered as reasoning_content');
          else if (c === responses) t.same(a.shape, ['reasoning item', 'message item'], 'a reasoning item (summary text) before the message');
          else if (c === anthropic) t.same(a.shape, ['thinking (signature "")', 'text'], 'a thinking block (no signature: DeepSeek has none) before the text');
          else t.same(a.shape, ['thought part'], 'a thought part');
          checkChatPath(t, c, a);
          const r = checkUpstream(t, stream, 'deepseek-reasoner');
          if (c !== chatTranslated) t.notOk('thinking' in r.body || 'reasoning_effort' in r.body, 'no thinking parameter without a suffix');
          else t.same(r.body.thinking, { type: 'enabled' }, 'deepseek (auto): thinking enabled, no effort (docs/thinking.md)');
          checkRow(t, await rowOf(gw, a.requestId), c.endpoint, stream, DEEPSEEK);
        });

        await t.test('(e) a thinking suffix (high): reasoning_effort high for the reasoning model, nothing for the other', async (t) => {
          up.next({ kind: 'ok' });
          const a = await c.ask({ model: `${MODEL}(high)`, stream });
          t.equal(a.text, TEXT);
          const r = checkUpstream(t, stream);
          t.equal(r.body.reasoning_effort, 'high', "reasoning_effort: 'high' (openai family)");
          t.notOk('reasoning' in r.body, 'not the Responses form');
          if (c === chatFast || c === chatTranslated) t.notOk(a.fingerprint, 'a suffix takes the translated path');
          const row = await rowOf(gw, a.requestId);
          checkRow(t, row, c.endpoint, stream);

          up.next({ kind: 'ok' });
          const b = await c.ask({ model: `${PLAIN}(high)`, stream });
          t.equal(b.text, TEXT);
          const p = checkUpstream(t, stream, 'gpt-4o');
          t.notOk('reasoning_effort' in p.body, 'a model without the reasoning capability gets no reasoning_effort');
          t.notOk('thinking' in p.body || 'reasoning' in p.body, 'nor any other thinking field');
          checkRow(t, await rowOf(gw, b.requestId), c.endpoint, stream, PLAIN);
        });
      });
    }
    t.test('(c) the streamed and the non-streamed rows agree', async (t) => {
      const a = rows.false!;
      const b = rows.true!;
      t.ok(a && b, 'both rows');
      t.same(bucketsOf(b), bucketsOf(a), 'same buckets (usage counted once)');
      t.equal(Number(b.cost), Number(a.cost), 'same cost');
      t.equal(Number(b.list_cost), Number(a.list_cost), 'same list cost');
      t.equal(b.usage_source, a.usage_source);
    });
  });
}

// ------------------------------------------------------------------------------------------------ history

t.test('reasoning sent back: an Anthropic history with a thinking block reaches DeepSeek as reasoning_content', async (t) => {
  up.next({ kind: 'ok' });
  const args = DEFAULT_TOOL_ARGS;
  const m = await anthropicClient.messages.create({
    model: DEEPSEEK,
    max_tokens: MAX_TOKENS,
    tools: [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema as Anthropic.Tool.InputSchema }],
    messages: [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: REASONING, signature: '' }, { type: 'tool_use', id: 'call_prev', name: TOOL.name, input: args }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_prev', content: '{"temperature":21}' }] },
    ],
  });
  t.equal(m.content[0]?.type === 'text' ? m.content[0].text : '', TEXT);
  const msgs = up.received.at(-1)!.body.messages as Record<string, unknown>[];
  t.same(msgs.map((x) => x.role), ['user', 'assistant', 'tool'], 'user, assistant, tool');
  t.match(msgs[1], { role: 'assistant', content: null, reasoning_content: REASONING, tool_calls: [{ id: 'call_prev', type: 'function', function: { name: TOOL.name } }] }, 'the thinking as reasoning_content (DeepSeek reads it back)');
  t.same(JSON.parse((msgs[1]!.tool_calls as { function: { arguments: string } }[])[0]!.function.arguments), args, 'the call arguments as JSON');
  t.match(msgs[2], { role: 'tool', tool_call_id: 'call_prev', content: '{"temperature":21}' }, 'the result as a tool message');
});

// ------------------------------------------------------------------------------------------------ vendor streams

t.test('parallel calls streamed without index (Gemini OpenAI-compat, Ollama): separate calls translated, bytes relayed on the fast path', async (t) => {
  const second = { city: 'Rome', unit: 'celsius' };
  up.next({ kind: 'tool', unindexed: true, more: [second] });
  const tools = [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema as Anthropic.Tool.InputSchema }];
  const m = await anthropicClient.messages.stream({ model: PLAIN, max_tokens: MAX_TOKENS, tools, messages: [{ role: 'user', content: ASK_TOOL }] }).finalMessage();
  const uses = m.content.flatMap((b) => (b.type === 'tool_use' ? [[b.id, b.name, b.input]] : []));
  const n = up.received.length; // the fake numbers its ids by the requests it has received
  t.strictSame(uses, [[toolCallIdFor(n), TOOL.name, DEFAULT_TOOL_ARGS], [`${toolCallIdFor(n)}_2`, TOOL.name, second]], 'two tool_use blocks, each with its id and input');
  t.equal(m.stop_reason, 'tool_use');

  up.next({ kind: 'tool', unindexed: true, more: [second] });
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: PLAIN, stream: true, messages: [{ role: 'user', content: ASK_TOOL }], tools: [{ type: 'function', function: { name: TOOL.name, parameters: TOOL.schema } }] }),
  });
  const deltas = (await r.text()).split('\n').filter((l) => l.startsWith('data: {')).flatMap((l) => (JSON.parse(l.slice(6)) as { choices: { delta: { tool_calls?: unknown[] } }[] }).choices.flatMap((c) => c.delta.tool_calls ?? []));
  t.equal(deltas.length, 2, 'the fast path relays the two deltas');
  t.notOk(deltas.some((d) => 'index' in (d as object)), 'as they came: no index added');
});
