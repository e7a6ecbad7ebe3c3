// OpenAI custom (freeform) tools on translated routes (src/wire/custom-tool.ts): parsed from a Responses or a Chat
// client as a function of one required string `input` marked custom (history calls as `{"input": ...}` arguments,
// their outputs as tool results, a custom tool_choice as a forced tool); built as that function for Anthropic,
// Gemini and OpenAI Chat (the grammar in the parameter's description and listed as dropped, through buildFor) and as
// a custom tool for Responses; an upstream Responses custom_tool_call parsed back (whole and streamed); and a call
// marked custom rendered to a Responses or Chat client as a custom tool call with the `input` string, whole and
// streamed, or the raw arguments text when they are not an object with a string `input`.

import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import type { WireCodec } from '../../src/wire/codec.js';
import type { CanonicalEvent, CanonicalRequest, CanonicalResponse, Part } from '../../src/wire/canonical.js';
import { anthropicCodec } from '../../src/wire/anthropic/index.js';
import { geminiCodec } from '../../src/wire/gemini/index.js';
import { openaiCodec } from '../../src/wire/openai/codec.js';
import { responsesCodec } from '../../src/wire/openai-responses/index.js';
import { customInput, customToolNames, markCustomCalls, markCustomEvent } from '../../src/wire/custom-tool.js';
import { droppedParams } from '../../src/pipeline/forward.js';
import { buildFor } from '../../src/pipeline/upstream.js';
import type { Route } from '../../src/routing/resolve.js';
import { TollgateError } from '../../src/core/errors.js';
import { wireJson } from '../helpers/wire.js';

type Json = Record<string, unknown>;

const cfg = parseConfig(
  {
    providers: {
      oai: { group: 'paid', format: 'openai', base_url: 'https://api.openai.com/v1', auth: { type: 'api_key', key: 'k' }, models: { 'gpt-4o': {} } },
      resp: { group: 'paid', format: 'openai-responses', base_url: 'https://api.openai.com/v1', auth: { type: 'api_key', key: 'k' }, models: { 'gpt-4.1': {} } },
      anth: { group: 'paid', format: 'anthropic', base_url: 'https://api.anthropic.com', auth: { type: 'api_key', key: 'k' }, models: { 'claude-plain': {} } },
      gem: { group: 'paid', format: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', auth: { type: 'api_key', key: 'k' }, models: { 'gemini-2.5-flash': {} } },
    },
  },
  {},
);
const CODECS = { oai: openaiCodec, resp: responsesCodec, anth: anthropicCodec, gem: geminiCodec } as const;
type Provider = keyof typeof CODECS;
const MODELS: Record<Provider, string> = { oai: 'gpt-4o', resp: 'gpt-4.1', anth: 'claude-plain', gem: 'gemini-2.5-flash' };

const route = (p: Provider): Route => ({ providerId: p, provider: cfg.providers[p]!, modelId: MODELS[p], model: `${p}/${MODELS[p]}`, modelConfig: cfg.providers[p]!.models[MODELS[p]] ?? null });

/** The client's body sent to `p` the way forward does (buildFor): the upstream body and the dropped listing. */
function send(client: WireCodec, body: Json, p: Provider): { json: Json; listed: string[]; req: CanonicalRequest } {
  const req = client.parseRequest(body);
  const built = buildFor(CODECS[p], route(p), req);
  return { json: wireJson(built.body), listed: droppedParams(client.paramNames, req, built.dropped), req };
}

const GRAMMAR = 'start: "*** Begin Patch" LF body "*** End Patch"';
const PATCH = '*** Begin Patch\n+a "quoted" line\n*** End Patch';
const RESP_TOOL = { type: 'custom', name: 'apply_patch', description: 'Apply a patch', format: { type: 'grammar', syntax: 'lark', definition: GRAMMAR } };
const CHAT_TOOL = { type: 'custom', custom: { name: 'apply_patch', description: 'Apply a patch', format: { type: 'grammar', grammar: { syntax: 'lark', definition: GRAMMAR } } } };
const ARGS = JSON.stringify({ input: PATCH });

const respBody = (extra: Json = {}): Json => ({ model: 'm', input: 'patch it', tools: [RESP_TOOL], ...extra });
const chatBody = (extra: Json = {}): Json => ({ model: 'm', messages: [{ role: 'user', content: 'patch it' }], tools: [CHAT_TOOL], ...extra });

t.test('parse: a Responses and a Chat custom tool become the same canonical function of one string `input`', async (t) => {
  const a = responsesCodec.parseRequest(respBody());
  const b = openaiCodec.parseRequest(chatBody());
  t.same(a.tools, b.tools);
  const tool = a.tools![0]!;
  t.equal(tool.name, 'apply_patch');
  t.equal(tool.description, 'Apply a patch');
  t.same(tool.custom, { grammar: { syntax: 'lark', definition: GRAMMAR } });
  t.match(tool.parameters, { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] });
  t.match((tool.parameters as { properties: { input: { description: string } } }).properties.input.description, GRAMMAR);
  t.equal(a.unmapped, undefined, 'no longer listed as tools.custom at parse time');
  const text = responsesCodec.parseRequest(respBody({ tools: [{ type: 'custom', name: 'shell', format: { type: 'text' } }] })).tools![0]!;
  t.same(text.custom, {});
  t.equal(text.description, undefined);
});

