// Every client format against an OpenAI Responses upstream: the official clients (openai Chat Completions, openai
// Responses, @anthropic-ai/sdk, @google/genai) talk to Tollgate, which translates to provider `resp` (format
// openai-responses) served by the fake of test/helpers/fake-responses.ts on a real socket. For each client, whole
// and streamed: (a) the text answer arrives in the client's own shape; (b) a request with a function tool and a
// base64 PNG gets the tool call back in the client's shape, and the upstream received a function tool and an
// input_image; (c) the recorded row has exactly the hand-computed buckets and cost, streamed and whole agree, and an
// upstream that repeats its terminal event is counted once; (d) a thinking suffix reaches the reasoning model as
// reasoning.effort and the other model gets no reasoning field. Failure paths are in to-responses-failures.test.ts.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { DEFAULT_ARGUMENTS, DEFAULT_SUMMARY, DEFAULT_TEXT, respProvider, startFakeResponses, UPSTREAM_KEY } from '../helpers/fake-responses.js';
import { buckets, type Row, withRow } from '../helpers/clients.js';

const up = await startFakeResponses(t);
const gw = await startApp(t, { providers: { resp: respProvider(up.baseUrl) } });

const REASONING_MODEL = 'resp/o4-mini';
const PLAIN_MODEL = 'resp/gpt-4.1';

// ---- hand computation -------------------------------------------------------------------------------------------
// The fake reports input_tokens 40 (input_tokens_details.cached_tokens 16) and output_tokens 25
// (output_tokens_details.reasoning_tokens 10). Buckets: input 40 - 16 = 24, cached 16, cache write null (the
// Responses API does not report it), output 25 - 10 = 15, reasoning 10; total 24 + 16 + 15 + 10 = 65.
// Price of `resp` (USD per 1M tokens): input 2, cached 0.5, output 8, no reasoning price (falls back to output 8).
// Cost = (24 x 2 + 16 x 0.5 + 15 x 8 + 10 x 8) / 1e6 = (48 + 8 + 120 + 80) / 1e6 = 256 / 1e6 = 0.000256 USD.
const BUCKETS = [24, 16, null, 15, 10];
const TOTAL = 65;
const COST = 0.000256;

// A 1x1 PNG (red pixel), base64.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const PNG_URL = `data:image/png;base64,${PNG}`;
const TOOL = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] },
};
const ASK = 'What is the weather where this photo was taken?';
const ARGS = JSON.parse(DEFAULT_ARGUMENTS) as unknown;
const SUMMARY = DEFAULT_SUMMARY.join('');

type Kind = 'text' | 'tool' | 'reasoning';

/** What a client got, in neutral terms (each adapter reads its own SDK's shape). */
interface Got {
  text: string;
  reasoning: string;
  calls: { id: string; name: string; args: unknown }[];
  stop: string;
  /** Usage as the client saw it, in the client's own shape. */
  usage: unknown;
  /** Terminal events the client saw (streams): response.completed, message_stop, ... */
  terminals: number;
}

interface Client {
  readonly name: string;
  readonly endpoint: string;
  /** Stop reasons of a text answer and of a tool call, in the client's vocabulary. */
  readonly stops: { text: string; tool: string };
  /** The client-visible usage of DEFAULT_USAGE (whole; streamed where the format carries usage). */
  readonly usage: unknown;
  run(kind: Kind, model: string, stream: boolean): Promise<Got>;
}

const empty = (): Got => ({ text: '', reasoning: '', calls: [], stop: '', usage: undefined, terminals: 0 });

// ---- OpenAI Chat Completions (openai SDK) -------------------------------------------------------------------------

const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });

