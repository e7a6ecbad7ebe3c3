// Gemini 3 through Google's OpenAI-compatible endpoint (a `format: openai` provider) on the translated routes. The
// endpoint puts each tool call's thought signature in `extra_content.google.thought_signature` and refuses (400) a
// next request whose current-turn function calls come back without it. The fake upstream here does the same, on
// loopback under Google's host name: this file's process resolves `generativelanguage.googleapis.com` to 127.0.0.1
// (dns.lookup, which undici's connections use; every other name resolves as before), so the gateway's host rule
// (src/wire/openai/google.ts) sees Google's base_url. A second provider on 127.0.0.1 is any other OpenAI-compatible
// server: it must never receive `extra_content`.
// Each case: two turns through the gateway; what the client got on the first, and what the upstream received on the
// second (and that it answered).

import dns from 'node:dns';
import t from 'tap';
import { answerJson as json, answerSse as sse, listenLoopback, readJson as read } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const GOOGLE_HOST = 'generativelanguage.googleapis.com';
const original = dns.lookup;
type Callback = (err: Error | null, address?: unknown, family?: number) => void;
const lookup = (host: string, opts: unknown, cb?: Callback): void => {
  const done = (typeof opts === 'function' ? opts : cb) as Callback;
  if (host !== GOOGLE_HOST) return void (original as (...a: unknown[]) => void)(host, opts, cb);
  if (typeof opts === 'object' && opts !== null && (opts as { all?: boolean }).all) return done(null, [{ address: '127.0.0.1', family: 4 }]);
  done(null, '127.0.0.1', 4);
};
dns.lookup = lookup as typeof dns.lookup;
t.teardown(() => {
  dns.lookup = original;
});

const SIG = 'EjQKMgG+Pvb7fake/gemini3/openai-compat/signature==';
const PLACEHOLDER = 'skip_thought_signature_validator';
const TOOL = { name: 'get_weather', description: 'Weather for a city', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const ARGS = '{"city":"Paris"}';
const ANSWER = 'It is sunny in Paris.';

// The fake endpoint: a first turn gets a tool call with its signature (streamed as Google streams it: the call whole
// in one delta, without `index`); a turn that continues after tool calls is refused, on Google's host, when the
// current turn's first call lacks its signature, and otherwise answered.
const received: { host: string; body: Json }[] = [];
const up = await listenLoopback(t, async (req, res) => {
  const body = await read(req);
  const host = String(req.headers.host ?? '');
  received.push({ host, body });
  const messages = body.messages as Json[];
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const turn = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant' && Array.isArray(m.tool_calls));
  const base = { id: `chatcmpl-${received.length}`, created: 1, model: body.model };
  if (turn.length > 0) {
    if (host.startsWith(GOOGLE_HOST) && !turn.every((m) => typeof m.tool_calls[0]?.extra_content?.google?.thought_signature === 'string')) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify([{ error: { code: 400, message: 'Function call is missing a thought_signature in functionCall parts.', status: 'INVALID_ARGUMENT' } }]));
      return;
    }
    if (body.stream === true) {
      return sse(res, [
        { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: ANSWER }, finish_reason: 'stop' }] },
        { ...base, object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 } },
        'data: [DONE]\n\n',
      ]);
    }
    return json(res, { ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: ANSWER }, finish_reason: 'stop' }], usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 } });
  }
  const call = { id: 'call_w1', type: 'function', function: { name: TOOL.name, arguments: ARGS }, extra_content: { google: { thought_signature: SIG } } };
  if (body.stream === true) {
    return sse(res, [
      { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [call] }, finish_reason: null }] },
      { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { ...base, object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } },
      'data: [DONE]\n\n',
    ]);
  }
  return json(res, { ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
}, (err, res) => res.writeHead(500).end(String(err)));

const provider = (base_url: string) => ({
  group: 'paid', format: 'openai', base_url, auth: { type: 'api_key', key: 'k' }, price: { input: 1, output: 2 },
  models: { 'gemini-3-pro-preview': { kind: 'llm', capabilities: ['tools', 'reasoning'], thinking: 'gemini-level' } },
});
const gw = await startApp(t, {
  providers: {
    goog: provider(`http://${GOOGLE_HOST}:${up.port}/v1beta/openai`),
    plain: provider(`http://127.0.0.1:${up.port}/v1`),
  },
});

const post = async (path: string, body: unknown): Promise<{ status: number; text: string }> => {
  const r = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, text: await r.text() };
};
const dataOf = (text: string): Json[] => text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as Json);
/** The tool calls of the assistant turn the upstream received last. */
const lastSentCalls = (): Json[] => (received.at(-1)!.body.messages as Json[]).filter((m) => m.role === 'assistant').at(-1)!.tool_calls as Json[];

// --------------------------------------------------------------------------- Anthropic Messages (Claude Code's way)