/** The code and param of the TollgateError `f` throws. */
function param(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof TollgateError) return `${e.code} ${String(e.param)}`;
    throw e;
  }
  return undefined;
}

t.test('parse: malformed custom tools are 400s naming the field; other Chat tool types still are', async (t) => {
  t.equal(param(() => responsesCodec.parseRequest(respBody({ tools: [{ type: 'custom' }] }))), 'TOLLGATE_ERR_INVALID_REQUEST tools[0].name');
  t.equal(param(() => responsesCodec.parseRequest(respBody({ tools: [{ ...RESP_TOOL, format: { type: 'grammar', syntax: 'ebnf', definition: 'x' } }] }))), 'TOLLGATE_ERR_INVALID_REQUEST tools[0].format.syntax');
  t.equal(param(() => openaiCodec.parseRequest(chatBody({ tools: [{ type: 'custom', custom: { description: 'x' } }] }))), 'TOLLGATE_ERR_INVALID_REQUEST tools[0].custom.name');
  t.equal(param(() => openaiCodec.parseRequest(chatBody({ tools: [{ type: 'custom', custom: { name: 'x', format: { type: 'grammar', grammar: { syntax: 'lark' } } } }] }))), 'TOLLGATE_ERR_INVALID_REQUEST tools[0].custom.format.grammar.definition');
  t.equal(param(() => openaiCodec.parseRequest(chatBody({ tools: [{ type: 'custom', custom: { name: 'x', format: { type: 'grammar', grammar: { syntax: 'ebnf', definition: 'x' } } } }] }))), 'TOLLGATE_ERR_INVALID_REQUEST tools[0].custom.format.grammar.syntax', "a Chat grammar's field is named where the client put it");
  t.equal(param(() => openaiCodec.parseRequest(chatBody({ tools: [{ type: 'mcp' }] }))), 'TOLLGATE_ERR_INVALID_REQUEST tools[0]');
});