const chat: Client = {
  name: 'OpenAI Chat (openai SDK)',
  endpoint: 'chat.completions',
  stops: { text: 'stop', tool: 'tool_calls' },
  usage: { prompt_tokens: 40, completion_tokens: 25, total_tokens: 65, prompt_tokens_details: { cached_tokens: 16 }, completion_tokens_details: { reasoning_tokens: 10 } },
  async run(kind, model, stream) {
    const messages: OpenAI.ChatCompletionMessageParam[] =
      kind === 'tool'
        ? [{ role: 'user', content: [{ type: 'text', text: ASK }, { type: 'image_url', image_url: { url: PNG_URL } }] }]
        : [{ role: 'user', content: 'hi' }];
    const tools: OpenAI.ChatCompletionTool[] | undefined = kind === 'tool' ? [{ type: 'function', function: TOOL }] : undefined;
    const g = empty();
    if (!stream) {
      const res = await openai.chat.completions.create({ model, messages, ...(tools ? { tools } : {}) });
      const m = res.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
      g.text = m.content ?? '';
      g.reasoning = m.reasoning_content ?? '';
      g.calls = (m.tool_calls ?? []).map((c) => (c.type === 'function' ? { id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) as unknown } : { id: c.id, name: '', args: null }));
      g.stop = res.choices[0]!.finish_reason;
      g.usage = res.usage;
      return g;
    }
    const s = await openai.chat.completions.create({ model, messages, ...(tools ? { tools } : {}), stream: true, stream_options: { include_usage: true } });
    const calls = new Map<number, { id: string; name: string; args: string }>();
    for await (const c of s) {
      if (c.usage) g.usage = c.usage;
      const ch = c.choices[0];
      if (!ch) continue;
      const d = ch.delta as typeof ch.delta & { reasoning_content?: string };
      g.text += d.content ?? '';
      g.reasoning += d.reasoning_content ?? '';
      for (const tc of d.tool_calls ?? []) {
        const cur = calls.get(tc.index) ?? { id: '', name: '', args: '' };
        cur.id += tc.id ?? '';
        cur.name += tc.function?.name ?? '';
        cur.args += tc.function?.arguments ?? '';
        calls.set(tc.index, cur);
      }
      if (ch.finish_reason) {
        g.stop = ch.finish_reason;
        g.terminals++;
      }
    }
    g.calls = [...calls.values()].map((c) => ({ id: c.id, name: c.name, args: JSON.parse(c.args) as unknown }));
    return g;
  },
};

// ---- OpenAI Responses (openai SDK) --------------------------------------------------------------------------------

const responses: Client = {
  name: 'OpenAI Responses (openai SDK)',
  endpoint: 'responses',
  stops: { text: 'completed', tool: 'completed' },
  usage: { input_tokens: 40, input_tokens_details: { cached_tokens: 16 }, output_tokens: 25, output_tokens_details: { reasoning_tokens: 10 }, total_tokens: 65 },
  async run(kind, model, stream) {
    const input: OpenAI.Responses.ResponseInput =
      kind === 'tool'
        ? [{ role: 'user', content: [{ type: 'input_text', text: ASK }, { type: 'input_image', image_url: PNG_URL, detail: 'auto' }] }]
        : [{ role: 'user', content: 'hi' }];
    const tools: OpenAI.Responses.Tool[] | undefined = kind === 'tool' ? [{ type: 'function', ...TOOL, strict: false }] : undefined;
    const reasoning = kind === 'reasoning' ? { reasoning: { summary: 'auto' as const } } : {};
    const g = empty();
    const read = (r: OpenAI.Responses.Response) => {
      g.text = r.output_text;
      g.stop = r.status ?? '';
      g.usage = r.usage;
      for (const item of r.output) {
        if (item.type === 'function_call') g.calls.push({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments) as unknown });
        if (item.type === 'reasoning') g.reasoning += item.summary.map((s) => s.text).join('');
      }
    };
    if (!stream) {
      read(await openai.responses.create({ model, input, ...(tools ? { tools } : {}), ...reasoning }));
      return g;
    }
    const s = await openai.responses.create({ model, input, ...(tools ? { tools } : {}), ...reasoning, stream: true });
    let deltas = '';
    let last: OpenAI.Responses.Response | undefined;
    for await (const e of s) {
      if (e.type === 'response.output_text.delta') deltas += e.delta;
      if (e.type === 'response.completed' || e.type === 'response.failed' || e.type === 'response.incomplete') {
        g.terminals++;
        last = e.response;
      }
    }
    if (last) read(last);
    g.text = deltas;
    return g;
  },
};

