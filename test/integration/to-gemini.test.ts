// Every client format, through its official SDK, against a Gemini upstream (the fake of test/helpers/fake-gemini.ts
// on a real socket), streamed and not: (a) the text answer arrives in the client's shape; (b) a tool definition and
// an image reach Gemini as functionDeclarations and inlineData, and the model's functionCall comes back as the
// client's own tool call; (c) the recorded row holds the hand-computed buckets and cost, the same for the streamed
// and the non-streamed form although Gemini repeats its cumulative usage on every chunk; (d) a `(high)` thinking
// suffix reaches Gemini as generationConfig.thinkingConfig.thinkingBudget; a thought part comes back as the client's
// reasoning, with Gemini's signature only to a Gemini client. Then: thinking per model family, the upstream key
// check, tool results and reasoning history sent back to Gemini (another family's signature never reaches it),
// and Gemini 3's function-call signatures across turns. Failure paths are in to-gemini-failures.test.ts.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { DEFAULT_ARGS, DEFAULT_SIGNATURE, DEFAULT_TEXT, DEFAULT_THOUGHT, GEMINI_PRICE, geminiProvider, startFakeGemini, type GeminiReceived } from '../helpers/fake-gemini.js';
import { argsOf, ASK_TOOL, bucketsOf, PNG, rowOf, spyFetch, TOOL, type Ask } from '../helpers/clients.js';

const up = await startFakeGemini(t);
const gw = await startApp(t, {
  providers: {
    gem: geminiProvider(up),
    // The same fake with a key it does not accept.
    gembad: geminiProvider({ baseUrl: up.baseUrl, key: 'AIza-wrong' }),
  },
});

// Hand computation (fake-gemini.ts DEFAULT_USAGE): promptTokenCount 30 of which cachedContentTokenCount 12,
// candidatesTokenCount 8, thoughtsTokenCount 6 -> input 30 - 12 = 18, cached 12, cache write null (Gemini has no
// such count), output 8, reasoning 6; total 18 + 12 + 8 + 6 = 44.
// Cost at GEMINI_PRICE (USD per 1M: input 2, output 12, cached 0.5; no reasoning price, so reasoning is billed as
// output): 18 x 2 + 12 x 0.5 + 8 x 12 + 6 x 12 = 36 + 6 + 96 + 72 = 210 -> 210 / 1e6 = 0.00021 USD.
const BUCKETS = [18, 12, null, 8, 6, 44];
const COST = (18 * GEMINI_PRICE.input + 12 * GEMINI_PRICE.cached + 8 * GEMINI_PRICE.output + 6 * GEMINI_PRICE.output) / 1e6;
t.equal(COST, 210 / 1e6, 'the cost computed by hand');

const MODEL = 'gem/gemini-2.5-flash';
/**
 * The max_tokens the Anthropic client sends (it must send one). Gemini counts thinking inside maxOutputTokens, so a
 * budget is capped by it (docs/thinking.md): 32768 leaves the whole `high` budget, 24576.
 */
const MAX_TOKENS = 32768;

interface Answer {
  text: string;
  calls: { name: string; args: unknown }[];
  stop: string | null | undefined;
  usage: unknown;
  reasoning: string;
  signatures: string[];
  requestId: string;
}
interface Client {
  name: string;
  endpoint: string;
  ask(a: Ask): Promise<Answer>;
  /** The stop reason the client sees for a text answer and for a tool call. */
  stops: { end: string; tool: string };
  /** The usage the client sees for DEFAULT_USAGE, in its own conventions (docs/translation.md "Usage"). */
  usage: Record<string, unknown>;
}

// ------------------------------------------------------------------------------------------------ OpenAI Chat

const chatSpy = spyFetch();
const openaiChat = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: chatSpy.fetch });