t.test('parse: history calls and outputs of a custom tool, and a custom tool_choice', async (t) => {
  const call: Part = { type: 'tool_call', id: 'call_1', name: 'apply_patch', arguments: ARGS, custom: true };
  const result: Part = { type: 'tool_result', callId: 'call_1', name: 'apply_patch', content: [{ type: 'text', text: 'Done' }] };
  const a = responsesCodec.parseRequest(respBody({
    tool_choice: { type: 'custom', name: 'apply_patch' },
    input: [
      { role: 'user', content: 'patch it' },
      { type: 'custom_tool_call', call_id: 'call_1', name: 'apply_patch', input: PATCH },
      { type: 'custom_tool_call_output', call_id: 'call_1', output: 'Done' },
    ],
  }));
  t.same(a.messages.slice(1), [{ role: 'assistant', content: [call] }, { role: 'user', content: [result] }]);
  t.same(a.toolChoice, { type: 'tool', name: 'apply_patch' });
  const b = openaiCodec.parseRequest(chatBody({
    tool_choice: { type: 'custom', custom: { name: 'apply_patch' } },
    messages: [
      { role: 'user', content: 'patch it' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'custom', custom: { name: 'apply_patch', input: PATCH } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Done' },
    ],
  }));
  t.same(b.messages.slice(1), a.messages.slice(1));
  t.same(b.toolChoice, a.toolChoice);
  const allowed = responsesCodec.parseRequest(respBody({ tools: [RESP_TOOL, { type: 'function', name: 'f' }], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'custom', name: 'apply_patch' }] } }));
  t.same(allowed.tools!.map((x) => x.name), ['apply_patch']);
  t.equal(param(() => responsesCodec.parseRequest(respBody({ input: [{ type: 'custom_tool_call', call_id: 'c', name: 'n' }] }))), 'TOLLGATE_ERR_INVALID_REQUEST input[0].input');
});

t.test('build: Anthropic, Gemini and Chat get the function (grammar listed as dropped); Responses the custom tool', async (t) => {
  const anth = send(responsesCodec, respBody(), 'anth');
  t.match(anth.json.tools, [{ name: 'apply_patch', description: 'Apply a patch', input_schema: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] } }]);
  t.same(anth.listed, ['tools.custom.format']);
  const gem = send(openaiCodec, chatBody(), 'gem');
  t.match(gem.json.tools, [{ functionDeclarations: [{ name: 'apply_patch', description: 'Apply a patch' }] }]);
  t.same(gem.listed, ['tools.custom.format']);
  const oai = send(responsesCodec, respBody({ tool_choice: { type: 'custom', name: 'apply_patch' } }), 'oai');
  t.match(oai.json.tools, [{ type: 'function', function: { name: 'apply_patch', parameters: { required: ['input'] } } }]);
  t.same(oai.json.tool_choice, { type: 'function', function: { name: 'apply_patch' } });
  t.same(oai.listed, ['tools.custom.format']);
  t.same(send(responsesCodec, respBody({ tools: [{ type: 'custom', name: 'shell' }] }), 'anth').listed, [], 'no grammar, nothing dropped');

  const resp = send(openaiCodec, chatBody({
    tool_choice: { type: 'custom', custom: { name: 'apply_patch' } },
    messages: [
      { role: 'user', content: 'patch it' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'custom', custom: { name: 'apply_patch', input: PATCH } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Done' },
    ],
  }), 'resp');
  t.same(resp.json.tools, [{ type: 'custom', name: 'apply_patch', description: 'Apply a patch', format: { type: 'grammar', syntax: 'lark', definition: GRAMMAR } }]);
  t.same(resp.json.tool_choice, { type: 'custom', name: 'apply_patch' });
  t.same((resp.json.input as Json[]).slice(1), [
    { type: 'custom_tool_call', call_id: 'call_1', name: 'apply_patch', input: PATCH },
    { type: 'custom_tool_call_output', call_id: 'call_1', output: 'Done' },
  ]);
  t.same(resp.listed, [], 'a Responses upstream takes the grammar');

  const second = send(responsesCodec, respBody({
    input: [{ role: 'user', content: 'patch it' }, { type: 'custom_tool_call', call_id: 'toolu_1', name: 'apply_patch', input: PATCH }, { type: 'custom_tool_call_output', call_id: 'toolu_1', output: 'Done' }],
  }), 'anth');
  t.match((second.json.messages as Json[]).slice(1), [
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'apply_patch', input: { input: PATCH } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1' }] },
  ]);
});