// ---- Anthropic Messages (@anthropic-ai/sdk) -----------------------------------------------------------------------

const anthropicClient = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });

const anthropic: Client = {
  name: 'Anthropic (@anthropic-ai/sdk)',
  endpoint: 'messages',
  stops: { text: 'end_turn', tool: 'tool_use' },
  usage: { input_tokens: 24, cache_read_input_tokens: 16, output_tokens: 25 },
  async run(kind, model, stream) {
    const messages: Anthropic.MessageParam[] =
      kind === 'tool'
        ? [{ role: 'user', content: [{ type: 'text', text: ASK }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }]
        : [{ role: 'user', content: 'hi' }];
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model,
      max_tokens: 1024,
      messages,
      ...(kind === 'tool' ? { tools: [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.parameters as Anthropic.Tool.InputSchema }] } : {}),
    };
    const g = empty();
    let msg: Anthropic.Message;
    if (!stream) msg = await anthropicClient.messages.create(params);
    else {
      const s = anthropicClient.messages.stream(params);
      s.on('streamEvent', (e) => {
        if (e.type === 'message_stop') g.terminals++;
      });
      msg = await s.finalMessage();
    }
    for (const b of msg.content) {
      if (b.type === 'text') g.text += b.text;
      if (b.type === 'thinking') g.reasoning += b.thinking;
      if (b.type === 'tool_use') g.calls.push({ id: b.id, name: b.name, args: b.input });
    }
    g.stop = msg.stop_reason ?? '';
    g.usage = { input_tokens: msg.usage.input_tokens, cache_read_input_tokens: msg.usage.cache_read_input_tokens, output_tokens: msg.usage.output_tokens };
    return g;
  },
};

// ---- Gemini (@google/genai) ---------------------------------------------------------------------------------------

const genai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: gw.url } });

const gemini: Client = {
  name: 'Gemini (@google/genai)',
  endpoint: 'generate_content',
  stops: { text: 'STOP', tool: 'STOP' },
  usage: { promptTokenCount: 40, cachedContentTokenCount: 16, candidatesTokenCount: 15, thoughtsTokenCount: 10, totalTokenCount: 65 },
  async run(kind, model, stream) {
    const contents = kind === 'tool' ? [{ role: 'user', parts: [{ text: ASK }, { inlineData: { mimeType: 'image/png', data: PNG } }] }] : 'hi';
    const config = {
      ...(kind === 'tool' ? { tools: [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.parameters }] }] } : {}),
      ...(kind === 'reasoning' ? { thinkingConfig: { includeThoughts: true } } : {}),
    };
    const g = empty();
    const read = (r: Awaited<ReturnType<typeof genai.models.generateContent>>) => {
      for (const p of r.candidates?.[0]?.content?.parts ?? []) {
        if (p.thought && p.text) g.reasoning += p.text;
        else if (p.text) g.text += p.text;
        if (p.functionCall) g.calls.push({ id: p.functionCall.id ?? '', name: p.functionCall.name ?? '', args: p.functionCall.args });
      }
      const fr = r.candidates?.[0]?.finishReason;
      if (fr) {
        g.stop = fr;
        g.terminals++;
      }
      if (r.usageMetadata) {
        const u = r.usageMetadata;
        g.usage = { promptTokenCount: u.promptTokenCount, cachedContentTokenCount: u.cachedContentTokenCount, candidatesTokenCount: u.candidatesTokenCount, thoughtsTokenCount: u.thoughtsTokenCount, totalTokenCount: u.totalTokenCount };
      }
    };
    if (!stream) read(await genai.models.generateContent({ model, contents, config }));
    else for await (const chunk of await genai.models.generateContentStream({ model, contents, config })) read(chunk);
    return g;
  },
};

const CLIENTS = [chat, responses, anthropic, gemini];

// ---- helpers -----------------------------------------------------------------------------------------------------