const chat: Client = {
  name: 'openai chat (openai SDK) -> /v1/chat/completions',
  endpoint: 'chat.completions',
  stops: { end: 'stop', tool: 'tool_calls' },
  usage: { prompt_tokens: 30, completion_tokens: 14, total_tokens: 44, prompt_tokens_details: { cached_tokens: 12 }, completion_tokens_details: { reasoning_tokens: 6 } },
  async ask({ model, stream, tools }) {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = tools
      ? [{ role: 'user', content: [{ type: 'text', text: ASK_TOOL }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] }]
      : [{ role: 'user', content: 'hi' }];
    const toolDefs: OpenAI.Chat.ChatCompletionTool[] | undefined = tools
      ? [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }]
      : undefined;
    const params = { model, messages, ...(toolDefs ? { tools: toolDefs } : {}) };
    if (!stream) {
      const r = await openaiChat.chat.completions.create(params);
      const msg = r.choices[0]!.message;
      return {
        text: msg.content ?? '',
        calls: (msg.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ name: c.function.name, args: argsOf(c.function.arguments) }] : [])),
        stop: r.choices[0]!.finish_reason,
        usage: r.usage,
        reasoning: (msg as { reasoning_content?: string }).reasoning_content ?? '',
        signatures: [],
        requestId: chatSpy.last.headers.get('x-request-id') ?? '',
      };
    }
    const s = await openaiChat.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let reasoning = '';
    let stop: string | null = null;
    let usage: unknown;
    const calls = new Map<number, { name: string; args: string }>();
    for await (const c of s) {
      if (c.usage) usage = c.usage;
      const choice = c.choices[0];
      if (!choice) continue;
      text += choice.delta.content ?? '';
      reasoning += (choice.delta as { reasoning_content?: string }).reasoning_content ?? '';
      for (const tc of choice.delta.tool_calls ?? []) {
        const call = calls.get(tc.index) ?? { name: '', args: '' };
        call.name += tc.function?.name ?? '';
        call.args += tc.function?.arguments ?? '';
        calls.set(tc.index, call);
      }
      if (choice.finish_reason) stop = choice.finish_reason;
    }
    return {
      text,
      calls: [...calls.values()].map((c) => ({ name: c.name, args: argsOf(c.args) })),
      stop,
      usage,
      reasoning,
      signatures: [],
      requestId: chatSpy.last.headers.get('x-request-id') ?? '',
    };
  },
};

// ------------------------------------------------------------------------------------------------ OpenAI Responses

const respSpy = spyFetch();
const openaiResp = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: respSpy.fetch });

function fromResponse(r: OpenAI.Responses.Response): Pick<Answer, 'calls' | 'reasoning' | 'signatures'> {
  const calls: Answer['calls'] = [];
  let reasoning = '';
  for (const item of r.output) {
    if (item.type === 'function_call') calls.push({ name: item.name, args: argsOf(item.arguments) });
    if (item.type === 'reasoning') reasoning += item.summary.map((s) => s.text).join('');
  }
  return { calls, reasoning, signatures: [] };
}

const responses: Client = {
  name: 'openai responses (openai SDK responses.create) -> /v1/responses',
  endpoint: 'responses',
  stops: { end: 'completed', tool: 'completed' },
  usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 12 }, output_tokens: 14, output_tokens_details: { reasoning_tokens: 6 }, total_tokens: 44 },
  async ask({ model, stream, tools }) {
    const input: OpenAI.Responses.ResponseInput = tools
      ? [{ role: 'user', content: [{ type: 'input_text', text: ASK_TOOL }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' }] }]
      : [{ role: 'user', content: 'hi' }];
    const toolDefs: OpenAI.Responses.Tool[] | undefined = tools
      ? [{ type: 'function', name: TOOL.name, description: TOOL.description, parameters: TOOL.schema, strict: false }]
      : undefined;
    const params = { model, input, ...(toolDefs ? { tools: toolDefs } : {}) };
    if (!stream) {
      const r = await openaiResp.responses.create(params);
      return { text: r.output_text, stop: r.status, usage: r.usage, ...fromResponse(r), requestId: respSpy.last.headers.get('x-request-id') ?? '' };
    }
    const s = await openaiResp.responses.create({ ...params, stream: true });
    let text = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of s) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed') final = e.response;
    }
    if (!final) throw new Error('no response.completed');
    return { text, stop: final.status, usage: final.usage, ...fromResponse(final), requestId: respSpy.last.headers.get('x-request-id') ?? '' };
  },
};

// ------------------------------------------------------------------------------------------------ Anthropic

const anthSpy = spyFetch();
// An explicit timeout: without one the SDK refuses a non-streamed request whose max_tokens might take over 10 minutes.
const anthropicClient = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client-unused', maxRetries: 0, timeout: 60_000, fetch: anthSpy.fetch });