const answer = (args: string, custom = true): CanonicalResponse => ({
  id: 'resp_1', model: 'm', stopReason: 'tool_calls', usage: null,
  content: [{ type: 'text', text: 'Patching.' }, { type: 'tool_call', id: 'call_1', name: 'apply_patch', arguments: args, ...(custom ? { custom: true } : {}) }],
});

t.test('marking: calls of the declared custom names are marked, whole and streamed', async (t) => {
  const names = customToolNames(responsesCodec.parseRequest(respBody({ tools: [RESP_TOOL, { type: 'function', name: 'f' }] })));
  t.same([...names], ['apply_patch']);
  const marked = markCustomCalls({ ...answer(ARGS, false), content: [...answer(ARGS, false).content, { type: 'tool_call', id: 'c2', name: 'f', arguments: '{}' }] }, names);
  t.same(marked.content.map((p) => (p.type === 'tool_call' ? p.custom === true : null)), [null, true, false]);
  const plain = answer(ARGS, false);
  t.equal(markCustomCalls(plain, new Set()), plain, 'no custom tools: untouched');
  t.match(markCustomEvent({ type: 'tool_call_start', index: 1, id: 'c', name: 'apply_patch' }, names), { custom: true });
  t.notMatch(markCustomEvent({ type: 'tool_call_start', index: 1, id: 'c', name: 'f' }, names), { custom: true });
});

t.test('customInput: the string `input`, else the raw arguments text', async (t) => {
  t.equal(customInput(ARGS), PATCH);
  t.equal(customInput('{"input": 3}'), '{"input": 3}');
  t.equal(customInput('{"patch": "x"}'), '{"patch": "x"}');
  t.equal(customInput('not json'), 'not json');
  t.equal(customInput(''), '');
});

t.test('render whole: a Responses custom_tool_call item and a Chat custom tool call', async (t) => {
  const out = (responsesCodec.renderResponse(answer(ARGS), 'm') as { output: Json[] }).output;
  t.same(out[1], { id: 'ctc_1', type: 'custom_tool_call', status: 'completed', call_id: 'call_1', name: 'apply_patch', input: PATCH });
  t.match((responsesCodec.renderResponse(answer('{"oops":1}'), 'm') as { output: Json[] }).output[1], { type: 'custom_tool_call', input: '{"oops":1}' });
  t.match((responsesCodec.renderResponse(answer(ARGS, false), 'm') as { output: Json[] }).output[1], { type: 'function_call', arguments: ARGS });
  const chat = openaiCodec.renderResponse(answer(ARGS), 'm') as { choices: { message: Json; finish_reason: string }[] };
  t.same(chat.choices[0]!.message.tool_calls, [{ id: 'call_1', type: 'custom', custom: { name: 'apply_patch', input: PATCH } }]);
  t.equal(chat.choices[0]!.finish_reason, 'tool_calls');
});

const callEvents = (args: string[]): CanonicalEvent[] => [
  { type: 'start', id: 'resp_1', model: 'm' },
  { type: 'tool_call_start', index: 0, id: 'call_1', name: 'apply_patch', custom: true },
  ...args.map((a): CanonicalEvent => ({ type: 'tool_call_delta', index: 0, arguments: a })),
  { type: 'block_stop', index: 0 },
  { type: 'finish', stopReason: 'tool_calls' },
];

function sse(text: string): Json[] {
  return text.split('\n\n').flatMap((f) => {
    const data = f.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
    return data === undefined || data === '[DONE]' ? [] : [JSON.parse(data) as Json];
  });
}

