// Every client format, streamed and not, against Tollgate translating to a fake Anthropic Messages upstream on a
// real socket (test/helpers/fake-anthropic.ts): (a) a plain answer arrives whole; (b) a tool definition and an
// image reach the upstream in Anthropic's shape and the tool call comes back in the client's own shape; (c) the
// recorded row has the hand-computed buckets and cost, the same streamed and not; (d) a thinking suffix becomes
// Anthropic's `thinking` field for the reasoning model only. Failure paths are in to-anthropic-failures.test.ts.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import {
  DEFAULT_SIGNATURE, DEFAULT_TEXT, DEFAULT_THINKING, DEFAULT_TOOL_INPUT, FAKE_ANTHROPIC_KEY, fakeAnthropicProvider, startFakeAnthropic,
} from '../helpers/fake-anthropic.js';
import { buckets, PNG } from '../helpers/clients.js';
import { waitFor } from '../helpers/wait.js';

const up = await startFakeAnthropic(t);
const gw = await startApp(t, { providers: { anth: fakeAnthropicProvider(up.url) } });

const MODEL = 'anth/claude-sonnet-4-5'; // tools, vision, reasoning; thinking: anthropic-budget
const PLAIN = 'anth/claude-haiku-4-5'; // tools, vision; no reasoning
const TEXT = DEFAULT_TEXT.join(''); // 'Hello from the fake Claude'

// Hand computation. The fake reports input_tokens 20, cache_read_input_tokens 5, cache_creation_input_tokens 7,
// output_tokens 9. Anthropic's input_tokens already excludes cache reads and writes, and thinking is counted inside
// output_tokens, so the buckets are input 20, cached 5, cache_write 7, output 9, reasoning null; total 41.
// Price (USD per 1M): input 3, cached 0.3, cache_write 3.75, output 15; group paid, so cost = list cost:
//   20 x 3 = 60;  5 x 0.3 = 1.5;  7 x 3.75 = 26.25;  9 x 15 = 135;  sum 222.75 per 1M tokens = 0.00022275 USD.
const BUCKETS = [20, 5, 7, 9, null];
const TOTAL = 41;
const COST = 0.00022275;

const QUESTION = 'What is the weather where this photo was taken?';
const TOOL = {
  name: 'get_weather',
  description: 'Current weather for a place',
  schema: {
    type: 'object',
    properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['location'],
  },
};

interface ToolCall {
  id: string | undefined;
  name: string;
  args: unknown;
  /** The client format's own finish/stop value. */
  finish: string | undefined;
}

interface Driver {
  readonly name: string;
  readonly endpoint: string;
  /** A plain question; the answer's text. */
  text(stream: boolean, model?: string, maxTokens?: number): Promise<string>;
  /** The question with an image and a tool; the tool call the client got. */
  tool(stream: boolean): Promise<ToolCall>;
  /** The tool call id the client should see for the fake's id, or null if the format has none. */
  readonly keepsToolId: boolean;
}

const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'gateway-key-not-for-upstream', maxRetries: 0 });
// An explicit timeout: without one the SDK refuses a non-streamed request with max_tokens 32000 ("streaming is required").
const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'gateway-key-not-for-upstream', maxRetries: 0, timeout: 60_000 });
const gemini = new GoogleGenAI({ apiKey: 'gateway-key-not-for-upstream', httpOptions: { baseUrl: gw.url } });