function fromMessage(m: Anthropic.Message, requestId: string): Answer {
  let text = '';
  let reasoning = '';
  const calls: Answer['calls'] = [];
  const signatures: string[] = [];
  for (const b of m.content) {
    if (b.type === 'text') text += b.text;
    if (b.type === 'tool_use') calls.push({ name: b.name, args: b.input });
    if (b.type === 'thinking') {
      reasoning += b.thinking;
      if (b.signature !== '') signatures.push(b.signature);
    }
  }
  return { text, calls, stop: m.stop_reason, usage: m.usage, reasoning, signatures, requestId };
}

const anthropic: Client = {
  name: 'anthropic (@anthropic-ai/sdk) -> /v1/messages',
  endpoint: 'messages',
  stops: { end: 'end_turn', tool: 'tool_use' },
  usage: { input_tokens: 18, cache_read_input_tokens: 12, output_tokens: 14 },
  async ask({ model, stream, tools }) {
    const messages: Anthropic.MessageParam[] = tools
      ? [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: ASK_TOOL }] }]
      : [{ role: 'user', content: 'hi' }];
    const toolDefs: Anthropic.Tool[] | undefined = tools
      ? [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema as Anthropic.Tool.InputSchema }]
      : undefined;
    const params = { model, max_tokens: MAX_TOKENS, messages, ...(toolDefs ? { tools: toolDefs } : {}) };
    if (!stream) {
      const m = await anthropicClient.messages.create(params);
      return fromMessage(m, anthSpy.last.headers.get('x-request-id') ?? '');
    }
    const s = anthropicClient.messages.stream(params);
    let text = '';
    s.on('text', (d) => (text += d));
    const m = await s.finalMessage();
    const a = fromMessage(m, anthSpy.last.headers.get('x-request-id') ?? '');
    if (text !== a.text) throw new Error(`the text events (${JSON.stringify(text)}) do not add up to the final message (${JSON.stringify(a.text)})`);
    return a;
  },
};

// ------------------------------------------------------------------------------------------------ Gemini

const gemSpy = spyFetch();
const genai = new GoogleGenAI({ apiKey: 'client-unused', httpOptions: { baseUrl: gw.url, fetch: gemSpy.fetch } });

interface GenResponse {
  candidates?: { content?: { parts?: { text?: string; thought?: boolean; thoughtSignature?: string; functionCall?: { name?: string; args?: unknown } }[] }; finishReason?: string }[];
  usageMetadata?: unknown;
}

function addGemini(a: Answer, r: GenResponse): void {
  const cand = r.candidates?.[0];
  for (const p of cand?.content?.parts ?? []) {
    if (p.thought === true) a.reasoning += p.text ?? '';
    else if (typeof p.text === 'string') a.text += p.text;
    if (p.thoughtSignature) a.signatures.push(p.thoughtSignature);
    if (p.functionCall) a.calls.push({ name: p.functionCall.name ?? '', args: p.functionCall.args });
  }
  if (cand?.finishReason) a.stop = cand.finishReason;
  if (r.usageMetadata) a.usage = r.usageMetadata;
}

const gemini: Client = {
  name: 'gemini (@google/genai) -> /v1beta/models/{model}:generateContent',
  endpoint: 'generate_content',
  stops: { end: 'STOP', tool: 'STOP' },
  usage: { promptTokenCount: 30, cachedContentTokenCount: 12, candidatesTokenCount: 8, thoughtsTokenCount: 6, totalTokenCount: 44 },
  async ask({ model, stream, tools }) {
    const contents = tools ? [{ role: 'user', parts: [{ text: ASK_TOOL }, { inlineData: { mimeType: 'image/png', data: PNG } }] }] : 'hi';
    const config = tools ? { tools: [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.schema }] }] } : undefined;
    const params = { model, contents, ...(config ? { config } : {}) };
    const a: Answer = { text: '', calls: [], stop: null, usage: undefined, reasoning: '', signatures: [], requestId: '' };
    if (!stream) addGemini(a, (await genai.models.generateContent(params)) as GenResponse);
    else for await (const chunk of await genai.models.generateContentStream(params)) addGemini(a, chunk as GenResponse);
    a.requestId = gemSpy.last.headers.get('x-request-id') ?? '';
    return a;
  },
};

// ------------------------------------------------------------------------------------------------ checks