t.test('an Anthropic client (no place for signatures): the next turn is accepted, with the placeholder', async (t) => {
  const tools = [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema }];
  for (const [prov, stream] of [['goog', false], ['goog', true], ['plain', false]] as const) {
    await t.test(`${prov}, ${stream ? 'streamed' : 'whole'}`, async (t) => {
      const model = `${prov}/gemini-3-pro-preview`;
      const question = { role: 'user', content: 'weather in Paris?' };
      const first = await post('/v1/messages', { model, max_tokens: 200, tools, stream, messages: [question] });
      t.equal(first.status, 200);
      t.ok(received.at(-1)!.host.startsWith(prov === 'goog' ? GOOGLE_HOST : '127.0.0.1'), `the upstream was called as ${received.at(-1)!.host}`);
      const use: Json | undefined = stream
        ? dataOf(first.text).find((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use')?.content_block
        : (JSON.parse(first.text) as Json).content.find((b: Json) => b.type === 'tool_use');
      t.match(use, { type: 'tool_use', id: 'call_w1', name: TOOL.name }, 'the client got the call');
      const second = await post('/v1/messages', {
        model, max_tokens: 200, tools, messages: [
          question,
          { role: 'assistant', content: [{ type: 'tool_use', id: use?.id, name: TOOL.name, input: JSON.parse(ARGS) }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use?.id, content: '18C, sunny' }] },
        ],
      });
      t.equal(second.status, 200, `the second turn was answered: ${second.text.slice(0, 200)}`);
      t.match(JSON.parse(second.text), { content: [{ type: 'text', text: ANSWER }] });
      const [call] = lastSentCalls();
      if (prov === 'goog') t.same(call?.extra_content, { google: { thought_signature: PLACEHOLDER } }, "Google's placeholder on the call");
      else t.same(Object.keys(call ?? {}).sort(), ['function', 'id', 'type'], 'another server gets no extra_content');
    });
  }
});

// ------------------------------------------------------------------------------------------------------ Gemini client

t.test('a Gemini client: the signature reaches it as thoughtSignature and goes back as extra_content', async (t) => {
  const tools = [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.schema }] }];
  for (const [prov, stream] of [['goog', false], ['goog', true], ['plain', false]] as const) {
    await t.test(`${prov}, ${stream ? 'streamed' : 'whole'}`, async (t) => {
      const path = `/v1beta/models/${prov}/gemini-3-pro-preview`;
      const question = { role: 'user', parts: [{ text: 'weather in Paris?' }] };
      const first = await post(stream ? `${path}:streamGenerateContent?alt=sse` : `${path}:generateContent`, { contents: [question], tools });
      t.equal(first.status, 200);
      const parts: Json[] = (stream ? dataOf(first.text) : [JSON.parse(first.text) as Json]).flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
      const call = parts.find((p) => p.functionCall);
      t.match(call, { functionCall: { name: TOOL.name, args: { city: 'Paris' } }, thoughtSignature: SIG }, 'the call, with its signature');
      const second = await post(`${path}:generateContent`, {
        tools, contents: [question, { role: 'model', parts }, { role: 'user', parts: [{ functionResponse: { name: TOOL.name, response: { weather: '18C, sunny' } } }] }],
      });
      t.equal(second.status, 200, `the second turn was answered: ${second.text.slice(0, 200)}`);
      t.equal((JSON.parse(second.text) as Json).candidates[0].content.parts[0].text, ANSWER);
      const [sent] = lastSentCalls();
      if (prov === 'goog') t.same(sent?.extra_content, { google: { thought_signature: SIG } }, 'the signature went back to Google');
      else t.same(Object.keys(sent ?? {}).sort(), ['function', 'id', 'type'], 'another server gets no extra_content');
    });
  }
});

// ----------------------------------------------------------------------------- Chat client on a translated route

t.test('a Chat client on a translated route (a thinking suffix): extra_content as Google sends it, and back', async (t) => {
  const tools = [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }];
  for (const stream of [false, true]) {
    await t.test(stream ? 'streamed' : 'whole', async (t) => {
      const model = 'goog/gemini-3-pro-preview(high)';
      const question = { role: 'user', content: 'weather in Paris?' };
      const first = await post('/v1/chat/completions', { model, tools, stream, messages: [question] });
      t.equal(first.status, 200);
      t.equal(received.at(-1)!.body.reasoning_effort, 'high', 'the translated route (the suffix became reasoning_effort)');
      let call: Json;
      if (stream) {
        const deltas = dataOf(first.text).flatMap((c) => (c.choices[0]?.delta?.tool_calls ?? []) as Json[]);
        t.same(deltas[0]?.extra_content, { google: { thought_signature: SIG } }, "on the call's first delta");
        call = { id: deltas[0]!.id, type: 'function', function: { name: deltas[0]!.function.name, arguments: deltas.map((d) => d.function?.arguments ?? '').join('') }, extra_content: deltas[0]!.extra_content };
      } else {
        call = (JSON.parse(first.text) as Json).choices[0].message.tool_calls[0];
        t.same(call.extra_content, { google: { thought_signature: SIG } }, 'on the call');
      }
      const second = await post('/v1/chat/completions', {
        model, tools, messages: [question, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '18C, sunny' }],
      });
      t.equal(second.status, 200, `the second turn was answered: ${second.text.slice(0, 200)}`);
      t.equal((JSON.parse(second.text) as Json).choices[0].message.content, ANSWER);
      t.same(lastSentCalls()[0]?.extra_content, { google: { thought_signature: SIG } }, 'the signature went back to Google');
    });
  }
});
