// Translation carries what maps (issue 14, item 2): for each field, the upstream body each target format's build
// makes from a client request of each format, what it reports as dropped (BuildNotes) and what it refuses; the
// answer side (logprobs, several choices, a response format sent as a forced tool); and the dropped-parameters
// list a client is given, under its own names.

import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import type { BuiltRequest, Target, WireCodec } from '../../src/wire/codec.js';
import { anthropicCodec } from '../../src/wire/anthropic/index.js';
import { geminiCodec } from '../../src/wire/gemini/index.js';
import { openaiCodec } from '../../src/wire/openai/codec.js';
import { responsesCodec } from '../../src/wire/openai-responses/index.js';
import { AnswerToolEvents, unwrapAnswerTool } from '../../src/wire/answer-tool.js';
import type { CanonicalEvent, CanonicalRequest, CanonicalResponse } from '../../src/wire/canonical.js';
import { fitCapabilities } from '../../src/wire/capabilities.js';
import { droppedParams } from '../../src/pipeline/forward.js';
import { wireJson } from '../helpers/wire.js';

const cfg = parseConfig(
  {
    providers: {
      oai: { group: 'paid', format: 'openai', base_url: 'https://api.openai.com/v1', auth: { type: 'api_key', key: 'k' }, models: { 'gpt-4.1': {} } },
      resp: { group: 'paid', format: 'openai-responses', base_url: 'https://api.openai.com/v1', auth: { type: 'api_key', key: 'k' }, models: { 'gpt-4.1': {} } },
      anth: {
        group: 'paid', format: 'anthropic', base_url: 'https://api.anthropic.com', auth: { type: 'api_key', key: 'k' },
        models: {
          'claude-haiku-4-5': {},
          'claude-sonnet-4-5': { capabilities: ['tools', 'reasoning', 'structured_output'] },
        },
      },
      gem: { group: 'paid', format: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', auth: { type: 'api_key', key: 'k' }, models: { 'gemini-2.5-flash': {} } },
    },
  },
  {},
);

const TARGETS = {
  openai: { codec: openaiCodec, provider: 'oai', model: 'gpt-4.1' },
  'openai-responses': { codec: responsesCodec, provider: 'resp', model: 'gpt-4.1' },
  anthropic: { codec: anthropicCodec, provider: 'anth', model: 'claude-haiku-4-5' },
  gemini: { codec: geminiCodec, provider: 'gem', model: 'gemini-2.5-flash' },
} as const;
type Format = keyof typeof TARGETS;

function target(format: Format, modelId: string = TARGETS[format].model): Target {
  const provider = cfg.providers[TARGETS[format].provider]!;
  return { providerId: TARGETS[format].provider, provider, modelId, model: provider.models[modelId] ?? null };
}

/** The upstream request `format` builds, with its body as the upstream parses it. */
function build(req: CanonicalRequest, format: Format, modelId?: string): BuiltRequest & { json: Record<string, unknown> } {
  const up = TARGETS[format].codec.buildRequest(req, target(format, modelId));
  return { ...up, json: wireJson(up.body) };
}

const chat = (extra: Record<string, unknown>): CanonicalRequest => openaiCodec.parseRequest({ model: 'x/m', messages: [{ role: 'user', content: 'hi' }], ...extra });
const responses = (extra: Record<string, unknown>): CanonicalRequest => responsesCodec.parseRequest({ model: 'x/m', input: 'hi', ...extra });
const anthropic = (extra: Record<string, unknown>): CanonicalRequest => anthropicCodec.parseRequest({ model: 'x/m', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...extra });
const gemini = (extra: Record<string, unknown>): CanonicalRequest => geminiCodec.parseRequest({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...extra });

const EPHEMERAL = { type: 'ephemeral' };
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };

t.test('cache_control: kept in the canonical model, written for Anthropic, dropped and listed elsewhere', async (t) => {
  const req = anthropic({
    system: [{ type: 'text', text: 'long system prompt', cache_control: EPHEMERAL }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'doc', cache_control: { type: 'ephemeral', ttl: '1h' } }, { type: 'text', text: 'question' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {}, cache_control: EPHEMERAL }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok', cache_control: EPHEMERAL }] },
    ],
    tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: EPHEMERAL }],
  });
  t.strictSame(req.system, [{ type: 'text', text: 'long system prompt', cacheControl: EPHEMERAL }]);
  t.strictSame(req.tools?.[0]?.cacheControl, EPHEMERAL);

  const up = build(req, 'anthropic');
  t.strictSame(up.json.system, [{ type: 'text', text: 'long system prompt', cache_control: EPHEMERAL }], 'a single system block keeps its block form for its marker');
  t.strictSame(up.json.messages, [
    { role: 'user', content: [{ type: 'text', text: 'doc', cache_control: { type: 'ephemeral', ttl: '1h' } }, { type: 'text', text: 'question' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {}, cache_control: EPHEMERAL }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok', cache_control: EPHEMERAL }] },
  ]);
  t.strictSame(up.json.tools, [{ name: 'f', input_schema: { type: 'object' }, cache_control: EPHEMERAL }]);
  t.strictSame(up.dropped, [], 'nothing dropped for Anthropic');

  for (const format of ['openai', 'openai-responses', 'gemini'] as const) {
    const other = build(req, format);
    t.notOk(JSON.stringify(other.json).includes('cache'), `${format}: no marker in the body`);
    t.ok(other.dropped.includes('cacheControl'), `${format}: listed as dropped`);
  }

  const fromChat = chat({
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'sys', cache_control: EPHEMERAL }] },
      { role: 'user', content: [{ type: 'text', text: 'big doc', cache_control: EPHEMERAL }, { type: 'text', text: 'q' }] },
    ],
  });
  const toAnthropic = build(fromChat, 'anthropic');
  t.strictSame(toAnthropic.json.system, [{ type: 'text', text: 'sys', cache_control: EPHEMERAL }], "a Chat client's OpenRouter-style marker reaches Anthropic");
  t.strictSame(toAnthropic.json.messages, [{ role: 'user', content: [{ type: 'text', text: 'big doc', cache_control: EPHEMERAL }, { type: 'text', text: 'q' }] }]);
  t.throws(() => anthropic({ system: [{ type: 'text', text: 's', cache_control: { type: 'forever' } }] }), { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'system[0].cache_control' });
});

t.test('prompt_cache_key: Chat <-> Responses, dropped for Anthropic and Gemini', async (t) => {
  t.equal(build(chat({ prompt_cache_key: 'session-1' }), 'openai-responses').json.prompt_cache_key, 'session-1');
  t.equal(build(responses({ prompt_cache_key: 'session-2' }), 'openai').json.prompt_cache_key, 'session-2');
  for (const format of ['anthropic', 'gemini'] as const) {
    const up = build(chat({ prompt_cache_key: 'session-1' }), format);
    t.notOk(JSON.stringify(up.json).includes('session-1'), `${format}: not sent`);
    t.strictSame(up.dropped, ['promptCacheKey'], `${format}: listed`);
  }
});

t.test('logprobs: Chat, Responses and Gemini map to each other; Anthropic drops them', async (t) => {
  const fromChat = chat({ logprobs: true, top_logprobs: 3 });
  t.strictSame([fromChat.logprobs, fromChat.topLogprobs], [true, 3]);
  const r = build(fromChat, 'openai-responses').json;
  t.strictSame([r.include, r.top_logprobs], [['message.output_text.logprobs'], 3]);
  t.strictSame(build(fromChat, 'gemini').json.generationConfig, { responseLogprobs: true, logprobs: 3 });
  const c = build(responses({ include: ['message.output_text.logprobs'], top_logprobs: 2 }), 'openai').json;
  t.strictSame([c.logprobs, c.top_logprobs], [true, 2]);
  const g = build(gemini({ generationConfig: { responseLogprobs: true, logprobs: 4 } }), 'openai').json;
  t.strictSame([g.logprobs, g.top_logprobs], [true, 4]);
  const a = build(fromChat, 'anthropic');
  t.notOk('logprobs' in a.json);
  t.strictSame(a.dropped, ['logprobs', 'topLogprobs']);
  t.strictSame(chat({ logprobs: false, top_logprobs: 3 }).logprobs, undefined, 'top_logprobs without logprobs asks for nothing');
});