t.test('render streamed (Responses): item added, one input delta, input done, item done', async (t) => {
  const r = responsesCodec.createStreamRenderer('m');
  const frames = sse(callEvents([ARGS.slice(0, 9), ARGS.slice(9)]).map((e) => r.event(e)).join('') + r.end());
  const kinds = frames.map((f) => f.type);
  t.same(kinds, ['response.created', 'response.in_progress', 'response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done', 'response.completed']);
  t.same(frames[2]!.item, { id: 'ctc_1', type: 'custom_tool_call', status: 'in_progress', call_id: 'call_1', name: 'apply_patch', input: '' });
  t.match(frames[3], { item_id: 'ctc_1', output_index: 0, delta: PATCH });
  t.match(frames[4], { item_id: 'ctc_1', output_index: 0, input: PATCH });
  t.same(frames[5]!.item, { id: 'ctc_1', type: 'custom_tool_call', status: 'completed', call_id: 'call_1', name: 'apply_patch', input: PATCH });
  t.match(frames[6]!.response, { status: 'completed', output: [{ type: 'custom_tool_call', input: PATCH }] });
  const raw = responsesCodec.createStreamRenderer('m');
  const rawFrames = sse(callEvents(['[1,', '2]']).map((e) => raw.event(e)).join('') + raw.end());
  t.match(rawFrames.find((f) => f.type === 'response.custom_tool_call_input.done'), { input: '[1,2]' });
});

t.test('render streamed (Chat): the custom call goes out whole at its block_stop', async (t) => {
  const r = openaiCodec.createStreamRenderer('m');
  const chunks = sse(callEvents([ARGS.slice(0, 5), ARGS.slice(5)]).map((e) => r.event(e)).join('') + r.end());
  const calls = chunks.flatMap((c) => ((c.choices as { delta: { tool_calls?: unknown[] } }[])[0]?.delta.tool_calls ?? []));
  t.same(calls, [{ index: 0, id: 'call_1', type: 'custom', custom: { name: 'apply_patch', input: PATCH } }]);
  t.equal((chunks.at(-1)!.choices as { finish_reason: string }[])[0]!.finish_reason, 'tool_calls');
});

t.test('parse upstream Responses: a custom_tool_call item, whole and streamed, is a custom call', async (t) => {
  const item = { id: 'ctc_9', type: 'custom_tool_call', status: 'completed', call_id: 'call_9', name: 'apply_patch', input: PATCH };
  const whole = responsesCodec.parseResponse({ id: 'resp_9', model: 'gpt-5', status: 'completed', output: [item] });
  t.same(whole.content, [{ type: 'tool_call', id: 'call_9', name: 'apply_patch', arguments: ARGS, custom: true }]);
  t.equal(whole.stopReason, 'tool_calls');

  const p = responsesCodec.createStreamParser();
  const frame = (data: Json) => p.frame({ event: data.type as string, data: JSON.stringify(data), id: null });
  const events = [
    ...frame({ type: 'response.created', response: { id: 'resp_9', model: 'gpt-5', status: 'in_progress', output: [] } }),
    ...frame({ type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', input: '' } }),
    ...frame({ type: 'response.custom_tool_call_input.delta', output_index: 0, item_id: 'ctc_9', delta: PATCH.slice(0, 4) }),
    ...frame({ type: 'response.custom_tool_call_input.delta', output_index: 0, item_id: 'ctc_9', delta: PATCH.slice(4) }),
    ...frame({ type: 'response.custom_tool_call_input.done', output_index: 0, item_id: 'ctc_9', input: PATCH }),
    ...frame({ type: 'response.output_item.done', output_index: 0, item }),
    ...frame({ type: 'response.completed', response: { id: 'resp_9', model: 'gpt-5', status: 'completed', output: [item] } }),
  ];
  const calls = events.filter((e) => e.type.startsWith('tool_call') || e.type === 'block_stop' || e.type === 'finish');
  t.same(calls, [
    { type: 'tool_call_start', index: 0, id: 'call_9', name: 'apply_patch', custom: true },
    { type: 'tool_call_delta', index: 0, arguments: ARGS },
    { type: 'block_stop', index: 0 },
    { type: 'finish', stopReason: 'tool_calls' },
  ]);
});