function checkRow(t: Test, row: Row, endpoint: string, stream: boolean, model = REASONING_MODEL): void {
  t.match(row, { endpoint, provider: 'resp', model, requested_model: model, stream, status: 'success', http_status: 200, error_type: '', usage_source: 'reported' }, 'row: success, routed to resp');
  t.same(buckets(row), BUCKETS, 'buckets by hand: input 24, cached 16, cache write null, output 15, reasoning 10');
  t.equal(Number(row.total_tokens), TOTAL, 'total 65');
  t.equal(Number(row.cost), COST, 'cost by hand: 256 / 1e6');
  t.equal(Number(row.list_cost), COST, 'list cost = cost (group paid)');
}

const lastSent = () => up.received.at(-1)!;

// ---- the matrix --------------------------------------------------------------------------------------------------

for (const c of CLIENTS) {
  t.test(`${c.name} -> ${c.endpoint} -> Responses upstream`, async (t) => {
    const pair: Record<string, (number | null)[]> = {};

    for (const stream of [false, true]) {
      const mode = stream ? 'streamed' : 'whole';

      t.test(`${mode}: (a) plain text, (c) row`, async (t) => {
        const { value: g, row } = await withRow(gw, t, () => c.run('text', REASONING_MODEL, stream));
        t.equal(g.text, DEFAULT_TEXT, 'answer text');
        t.equal(g.stop, c.stops.text, 'stop reason in the client vocabulary');
        t.same(g.usage, c.usage, 'usage in the client shape');
        if (stream) t.equal(g.terminals, 1, 'one terminal event');
        const sent = lastSent();
        t.equal(sent.path, '/v1/responses');
        t.equal(sent.headers.authorization, `Bearer ${UPSTREAM_KEY}`, 'upstream key injected from config');
        t.equal(sent.body.model, 'o4-mini', 'provider prefix removed');
        if (c === responses) {
          // Same format: passed through as the SDK sent it (no stream: false, no store).
          t.equal(sent.body.stream === true, stream);
          t.notOk('store' in sent.body, 'passthrough: store only when the client sends it');
        } else {
          t.equal(sent.body.stream, stream);
          t.equal(sent.body.store, false, 'stateless: store false');
        }
        checkRow(t, row, c.endpoint, stream);
        pair[mode] = buckets(row);
      });

      t.test(`${mode}: (b) tool + image -> tool call, (c) row`, async (t) => {
        up.next({ kind: 'tool' });
        const { value: g, row } = await withRow(gw, t, () => c.run('tool', REASONING_MODEL, stream));
        t.equal(g.calls.length, 1, 'one tool call');
        t.equal(g.calls[0]?.name, TOOL.name);
        t.same(g.calls[0]?.args, ARGS, 'arguments as the upstream produced them');
        if (c !== gemini) t.match(g.calls[0]?.id, /^call_|^toolu_/, 'a call id');
        t.equal(g.stop, c.stops.tool, 'stop reason of a tool call');
        t.equal(g.text, '', 'no text');
        const sent = lastSent().body;
        const tools = sent.tools as Record<string, unknown>[];
        t.equal(tools.length, 1);
        t.match(tools[0], { type: 'function', name: TOOL.name, parameters: TOOL.parameters }, 'upstream got a function tool');
        t.notOk('function' in tools[0]!, 'Responses shape, not Chat shape');
        const input = sent.input as { role?: string; content?: Record<string, unknown>[] }[];
        const parts = input.flatMap((m) => m.content ?? []);
        t.match(parts, [{ type: 'input_text', text: ASK }, { type: 'input_image', image_url: PNG_URL }], 'upstream got input_text and input_image');
        checkRow(t, row, c.endpoint, stream);
        t.same(buckets(row), pair[mode], 'tool answer recorded like the text answer');
      });

      t.test(`${mode}: reasoning summary before the message`, async (t) => {
        up.next({ kind: 'reasoning' });
        const { value: g, row } = await withRow(gw, t, () => c.run('reasoning', REASONING_MODEL, stream));
        t.equal(g.text, DEFAULT_TEXT, 'answer text');
        t.equal(g.reasoning, SUMMARY, 'reasoning summary in the client shape');
        checkRow(t, row, c.endpoint, stream);
      });

      t.test(`${mode}: (d) thinking suffix`, async (t) => {
        const { row } = await withRow(gw, t, () => c.run('text', `${REASONING_MODEL}(high)`, stream));
        const sent = lastSent().body;
        t.equal(sent.model, 'o4-mini', 'suffix removed upstream');
        t.same(sent.reasoning, { effort: 'high' }, 'reasoning.effort high');
        if (c === responses) t.notOk('include' in sent, 'passthrough: include only when the client sends it');
        else t.same(sent.include, ['reasoning.encrypted_content'], 'encrypted reasoning asked for (stateless)');
        t.equal(row.model, REASONING_MODEL, 'recorded model without the suffix');
        t.equal(row.requested_model, REASONING_MODEL);
        checkRow(t, row, c.endpoint, stream);

        const plain = await withRow(gw, t, () => c.run('text', `${PLAIN_MODEL}(high)`, stream));
        const sent2 = lastSent().body;
        t.equal(sent2.model, 'gpt-4.1');
        t.notOk('reasoning' in sent2, 'a model without the reasoning capability gets no reasoning field');
        t.notOk('include' in sent2, 'nor the encrypted-reasoning include');
        checkRow(t, plain.row, c.endpoint, stream, PLAIN_MODEL);
      });
    }

    t.test('streamed: a repeated terminal event (completed twice, then done) is counted once', async (t) => {
      up.next({ kind: 'duplicate-terminal' });
      const { value: g, row } = await withRow(gw, t, () => c.run('text', REASONING_MODEL, true));
      t.equal(up.pending, 0, 'the behaviour was used');
      t.equal(g.text, DEFAULT_TEXT);
      // Same format: the client gets the upstream's events as they came; the row still counts the usage once.
      t.equal(g.terminals, c === responses ? 2 : 1, c === responses ? 'passthrough: both terminal events' : 'the client sees one terminal event');
      t.same(g.usage, c.usage, 'the client sees the usage once');
      checkRow(t, row, c.endpoint, true);
    });

    t.same(pair.streamed, pair.whole, 'streamed and whole record the same buckets');
  });
}