function checkRow(t: Test, row: Record<string, unknown>, endpoint: string, stream: boolean): void {
  t.match(row, { endpoint, provider: 'gem', model: MODEL, requested_model: MODEL, status: 'success', http_status: 200, error_type: '', usage_source: 'reported' });
  t.equal(Boolean(row.stream), stream, 'stream flag');
  t.same(bucketsOf(row), BUCKETS, 'buckets: input 18, cached 12, cache write null, output 8, reasoning 6, total 44');
  t.equal(Number(row.cost), COST, 'cost by hand');
  t.equal(Number(row.list_cost), COST, 'list cost by hand (paid group)');
}

/** The last upstream request went to the right Gemini URL with the provider key and nothing of the client's. */
function checkUpstream(t: Test, stream: boolean, model = 'gemini-2.5-flash'): GeminiReceived {
  const r = up.received.at(-1)!;
  t.equal(r.path, `/v1beta/models/${model}${stream ? ':streamGenerateContent?alt=sse' : ':generateContent'}`, 'upstream path');
  t.equal(r.headers['x-goog-api-key'], up.key, 'the provider key, as x-goog-api-key');
  t.notOk(r.headers.authorization, 'no client authorization forwarded');
  t.notOk(r.headers['x-api-key'], 'no client x-api-key forwarded');
  return r;
}

// ------------------------------------------------------------------------------------------------ the matrix

for (const c of [chat, responses, anthropic, gemini]) {
  t.test(c.name, async (t) => {
    const rowBuckets: Record<string, unknown> = {};
    for (const stream of [false, true]) {
      await t.test(stream ? 'streamed' : 'non-streamed', async (t) => {
        await t.test('(a, c) plain text: the answer, the client-side usage, the row', async (t) => {
          up.next({ kind: 'ok' });
          const a = await c.ask({ model: MODEL, stream });
          t.equal(a.text, DEFAULT_TEXT, 'text');
          t.equal(a.stop, c.stops.end, 'stop reason');
          t.same(a.calls, [], 'no tool call');
          t.match(a.usage, c.usage, 'usage in the client format');
          const r = checkUpstream(t, stream);
          t.match(r.body, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, 'the prompt reached Gemini');
          t.notOk((r.body.generationConfig as { thinkingConfig?: unknown } | undefined)?.thinkingConfig, 'no thinking without a suffix');
          t.ok(a.requestId, 'x-request-id');
          const row = await rowOf(gw, a.requestId);
          checkRow(t, row, c.endpoint, stream);
          rowBuckets[String(stream)] = { buckets: bucketsOf(row), cost: row.cost, list_cost: row.list_cost, usage_source: row.usage_source };
        });

        await t.test('(b) a tool definition and an image: functionDeclarations and inlineData up, the tool call back', async (t) => {
          up.next({ kind: 'call' });
          const a = await c.ask({ model: MODEL, stream, tools: true });
          t.same(a.calls, [{ name: TOOL.name, args: DEFAULT_ARGS }], 'the call in the client shape: name and arguments');
          t.equal(a.stop, c.stops.tool, 'stop reason of a tool call');
          t.equal(a.text, '', 'no text');
          const r = checkUpstream(t, stream);
          const tools = r.body.tools as { functionDeclarations: Record<string, unknown>[] }[];
          t.equal(tools.length, 1, 'one tools entry');
          t.equal(tools[0]!.functionDeclarations.length, 1, 'one declaration');
          const decl = tools[0]!.functionDeclarations[0]!;
          t.match(decl, { name: TOOL.name, description: TOOL.description }, 'declared by name and description');
          t.match(decl.parametersJsonSchema ?? decl.parameters, { type: /^object$/i, required: ['city'] }, 'with the parameter schema');
          t.match((decl.parametersJsonSchema ?? decl.parameters) as object, { properties: { city: { type: /^string$/i }, unit: { enum: ['celsius', 'fahrenheit'] } } });
          const contents = r.body.contents as { role: string; parts: Record<string, unknown>[] }[];
          t.equal(contents.length, 1, 'one user turn');
          t.equal(contents[0]!.role, 'user');
          t.same(contents[0]!.parts.filter((p) => 'inlineData' in p), [{ inlineData: { mimeType: 'image/png', data: PNG } }], 'the image as inlineData');
          t.same(contents[0]!.parts.filter((p) => 'text' in p), [{ text: ASK_TOOL }], 'the question as text');
          checkRow(t, await rowOf(gw, a.requestId), c.endpoint, stream);
        });

        await t.test('(d) a thinking suffix becomes thinkingConfig.thinkingBudget', async (t) => {
          up.next({ kind: 'ok' });
          const a = await c.ask({ model: `${MODEL}(high)`, stream });
          t.equal(a.text, DEFAULT_TEXT);
          const r = checkUpstream(t, stream);
          t.same((r.body.generationConfig as { thinkingConfig?: unknown } | undefined)?.thinkingConfig, { thinkingBudget: 24576 }, 'high -> budget 24576 (gemini-budget)');
          const row = await rowOf(gw, a.requestId);
          t.match(row, { model: MODEL, requested_model: MODEL, status: 'success' }, 'the suffix is not part of the recorded model');
        });

        await t.test('a thought part with its signature: reasoning apart from the answer text', async (t) => {
          up.next({ kind: 'thought' });
          const a = await c.ask({ model: MODEL, stream });
          t.equal(a.text, DEFAULT_TEXT, 'the thought is not in the answer text');
          if (c === gemini) {
            t.equal(a.reasoning, DEFAULT_THOUGHT, 'a Gemini client gets the thought as a thought part');
            t.same(a.signatures, [DEFAULT_SIGNATURE], 'and its thoughtSignature back (same family)');
          } else if (c === anthropic) {
            t.equal(a.reasoning, DEFAULT_THOUGHT, 'an Anthropic client gets the thought as a thinking block');
            t.same(a.signatures, [], "with no signature: Gemini's is not Anthropic's (docs/translation.md)");
          } else if (c === chat) {
            t.equal(a.reasoning, DEFAULT_THOUGHT, 'a Chat client gets the thought as reasoning_content');
          }
          checkRow(t, await rowOf(gw, a.requestId), c.endpoint, stream);
        });
      });
    }
    t.same(rowBuckets.true, rowBuckets.false, 'the streamed and the non-streamed rows agree (usage counted once)');
  });
}