t.test('n / candidateCount: several answers from Chat and Gemini, a 400 for Anthropic and Responses, 1 passes', async (t) => {
  t.equal(build(chat({ n: 2 }), 'gemini').json.generationConfig && (build(chat({ n: 2 }), 'gemini').json.generationConfig as Record<string, unknown>).candidateCount, 2);
  t.equal(build(chat({ n: 3 }), 'openai').json.n, 3);
  t.equal(build(gemini({ generationConfig: { candidateCount: 2 } }), 'openai').json.n, 2);
  for (const format of ['anthropic', 'openai-responses'] as const) {
    const up = build(chat({ n: 2 }), format);
    t.match(up.refused, { field: 'n', reason: /one answer/ }, `${format}: refused`);
  }
  t.match(build(chat({ n: 2, stream: true }), 'gemini').refused, { field: 'n', reason: /streamed/ }, 'several answers are whole answers only');
  for (const format of Object.keys(TARGETS) as Format[]) {
    const up = build(chat({ n: 1 }), format);
    t.equal(up.refused, undefined, `n = 1 to ${format} passes`);
    t.notOk(JSON.stringify(up.json).includes('candidateCount') || 'n' in up.json, `n = 1 to ${format}: nothing sent`);
  }
});

t.test('seed and stop: carried where the target has a field, dropped and listed where not', async (t) => {
  const req = chat({ seed: 7, stop: ['END', ' '] });
  const a = build(req, 'anthropic');
  t.strictSame(a.json.stop_sequences, ['END']);
  t.notOk('seed' in a.json);
  t.strictSame(a.dropped, ['stop', 'seed'], 'the whitespace-only stop sequence and the seed are listed');
  const g = build(req, 'gemini').json.generationConfig as Record<string, unknown>;
  t.strictSame([g.seed, g.stopSequences], [7, ['END', ' ']]);
  const r = build(req, 'openai-responses');
  t.notOk('seed' in r.json || 'stop' in r.json);
  t.strictSame([...r.dropped].sort(), ['seed', 'stop']);
  const fromGemini = build(gemini({ generationConfig: { seed: 9, stopSequences: ['x'], topK: 5 } }), 'openai');
  t.strictSame([fromGemini.json.seed, fromGemini.json.stop, fromGemini.dropped], [9, ['x'], ['topK']]);
  t.strictSame(build(anthropic({ stop_sequences: ['STOP'] }), 'openai').json.stop, ['STOP']);
});

t.test('response_format: Anthropic gets a forced json_response tool (or output_config.format), Gemini a response schema', async (t) => {
  const req = chat({ response_format: { type: 'json_schema', json_schema: { name: 'city', schema: SCHEMA } } });
  const a = build(req, 'anthropic');
  t.strictSame(a.json.tools, [{ name: 'json_response', description: 'Give the answer as the input of this tool, in the JSON form its schema describes.', input_schema: SCHEMA }]);
  t.strictSame(a.json.tool_choice, { type: 'tool', name: 'json_response' });
  t.equal(a.answerTool, 'json_response', 'the call is the answer');
  t.strictSame(a.dropped, []);

  const structured = build(req, 'anthropic', 'claude-sonnet-4-5');
  t.strictSame(structured.json.output_config, { format: { type: 'json_schema', schema: SCHEMA } }, 'a model with structured outputs gets output_config.format');
  t.equal(structured.answerTool, undefined);

  const obj = build(chat({ response_format: { type: 'json_object' } }), 'anthropic');
  t.strictSame(obj.json.tools, [{ name: 'json_response', description: 'Give the answer as the input of this tool, in the JSON form its schema describes.', input_schema: { type: 'object' } }], 'json_object: any object');

  const withTools = build(chat({ response_format: { type: 'json_object' }, tools: [{ type: 'function', function: { name: 'f' } }] }), 'anthropic');
  t.strictSame((withTools.json.tools as { name: string }[]).map((x) => x.name), ['f'], 'with tools of its own, no forced answer tool');
  t.strictSame(withTools.dropped, ['responseFormat'], 'and the format is listed');

  const thinking = build({ ...req, thinking: { kind: 'level', level: 'high' } }, 'anthropic', 'claude-sonnet-4-5');
  t.ok('thinking' in thinking.json, 'output_config.format forces no tool: thinking stays');
  const forcedThinking = build({ ...chat({ response_format: { type: 'json_object' } }), thinking: { kind: 'budget', tokens: 2000 } }, 'anthropic', 'claude-sonnet-4-5');
  t.notOk('thinking' in forcedThinking.json, 'no thinking with a forced tool');
  t.ok(forcedThinking.dropped.includes('thinking'), 'and the thinking level is listed');

  const g = build(req, 'gemini').json.generationConfig;
  t.strictSame(g, { responseMimeType: 'application/json', responseJsonSchema: SCHEMA });
});