// ---- parameters the Responses API would reject -----------------------------------------------------------------

t.test('sampling parameters are fitted to the target: dropped where Responses has none or the model rejects them', async (t) => {
  const calls: [string, (model: string) => Promise<unknown>][] = [
    ['chat', (model) => openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, top_p: 0.9, seed: 1, presence_penalty: 0.1, stop: ['zzz'] })],
    // A Responses client is passed through to a Responses provider as it wrote the request (test/pipeline/passthrough.test.ts).
    // @anthropic-ai/sdk 1.11 no longer types temperature / top_k; it still sends them, as older clients do.
    ['anthropic', (model) => {
      const params = { model, max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }], temperature: 0.2, top_k: 5, stop_sequences: ['zzz'] };
      return anthropicClient.messages.create(params);
    }],
    ['gemini', (model) => genai.models.generateContent({ model, contents: 'hi', config: { temperature: 0.2, topK: 5, seed: 1, stopSequences: ['zzz'] } })],
  ];
  for (const [name, call] of calls) {
    await call(REASONING_MODEL);
    const r = lastSent().body;
    for (const k of ['temperature', 'top_p', 'top_k', 'seed', 'stop', 'presence_penalty']) t.notOk(k in r, `${name} -> reasoning model: no ${k}`);
    await call(PLAIN_MODEL);
    const p = lastSent().body;
    t.equal(p.temperature, 0.2, `${name} -> non-reasoning model: temperature kept`);
    for (const k of ['top_k', 'seed', 'stop', 'presence_penalty']) t.notOk(k in p, `${name} -> non-reasoning model: no ${k} (not a Responses parameter)`);
  }
});

// ---- raw bytes: what a proxy adds upstream is not forwarded -----------------------------------------------------