t.test('thinking reaches only models with the reasoning capability, in each model family form', async (t) => {
  up.next({ kind: 'ok' }, { kind: 'ok' }, { kind: 'ok' }, { kind: 'ok' });
  await chat.ask({ model: 'gem/gemini-3-pro-preview(high)', stream: false });
  t.same(checkUpstream(t, false, 'gemini-3-pro-preview').body.generationConfig, { thinkingConfig: { thinkingLevel: 'high' } }, 'gemini-level: thinkingLevel');
  await gemini.ask({ model: 'gem/gemini-2.5-flash(low)', stream: true });
  t.same(checkUpstream(t, true).body.generationConfig, { thinkingConfig: { thinkingBudget: 1024 } }, 'low -> 1024');
  await anthropic.ask({ model: 'gem/gemini-2.5-flash(none)', stream: false });
  t.same(checkUpstream(t, false).body.generationConfig, { maxOutputTokens: MAX_TOKENS, thinkingConfig: { thinkingBudget: 0 } }, 'none -> 0 (and max_tokens as maxOutputTokens)');
  const a = await responses.ask({ model: 'gem/gemini-2.0-flash(high)', stream: false });
  const r = checkUpstream(t, false, 'gemini-2.0-flash');
  t.notOk((r.body.generationConfig as { thinkingConfig?: unknown } | undefined)?.thinkingConfig, 'a model without the reasoning capability gets no thinkingConfig');
  t.match(await rowOf(gw, a.requestId), { model: 'gem/gemini-2.0-flash', status: 'success' });
});