t.test('parallel_tool_calls: Chat/Responses carry it, Anthropic maps it, Gemini drops it', async (t) => {
  const req = chat({ tools: [{ type: 'function', function: { name: 'f' } }], parallel_tool_calls: false });
  t.strictSame(build(req, 'anthropic').json.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
  t.equal(build(req, 'openai-responses').json.parallel_tool_calls, false);
  t.equal(build(anthropic({ tools: [{ name: 'f', input_schema: { type: 'object' } }], tool_choice: { type: 'any', disable_parallel_tool_use: true } }), 'openai').json.parallel_tool_calls, false);
  t.strictSame(build(req, 'gemini').dropped, ['parallelToolCalls']);
});

t.test('service_tier: Chat <-> Responses, auto and standard_only to Anthropic, the rest dropped', async (t) => {
  t.equal(build(chat({ service_tier: 'flex' }), 'openai-responses').json.service_tier, 'flex');
  t.equal(build(responses({ service_tier: 'priority' }), 'openai').json.service_tier, 'priority');
  t.equal(build(chat({ service_tier: 'auto' }), 'anthropic').json.service_tier, 'auto');
  const flex = build(chat({ service_tier: 'flex' }), 'anthropic');
  t.notOk('service_tier' in flex.json);
  t.strictSame(flex.dropped, ['serviceTier']);
  t.equal(build(anthropic({ service_tier: 'auto' }), 'openai').json.service_tier, 'auto');
  t.strictSame(build(anthropic({ service_tier: 'standard_only' }), 'openai').dropped, ['serviceTier']);
  t.strictSame(build(chat({ service_tier: 'auto' }), 'gemini').dropped, ['serviceTier']);
});

t.test('user and metadata: Anthropic metadata.user_id, Chat/Responses user and metadata, Gemini none', async (t) => {
  const req = chat({ user: 'u-1', metadata: { team: 'a' } });
  const a = build(req, 'anthropic');
  t.strictSame(a.json.metadata, { user_id: 'u-1' });
  t.strictSame(a.dropped, ['metadata'], 'metadata other than the user id is listed');
  const r = build(req, 'openai-responses').json;
  t.strictSame([r.user, r.metadata], ['u-1', { team: 'a' }]);
  t.strictSame([...build(req, 'gemini').dropped].sort(), ['metadata', 'user']);
  t.equal(chat({ safety_identifier: 'hash-1' }).user, 'hash-1', 'safety_identifier names the end user');
  t.equal(build(anthropic({ metadata: { user_id: 'u-2' } }), 'openai').json.user, 'u-2');
});

t.test('logit_bias and prediction: a Chat target carries them, the others list them', async (t) => {
  const req = chat({ logit_bias: { '50256': -100 }, prediction: { type: 'content', content: [{ type: 'text', text: 'old code' }] } });
  const c = build(req, 'openai').json;
  t.strictSame([c.logit_bias, c.prediction], [{ '50256': -100 }, { type: 'content', content: 'old code' }]);
  for (const format of ['openai-responses', 'anthropic', 'gemini'] as const) {
    t.strictSame([...build(req, format).dropped].sort(), ['logitBias', 'prediction'], format);
  }
});

t.test('built-in web search: Responses web_search <-> Anthropic web_search server tool <-> Gemini googleSearch', async (t) => {
  const fromResponses = responses({ tools: [{ type: 'web_search' }] });
  t.strictSame(fromResponses.builtinTools, [{ type: 'web_search' }]);
  t.strictSame(build(fromResponses, 'anthropic').json.tools, [{ type: 'web_search_20250305', name: 'web_search' }]);
  t.strictSame(build(fromResponses, 'gemini').json.tools, [{ googleSearch: {} }]);
  const chatUp = build(fromResponses, 'openai');
  t.notOk('tools' in chatUp.json || 'web_search_options' in chatUp.json, 'Chat: not sent');
  t.strictSame(chatUp.dropped, ['webSearch']);
  t.strictSame(build(anthropic({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }), 'openai-responses').json.tools, [{ type: 'web_search' }]);
  t.strictSame(build(gemini({ tools: [{ googleSearch: {} }] }), 'anthropic').json.tools, [{ type: 'web_search_20250305', name: 'web_search' }]);

  const forced = responses({ tools: [{ type: 'web_search_preview' }], tool_choice: { type: 'web_search_preview' } });
  t.strictSame(build(forced, 'anthropic').json.tool_choice, { type: 'tool', name: 'web_search' }, 'forcing it names the server tool');
  const r = build(anthropic({ tools: [{ type: 'web_search_20250305', name: 'web_search' }], tool_choice: { type: 'tool', name: 'web_search' } }), 'openai-responses').json;
  t.strictSame([r.tools, r.tool_choice], [[{ type: 'web_search_preview' }], { type: 'web_search_preview' }]);
  t.match(build(forced, 'gemini').refused, { field: 'toolChoice' }, 'Gemini cannot force it: 400');
  t.match(build(forced, 'openai').refused, { field: 'toolChoice' }, 'Chat has no web search tool: 400');

  const others = anthropic({ tools: [{ type: 'bash_20250124', name: 'bash' }, { type: 'code_execution_20250825', name: 'code_execution' }] });
  t.strictSame(others.unmapped, ['tools.bash_20250124', 'tools.code_execution_20250825'], 'tools with no equivalent are listed');
  t.throws(() => anthropic({ tools: [{ type: 'bash_20250124', name: 'bash' }], tool_choice: { type: 'tool', name: 'bash' } }), { code: 'TOLLGATE_ERR_NOT_SUPPORTED', param: 'tool_choice' }, 'forcing one is a 400');
  t.strictSame(gemini({ tools: [{ codeExecution: {} }, { urlContext: {} }] }).unmapped, ['tools.codeExecution', 'tools.urlContext']);
});

t.test('what a client format has no place for is listed under its own name', async (t) => {
  t.strictSame(chat({ audio: { voice: 'alloy', format: 'wav' }, modalities: ['text', 'audio'], top_k: 40, store: true, store_options: null }).unmapped, ['audio', 'modalities', 'top_k', 'store']);
  t.strictSame(anthropic({ container: 'c-1', context_management: { edits: [] } }).unmapped, ['container', 'context_management']);
  t.strictSame(responses({ truncation: 'auto', include: ['web_search_call.action.sources', 'reasoning.encrypted_content'] }).unmapped, ['truncation', 'include.web_search_call.action.sources']);
  t.strictSame(gemini({ safetySettings: [], generationConfig: { responseModalities: ['TEXT'] } }).unmapped, ['safetySettings', 'generationConfig.responseModalities']);
  t.equal(chat({ store: false }).unmapped, undefined, 'store: false changes nothing: not listed');
});

t.test('droppedParams: parse-time, capability and target drops, under the client format names, sorted', async (t) => {
  const req = fitCapabilities(chat({ seed: 1, logit_bias: { '1': 1 }, top_k: 3, tools: [{ type: 'function', function: { name: 'f' } }], reasoning_effort: 'high' }), { kind: 'llm', capabilities: ['vision'] });
  t.strictSame(req.removed, ['tools', 'thinking'], 'capability stripping is recorded');
  const up = build(req, 'anthropic');
  t.strictSame(droppedParams(openaiCodec.paramNames, req, up.dropped), ['logit_bias', 'reasoning_effort', 'seed', 'tools', 'top_k']);
  const g = gemini({ generationConfig: { seed: 3, presencePenalty: 0.5 } });
  const names = (codec: WireCodec, r: CanonicalRequest, format: Format) => droppedParams(codec.paramNames, r, build(r, format).dropped);
  t.strictSame(names(geminiCodec, g, 'anthropic'), ['generationConfig.presencePenalty', 'generationConfig.seed']);
  t.strictSame(names(anthropicCodec, anthropic({ top_k: 5, stop_sequences: ['x'] }), 'openai-responses'), ['stop_sequences', 'top_k']);
  t.strictSame(names(responsesCodec, responses({ prompt_cache_key: 'k' }), 'gemini'), ['prompt_cache_key']);
});

// ---------------------------------------------------------------------------------------------------------- answers

const LOGPROBS = [
  { token: 'Hi', logprob: -0.25, bytes: [72, 105], top_logprobs: [{ token: 'Hi', logprob: -0.25, bytes: [72, 105] }, { token: 'Hello', logprob: -1.5, bytes: [72, 101, 108, 108, 111] }] },
  { token: '!', logprob: -0.5, bytes: [33], top_logprobs: [{ token: '!', logprob: -0.5, bytes: [33] }] },
];

t.test('logprobs in whole answers: Chat -> canonical -> Responses and Gemini, and back', async (t) => {
  const res = openaiCodec.parseResponse({
    id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-4.1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hi!' }, logprobs: { content: LOGPROBS, refusal: null }, finish_reason: 'stop' }],
  });
  t.strictSame(res.logprobs?.map((l) => [l.token, l.logprob, l.top.length]), [['Hi', -0.25, 2], ['!', -0.5, 1]]);
  const asResponses = responsesCodec.renderResponse(res, 'm') as { output: { content: { logprobs: unknown }[] }[] };
  t.strictSame(asResponses.output[0]!.content[0]!.logprobs, LOGPROBS, 'Responses: on the output_text part, same entries');
  t.strictSame(responsesCodec.parseResponse(asResponses).logprobs, res.logprobs, 'and read back');
  const asGemini = geminiCodec.renderResponse(res, 'm') as { candidates: { logprobsResult: unknown }[] };
  t.strictSame(asGemini.candidates[0]!.logprobsResult, {
    topCandidates: [{ candidates: [{ token: 'Hi', logProbability: -0.25 }, { token: 'Hello', logProbability: -1.5 }] }, { candidates: [{ token: '!', logProbability: -0.5 }] }],
    chosenCandidates: [{ token: 'Hi', logProbability: -0.25 }, { token: '!', logProbability: -0.5 }],
    logProbabilitySum: -0.75,
  });
  const fromGemini = geminiCodec.parseResponse(asGemini);
  const asChat = openaiCodec.renderResponse(fromGemini, 'm') as { choices: { logprobs: { content: { token: string; logprob: number; top_logprobs: unknown[] }[] } }[] };
  t.strictSame(asChat.choices[0]!.logprobs.content.map((l) => [l.token, l.logprob, l.top_logprobs.length]), [['Hi', -0.25, 2], ['!', -0.5, 1]], 'Gemini -> Chat');
  t.equal((openaiCodec.renderResponse({ ...res, logprobs: undefined }, 'm') as { choices: { logprobs: unknown }[] }).choices[0]!.logprobs, null, 'none asked: null');
});

t.test('several answers: Gemini candidates -> Chat choices, Chat choices -> Gemini candidates', async (t) => {
  const res = geminiCodec.parseResponse({
    candidates: [
      { content: { role: 'model', parts: [{ text: 'one' }] }, finishReason: 'STOP' },
      { content: { role: 'model', parts: [{ text: 'two' }] }, finishReason: 'MAX_TOKENS', index: 1 },
    ],
    usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'r1',
  });
  t.strictSame(res.moreChoices, [{ content: [{ type: 'text', text: 'two' }], stopReason: 'max_tokens' }]);
  const asChat = openaiCodec.renderResponse(res, 'm') as { choices: { index: number; message: { content: string }; finish_reason: string }[] };
  t.strictSame(asChat.choices.map((c) => [c.index, c.message.content, c.finish_reason]), [[0, 'one', 'stop'], [1, 'two', 'length']]);
  const back = openaiCodec.parseResponse(asChat);
  t.strictSame(back.moreChoices, res.moreChoices, 'Chat choices read back');
  const asGemini = geminiCodec.renderResponse(back, 'm') as { candidates: { index: number; finishReason: string }[] };
  t.strictSame(asGemini.candidates.map((c) => [c.index, c.finishReason]), [[0, 'STOP'], [1, 'MAX_TOKENS']]);
});

t.test('a response format sent as a forced tool: the call is the answer text, whole and streamed', async (t) => {
  const answer: CanonicalResponse = {
    id: 'msg_1', model: 'claude', stopReason: 'tool_calls', usage: null,
    content: [{ type: 'tool_call', id: 'toolu_1', name: 'json_response', arguments: '{"city":"Paris"}' }],
  };
  t.strictSame(unwrapAnswerTool(answer, 'json_response'), { ...answer, content: [{ type: 'text', text: '{"city":"Paris"}' }], stopReason: 'end' });
  const parsed = anthropicCodec.parseResponse({
    id: 'msg_2', type: 'message', role: 'assistant', model: 'claude', stop_reason: 'tool_use', stop_sequence: null,
    content: [{ type: 'tool_use', id: 'toolu_2', name: 'json_response', input: { city: 'Rome' } }], usage: { input_tokens: 1, output_tokens: 2 },
  });
  const chatJson = openaiCodec.renderResponse(unwrapAnswerTool(parsed, 'json_response'), 'm') as { choices: { message: { content: string; tool_calls?: unknown }; finish_reason: string }[] };
  t.strictSame([chatJson.choices[0]!.message.content, chatJson.choices[0]!.message.tool_calls, chatJson.choices[0]!.finish_reason], ['{"city":"Rome"}', undefined, 'stop']);

  const events = new AnswerToolEvents('json_response');
  const stream: CanonicalEvent[] = [
    { type: 'start', id: 'msg_3', model: 'claude' },
    { type: 'tool_call_start', index: 0, id: 'toolu_3', name: 'json_response' },
    { type: 'tool_call_delta', index: 0, arguments: '' },
    { type: 'tool_call_delta', index: 0, arguments: '{"city":' },
    { type: 'tool_call_delta', index: 0, arguments: '"Oslo"}' },
    { type: 'block_stop', index: 0 },
    { type: 'finish', stopReason: 'tool_calls' },
  ];
  t.strictSame(stream.map((e) => events.map(e)).filter((e) => e !== null), [
    { type: 'start', id: 'msg_3', model: 'claude' },
    { type: 'text_start', index: 0 },
    { type: 'text_delta', index: 0, text: '{"city":' },
    { type: 'text_delta', index: 0, text: '"Oslo"}' },
    { type: 'block_stop', index: 0 },
    { type: 'finish', stopReason: 'end' },
  ]);
  const other = new AnswerToolEvents('json_response');
  t.strictSame(other.map({ type: 'tool_call_start', index: 0, id: 'c', name: 'get_weather' }), { type: 'tool_call_start', index: 0, id: 'c', name: 'get_weather' }, 'another tool passes untouched');
  t.strictSame(other.map({ type: 'finish', stopReason: 'tool_calls' }), { type: 'finish', stopReason: 'tool_calls' });
});