/** SSE frames of a body: each frame's lines, its event name and its data. */
function frames(text: string): { event: string | null; data: string; lines: string[] }[] {
  return text
    .split('\n\n')
    .filter((f) => f !== '')
    .map((f) => {
      const lines = f.split('\n');
      return {
        event: lines.find((l) => l.startsWith('event: '))?.slice(7) ?? null,
        data: lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n'),
        lines,
      };
    });
}

const RAW = [
  // Not 'responses': a Responses client reaches a Responses provider by passthrough, which forwards the bytes as they
  // came (test/pipeline/passthrough.test.ts).
  { endpoint: 'chat.completions', path: '/v1/chat/completions', body: { model: REASONING_MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true }, done: 1, terminal: null },
  { endpoint: 'messages', path: '/v1/messages', body: { model: REASONING_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true }, done: 0, terminal: 'message_stop' },
  { endpoint: 'generate_content', path: `/v1beta/models/${REASONING_MODEL}:streamGenerateContent?alt=sse`, body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, done: 0, terminal: null },
] as const;

for (const r of RAW) {
  t.test(`raw ${r.endpoint} stream: an upstream keep-alive comment is forwarded as a comment, a stray [DONE] is not`, async (t) => {
    up.next({ kind: 'ok', junk: true });
    const { value: res, row } = await withRow(gw, t, async () => {
      const x = await request(`${gw.url}${r.path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(r.body) });
      return { status: x.statusCode, requestId: x.headers['x-request-id'], text: await x.body.text() };
    });
    t.equal(res.status, 200);
    t.equal(res.requestId, row.request_id, "x-request-id is the row's request id");
    const all = frames(res.text);
    const comment = (f: { lines: string[] }) => f.lines.every((l) => l.startsWith(':'));
    t.same(all.filter(comment).map((f) => f.lines), [[': keep-alive']], 'the upstream\'s keep-alive, once, as a comment block of its own');
    const fs = all.filter((f) => !comment(f));
    t.notOk(fs.some((f) => f.lines.some((l) => l.startsWith(':'))), 'no comment line inside an event');
    t.equal(fs.filter((f) => f.data === '[DONE]').length, r.done, `${r.done} [DONE]`);
    if (r.done === 1) t.equal(fs.at(-1)!.data, '[DONE]', '[DONE] last');
    for (const f of fs) {
      if (f.data === '[DONE]') continue;
      t.ok(f.lines.every((l) => l.startsWith('data: ') || l.startsWith('event: ')), `event/data lines only: ${f.lines[0]!.slice(0, 50)}`);
      t.doesNotThrow(() => JSON.parse(f.data), 'JSON data');
    }
    if (r.terminal) {
      t.equal(fs.filter((f) => f.event === r.terminal).length, 1, `one ${r.terminal}`);
      t.equal(fs.at(-1)!.event, r.terminal, `${r.terminal} last`);
    }
    checkRow(t, row, r.endpoint, true);
  });
}

t.test('the upstream saw every request as the Responses API expects', async (t) => {
  t.ok(up.received.length >= CLIENTS.length * 2 * 5, `${up.received.length} upstream requests`);
  t.ok(up.received.every((r) => r.method === 'POST' && r.path === '/v1/responses'), 'POST /v1/responses');
  t.ok(up.received.every((r) => r.headers['content-type'] === 'application/json'), 'JSON bodies');
  t.ok(up.received.every((r) => r.headers.accept === (r.body.stream ? 'text/event-stream' : 'application/json')), 'accept matches stream');
  // Requests passed through (a Responses client) carry the SDK's x-stainless-* headers; the translated ones not.
  const translated = up.received.filter((r) => r.headers['x-stainless-lang'] === undefined);
  t.ok(translated.length > 0 && translated.length < up.received.length, 'translated and passed-through requests');
  t.ok(translated.every((r) => r.body.store === false), 'store false on every translated request');
  const rows = await gw.rows(`provider = 'resp'`);
  t.equal(rows.length, up.received.length, 'one row per upstream request');
  t.ok(rows.every((r) => r.status === 'success'), 'all successes');
});