t.test('the upstream key is checked: a wrong provider key is Gemini 401, passed through', async (t) => {
  const before = up.received.length;
  const err = await openaiChat.chat.completions.create({ model: 'gembad/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof OpenAI.APIError, 'the SDK raises');
  t.equal((err as InstanceType<typeof OpenAI.APIError>).status, 401);
  t.match((err as InstanceType<typeof OpenAI.APIError>).error, { code: 401, status: 'UNAUTHENTICATED', message: /API key not valid/ }, "Gemini's error body, as it came");
  t.equal(up.received.length, before + 1);
  t.equal(up.received.at(-1)!.headers['x-goog-api-key'], 'AIza-wrong');
  t.equal(chatSpy.last.status, 401);
  t.match(await rowOf(gw, chatSpy.last.headers.get('x-request-id') ?? ''), { provider: 'gembad', status: 'failure', http_status: 401, error_type: '401' });
});

// ------------------------------------------------------------------------------------------------ history

// The second turn of a tool call, as each client sends it back: the model's call, then the tool's result. Gemini
// receives the call as a model functionCall and the result as a user functionResponse named after the call.
const RESULT = { temperature: 21, sky: 'clear' };

/** The contents Gemini must receive for [question, call, result] (ids aside). */
function checkHistory(t: Test, r: GeminiReceived): { parts: Record<string, unknown>[] }[] {
  const contents = r.body.contents as { role: string; parts: Record<string, unknown>[] }[];
  t.same(contents.map((c) => c.role), ['user', 'model', 'user'], 'user, model, user');
  t.match(contents[0]!.parts, [{ text: 'weather in Paris?' }]);
  const call = contents[1]!.parts.find((p) => 'functionCall' in p)?.functionCall as Record<string, unknown> | undefined;
  t.match(call, { name: TOOL.name, args: DEFAULT_ARGS }, 'the call as a model functionCall');
  const res = contents[2]!.parts.find((p) => 'functionResponse' in p)?.functionResponse as Record<string, unknown> | undefined;
  t.match(res, { name: TOOL.name, response: RESULT }, 'the result as a functionResponse named after the call, its JSON as the response object');
  if (call?.id !== undefined || res?.id !== undefined) t.equal(res?.id, call?.id, 'call and response ids pair up');
  return contents;
}

t.test('a tool result goes back to Gemini as functionResponse, from every client', async (t) => {
  const args = JSON.stringify(DEFAULT_ARGS);

  up.next({ kind: 'ok' });
  await openaiChat.chat.completions.create({
    model: MODEL,
    tools: [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }],
    messages: [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: TOOL.name, arguments: args } }] },
      { role: 'tool', tool_call_id: 'call_0', content: JSON.stringify(RESULT) },
    ],
  });
  await t.test('openai chat', async (t) => void checkHistory(t, up.received.at(-1)!));

  up.next({ kind: 'ok' });
  await openaiResp.responses.create({
    model: MODEL,
    tools: [{ type: 'function', name: TOOL.name, description: TOOL.description, parameters: TOOL.schema, strict: false }],
    input: [
      { role: 'user', content: 'weather in Paris?' },
      { type: 'function_call', call_id: 'call_0', name: TOOL.name, arguments: args },
      { type: 'function_call_output', call_id: 'call_0', output: JSON.stringify(RESULT) },
    ],
  });
  await t.test('openai responses', async (t) => void checkHistory(t, up.received.at(-1)!));

  up.next({ kind: 'ok' });
  const anthropicAnswer = await anthropicClient.messages.create({
    model: MODEL,
    max_tokens: MAX_TOKENS,
    tools: [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema as Anthropic.Tool.InputSchema }],
    messages: [
      { role: 'user', content: 'weather in Paris?' },
      {
        role: 'assistant',
        content: [
          // An Anthropic thinking signature: opaque data of another family, which Gemini must not receive.
          { type: 'thinking', thinking: 'I should call the tool.', signature: 'EqQBCkYIBxgCKkAanthropic-signature-not-for-gemini' },
          { type: 'tool_use', id: 'toolu_01A', name: TOOL.name, input: DEFAULT_ARGS },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: JSON.stringify(RESULT) }] },
    ],
  }).catch((e: unknown) => e as Error);
  await t.test('anthropic (with a thinking block signed by Anthropic)', async (t) => {
    if (anthropicAnswer instanceof Error) t.fail(`Gemini rejected the history: ${anthropicAnswer.message}`);
    else t.equal(anthropicAnswer.content[0]?.type === 'text' ? anthropicAnswer.content[0].text : '', DEFAULT_TEXT, 'answered (Gemini did not reject the history)');
    const contents = checkHistory(t, up.received.at(-1)!);
    t.notMatch(JSON.stringify(contents), /anthropic-signature-not-for-gemini/, "the Anthropic signature is not sent to Gemini");
  });

  up.next({ kind: 'thought' }, { kind: 'ok' });
  // A first turn that returns a thought with its signature, then the history with that signature sent back.
  const first = await gemini.ask({ model: MODEL, stream: false });
  t.same(first.signatures, [DEFAULT_SIGNATURE]);
  const res = await genai.models.generateContent({
    model: MODEL,
    config: { tools: [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.schema }] }] },
    contents: [
      { role: 'user', parts: [{ text: 'weather in Paris?' }] },
      { role: 'model', parts: [{ text: first.reasoning, thought: true, thoughtSignature: DEFAULT_SIGNATURE }, { functionCall: { name: TOOL.name, args: DEFAULT_ARGS } }] },
      { role: 'user', parts: [{ functionResponse: { name: TOOL.name, response: RESULT } }] },
    ],
  });
  await t.test('gemini (with its own thought signature)', async (t) => {
    t.equal(res.text, DEFAULT_TEXT);
    const contents = checkHistory(t, up.received.at(-1)!);
    t.match(contents[1]!.parts, [{ thought: true, thoughtSignature: DEFAULT_SIGNATURE }], 'its own thought signature goes back to Gemini');
  });
});