const chat: Driver = {
  name: 'openai chat',
  endpoint: 'chat.completions',
  keepsToolId: true,
  async text(stream, model = MODEL, maxTokens) {
    const body = { model, messages: [{ role: 'user' as const, content: 'hi' }], ...(maxTokens ? { max_completion_tokens: maxTokens } : {}) };
    if (!stream) return (await openai.chat.completions.create(body)).choices[0]?.message.content ?? '';
    let text = '';
    for await (const c of await openai.chat.completions.create({ ...body, stream: true })) text += c.choices[0]?.delta.content ?? '';
    return text;
  },
  async tool(stream) {
    const body = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: QUESTION }, { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${PNG}` } }] }],
      tools: [{ type: 'function' as const, function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }],
    };
    const res = stream ? await openai.chat.completions.stream(body).finalChatCompletion() : await openai.chat.completions.create(body);
    const choice = res.choices[0]!;
    const call = choice.message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error(`no function tool call: ${JSON.stringify(choice.message)}`);
    return { id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments), finish: choice.finish_reason };
  },
};

const responses: Driver = {
  name: 'openai responses',
  endpoint: 'responses',
  keepsToolId: true,
  async text(stream, model = MODEL, maxTokens) {
    const body = { model, input: 'hi', ...(maxTokens ? { max_output_tokens: maxTokens } : {}) };
    if (!stream) return (await openai.responses.create(body)).output_text;
    let deltas = '';
    const s = openai.responses.stream(body);
    s.on('response.output_text.delta', (e) => (deltas += e.delta));
    const final = await s.finalResponse();
    if (final.output_text !== deltas) throw new Error(`deltas ${JSON.stringify(deltas)} != final ${JSON.stringify(final.output_text)}`);
    if (final.status !== 'completed') throw new Error(`status ${final.status}`);
    return deltas;
  },
  async tool(stream) {
    const body = {
      model: MODEL,
      input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: QUESTION }, { type: 'input_image' as const, image_url: `data:image/png;base64,${PNG}`, detail: 'auto' as const }] }],
      tools: [{ type: 'function' as const, name: TOOL.name, description: TOOL.description, parameters: TOOL.schema, strict: false }],
    };
    const res = stream ? await openai.responses.stream(body).finalResponse() : await openai.responses.create(body);
    const call = res.output.find((i) => i.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error(`no function_call item: ${JSON.stringify(res.output)}`);
    return { id: call.call_id, name: call.name, args: JSON.parse(call.arguments), finish: res.status };
  },
};

const messages: Driver = {
  name: 'anthropic',
  endpoint: 'messages',
  keepsToolId: true,
  async text(stream, model = MODEL, maxTokens = 1000) {
    const body = { model, max_tokens: maxTokens, messages: [{ role: 'user' as const, content: 'hi' }] };
    const textOf = (m: Anthropic.Message) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
    if (!stream) return textOf(await anthropic.messages.create(body));
    let deltas = '';
    const s = anthropic.messages.stream(body);
    s.on('text', (d) => (deltas += d));
    const final = await s.finalMessage();
    if (textOf(final) !== deltas) throw new Error(`deltas ${JSON.stringify(deltas)} != final ${JSON.stringify(textOf(final))}`);
    return deltas;
  },
  async tool(stream) {
    const body = {
      model: MODEL,
      max_tokens: 1000,
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: QUESTION }, { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: PNG } }] }],
      tools: [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema as Anthropic.Tool.InputSchema }],
    };
    const res = stream ? await anthropic.messages.stream(body).finalMessage() : await anthropic.messages.create(body);
    const call = res.content.find((b) => b.type === 'tool_use');
    if (call?.type !== 'tool_use') throw new Error(`no tool_use block: ${JSON.stringify(res.content)}`);
    return { id: call.id, name: call.name, args: call.input, finish: res.stop_reason ?? undefined };
  },
};

const gen: Driver = {
  name: 'gemini',
  endpoint: 'generate_content',
  keepsToolId: false,
  async text(stream, model = MODEL, maxTokens) {
    const req = { model, contents: 'hi', ...(maxTokens ? { config: { maxOutputTokens: maxTokens } } : {}) };
    if (!stream) return (await gemini.models.generateContent(req)).text ?? '';
    let text = '';
    for await (const c of await gemini.models.generateContentStream(req)) text += c.text ?? '';
    return text;
  },
  async tool(stream) {
    const req = {
      model: MODEL,
      contents: [{ role: 'user', parts: [{ text: QUESTION }, { inlineData: { mimeType: 'image/png', data: PNG } }] }],
      config: { tools: [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.schema }] }] },
    };
    let calls: { id?: string; name?: string; args?: unknown }[] = [];
    let finish: string | undefined;
    if (!stream) {
      const res = await gemini.models.generateContent(req);
      calls = res.functionCalls ?? [];
      finish = res.candidates?.[0]?.finishReason;
    } else {
      for await (const c of await gemini.models.generateContentStream(req)) {
        calls.push(...(c.functionCalls ?? []));
        finish = c.candidates?.[0]?.finishReason ?? finish;
      }
    }
    if (calls.length !== 1) throw new Error(`expected one functionCall, got ${JSON.stringify(calls)}`);
    return { id: calls[0]!.id, name: calls[0]!.name ?? '', args: calls[0]!.args, finish };
  },
};

const DRIVERS = [chat, responses, messages, gen];
const MODES = [false, true];
const mode = (stream: boolean) => (stream ? 'streamed' : 'non-streamed');

/** Run `fn` and return the one new row it produced for `endpoint`/`stream` (rows land shortly after the answer). */
async function newRow<T>(endpoint: string, stream: boolean, fn: () => Promise<T>): Promise<{ value: T; row: Record<string, unknown> }> {
  const where = `endpoint = '${endpoint}' AND stream = ${stream}`;
  const before = (await gw.rows(where)).length;
  const value = await fn();
  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows(where)).length > before);
  if (rows.length !== before + 1) throw new Error(`expected one new row, got ${rows.length - before}`);
  return { value, row: rows.at(-1)! };
}

function checkRow(t: Test, row: Record<string, unknown>, model = MODEL) {
  t.match(row, { status: 'success', http_status: 200, error_type: '', usage_source: 'reported', provider: 'anth', model }, 'row: success');
  t.same(buckets(row), BUCKETS, 'row buckets: input 20, cached 5, cache_write 7, output 9, reasoning null');
  t.equal(Number(row.total_tokens), TOTAL, 'total 41');
  t.equal(Number(row.cost), COST, 'cost = (20x3 + 5x0.3 + 7x3.75 + 9x15) / 1e6');
  t.equal(Number(row.list_cost), COST, 'list cost (paid group)');
}

/** What the gateway must have sent upstream for every request. */
function checkUpstreamRequest(t: Test, stream: boolean, { model = 'claude-sonnet-4-5', passthrough = false } = {}) {
  const r = up.received.at(-1)!;
  t.equal(r.path, '/v1/messages', 'POST /v1/messages on the origin');
  t.equal(r.headers['x-api-key'], FAKE_ANTHROPIC_KEY, 'configured key in x-api-key');
  // Same format: the SDK's own anthropic-version is forwarded; translated requests carry the gateway's.
  if (passthrough) t.match(r.headers['anthropic-version'], /^\d{4}-\d{2}-\d{2}$/, "the client's anthropic-version");
  else t.equal(r.headers['anthropic-version'], '2023-06-01', 'anthropic-version');
  t.notOk(r.headers.authorization, 'no Authorization header upstream');
  t.notOk(r.headers['x-goog-api-key'], 'the gateway key is not forwarded');
  t.equal(r.body.model, model, 'provider prefix removed');
  t.equal(typeof r.body.max_tokens, 'number', 'max_tokens always sent');
  t.equal(r.body.stream === true, stream, 'stream flag');
}

for (const d of DRIVERS) {
  t.test(`${d.name} -> anthropic`, async (t) => {
    const rowsByMode: Record<string, Record<string, unknown>> = {};
    for (const stream of MODES) {
      t.test(`(a)+(c) plain text, ${mode(stream)}`, async (t) => {
        up.next({ kind: 'ok' });
        const { value: text, row } = await newRow(d.endpoint, stream, () => d.text(stream));
        t.equal(text, TEXT, 'the answer arrives whole');
        checkUpstreamRequest(t, stream, { passthrough: d === messages });
        const sent = up.last();
        // Same format: the messages as the client wrote them; translated: Anthropic's block form.
        t.same(sent.messages, [{ role: 'user', content: d === messages ? 'hi' : [{ type: 'text', text: 'hi' }] }], 'the question, in Anthropic shape');
        t.notOk('thinking' in sent, 'no thinking without a suffix');
        checkRow(t, row);
        rowsByMode[mode(stream)] = row;
      });

      t.test(`(b) tool + image, ${mode(stream)}`, async (t) => {
        up.next({ kind: 'tool_use' });
        const { value: call, row } = await newRow(d.endpoint, stream, () => d.tool(stream));
        t.equal(call.name, TOOL.name, 'tool name');
        t.same(call.args, DEFAULT_TOOL_INPUT, 'arguments parsed');
        const upstreamId = `toolu_01Fake${String(up.received.length).padStart(4, '0')}Qw90lq917835`;
        if (d.keepsToolId) t.equal(call.id, upstreamId, 'the upstream tool_use id');
        const finish = { 'openai chat': 'tool_calls', 'openai responses': 'completed', anthropic: 'tool_use', gemini: 'STOP' }[d.name];
        t.equal(call.finish, finish, 'the client format finish value for a tool call');

        checkUpstreamRequest(t, stream, { passthrough: d === messages });
        const sent = up.last();
        t.same(sent.tools, [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema }], 'the tool in Anthropic shape');
        const msgs = sent.messages as { role: string; content: unknown }[];
        t.equal(msgs.length, 1);
        t.equal(msgs[0]!.role, 'user');
        t.same(
          msgs[0]!.content,
          [{ type: 'text', text: QUESTION }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }],
          'the image as a base64 image block, after the text',
        );
        checkRow(t, row);
      });
    }

    t.test('(c) streamed and non-streamed rows agree', async (t) => {
      const a = rowsByMode['non-streamed']!;
      const b = rowsByMode.streamed!;
      t.ok(a && b, 'both rows');
      t.same(buckets(b), buckets(a), 'same buckets');
      t.equal(Number(b.total_tokens), Number(a.total_tokens));
      t.equal(Number(b.cost), Number(a.cost), 'same cost');
      t.equal(a.stream, false);
      t.equal(b.stream, true);
      t.ok(b.ttft_ms !== null && Number(b.ttft_ms) >= 0, 'streamed row has a time to first token');
    });

    for (const stream of MODES) {
      t.test(`(d) thinking suffix (high), ${mode(stream)}`, async (t) => {
        up.next({ kind: 'thinking' });
        const { value: text, row } = await newRow(d.endpoint, stream, () => d.text(stream, `${MODEL}(high)`, 32000));
        t.equal(text, TEXT, 'the text after the thinking block, thinking not mixed in');
        checkUpstreamRequest(t, stream, { passthrough: d === messages });
        const sent = up.last();
        t.equal(sent.max_tokens, 32000, 'the client max tokens');
        const thinking = sent.thinking as { type: string; budget_tokens: number };
        t.equal(thinking?.type, 'enabled', 'thinking enabled');
        t.ok(Number.isInteger(thinking?.budget_tokens) && thinking.budget_tokens >= 1024 && thinking.budget_tokens < 32000, `budget ${thinking?.budget_tokens} within [1024, max_tokens)`);
        t.equal(row.model, MODEL, 'suffix removed from the recorded model');
        t.equal(row.requested_model, MODEL, 'suffix removed from requested_model');
        checkRow(t, row);

        up.next({ kind: 'ok' });
        t.equal(await d.text(stream, `${PLAIN}(high)`, 32000), TEXT);
        t.equal(up.last().model, 'claude-haiku-4-5');
        t.notOk('thinking' in up.last(), 'a model without the reasoning capability gets no thinking field');
      });
    }
  });
}

t.test('(d) every client gets the same budget for (high), and it is the documented anthropic-budget one', async (t) => {
  const budgets: Record<string, unknown> = {};
  for (const d of DRIVERS) {
    for (const stream of MODES) {
      up.next({ kind: 'ok' });
      await d.text(stream, `${MODEL}(high)`, 32000);
      budgets[`${d.name} ${mode(stream)}`] = (up.last().thinking as { budget_tokens?: number } | undefined)?.budget_tokens;
    }
  }
  const values = new Set(Object.values(budgets));
  t.equal(values.size, 1, `one budget for all clients: ${JSON.stringify(budgets)}`);
  // docs/thinking.md, anthropic-budget row: high = budget 24576 (clamped to [1024, 32000] and below max_tokens 32000).
  t.equal([...values][0], 24576, 'docs/thinking.md: anthropic-budget (high) is budget_tokens 24576');
});

t.test('the Anthropic client gets the thinking block and its signature back, streamed and not', async (t) => {
  for (const stream of MODES) {
    up.next({ kind: 'thinking' });
    const body = { model: `${MODEL}(high)`, max_tokens: 32000, messages: [{ role: 'user' as const, content: 'think' }] };
    const m = stream ? await anthropic.messages.stream(body).finalMessage() : await anthropic.messages.create(body);
    t.same(
      m.content.map((b) => b.type),
      ['thinking', 'text'],
      `${mode(stream)}: thinking then text`,
    );
    const th = m.content[0];
    t.equal(th?.type === 'thinking' ? th.thinking : '', DEFAULT_THINKING.join(''), `${mode(stream)}: thinking text`);
    t.equal(th?.type === 'thinking' ? th.signature : '', DEFAULT_SIGNATURE, `${mode(stream)}: signature kept`);
    t.equal(m.usage.output_tokens, 9, `${mode(stream)}: Anthropic output includes thinking`);
    t.equal(m.usage.input_tokens, 20);
    t.equal(m.usage.cache_read_input_tokens, 5);
    t.equal(m.usage.cache_creation_input_tokens, 7);
  }
});

t.test('message_delta that repeats the input-side usage (newer API versions) records the same buckets', async (t) => {
  up.next({ kind: 'ok', fullDeltaUsage: true });
  const { value: text, row } = await newRow('messages', true, () => messages.text(true));
  t.equal(text, TEXT);
  checkRow(t, row);
});