// ------------------------------------------------------------------------------------------------ Gemini 3 signatures

// Gemini 3 puts a thoughtSignature on the first functionCall part of each step and rejects (400) a next turn whose
// current-turn functionCall lacks it (fake-gemini.ts models that check for gemini-3* models).
const CALL_SIG = 'EjQKMgG+Pvb7fake/gemini3/function-call/signature==';
const G3 = 'gem/gemini-3-pro-preview';
const G3_CONFIG = { tools: [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.schema }] }] };

t.test('Gemini 3: a function call keeps its thoughtSignature to a Gemini client, and the next turn carries it back', async (t) => {
  for (const stream of [false, true]) {
    await t.test(stream ? 'streamed' : 'non-streamed', async (t) => {
      up.next({ kind: 'call', signature: CALL_SIG }, { kind: 'ok' });
      const question = { role: 'user', parts: [{ text: 'weather in Paris?' }] };
      type P = NonNullable<NonNullable<GenResponse['candidates']>[number]['content']>['parts'];
      let parts: NonNullable<P> = [];
      if (!stream) parts = ((await genai.models.generateContent({ model: G3, config: G3_CONFIG, contents: [question] })) as GenResponse).candidates?.[0]?.content?.parts ?? [];
      else for await (const c of await genai.models.generateContentStream({ model: G3, config: G3_CONFIG, contents: [question] })) parts.push(...(((c as GenResponse).candidates?.[0]?.content?.parts) ?? []));
      const call = parts.find((p) => p.functionCall);
      t.match(call, { functionCall: { name: TOOL.name, args: DEFAULT_ARGS } }, 'the call');
      t.equal(call?.thoughtSignature, CALL_SIG, 'with its thoughtSignature on the same part');
      // The next turn, as the SDK's docs say to build it: the model's content as it came, then the result.
      const next = await genai.models
        .generateContent({ model: G3, config: G3_CONFIG, contents: [question, { role: 'model', parts: parts as never }, { role: 'user', parts: [{ functionResponse: { name: TOOL.name, response: RESULT } }] }] })
        .catch((e: unknown) => e as Error);
      if (next instanceof Error) t.fail(`Gemini rejected the next turn: ${next.message}`);
      else t.equal(next.text, DEFAULT_TEXT, 'answered');
      const sentCall = (up.received.at(-1)!.body.contents as { parts: Record<string, unknown>[] }[])[1]?.parts.find((p) => 'functionCall' in p);
      t.equal(sentCall?.thoughtSignature, CALL_SIG, 'the signature went back to Gemini on the functionCall part');
    });
  }
});

t.test('Gemini 3: a tool call from a client without signatures (OpenAI Chat) can still be continued', async (t) => {
  // A Chat client has no place for Gemini's signature, so its history has none. Gemini documents a placeholder
  // signature for function calls it did not produce; without one, Gemini 3 rejects the request.
  up.next({ kind: 'call', signature: CALL_SIG }, { kind: 'ok' });
  const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }];
  const first = await openaiChat.chat.completions.create({ model: G3, tools, messages: [{ role: 'user', content: 'weather in Paris?' }] });
  const call = first.choices[0]!.message.tool_calls?.[0];
  t.ok(call && call.type === 'function', 'a tool call');
  if (!call || call.type !== 'function') return;
  const next = await openaiChat.chat.completions
    .create({
      model: G3,
      tools,
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: JSON.stringify(RESULT) },
      ],
    })
    .catch((e: unknown) => e as Error);
  if (next instanceof Error) t.fail(`Gemini 3 rejected the second turn: ${next.message}`);
  else t.equal(next.choices[0]!.message.content, DEFAULT_TEXT, 'answered');
});
