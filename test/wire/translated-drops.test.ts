// Translated requests never lose a client parameter silently (docs/translation.md): what the target cannot take
// is removed from the upstream body and listed under the client's own name. Each case parses a client body with
// the client's codec, builds the upstream request with the target's codec, and checks both the body the upstream
// would receive and the dropped list the client is given (droppedParams, the x-tollgate-dropped-params value).
// Covers a thinking level the target cannot express, Anthropic content blocks (search_result, tool errors, document
// citations and context, container_upload), Chat-only fields (strict tools, image detail, assistant audio), file
// ids another provider family holds, media by type (a tool result's images to Gemini, files of a type the target
// does not take) and Gemini's allowedFunctionNames and response formats (text/x.enum, the key a format is listed by).

import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import type { Target, WireCodec } from '../../src/wire/codec.js';
import { anthropicCodec } from '../../src/wire/anthropic/index.js';
import { geminiCodec } from '../../src/wire/gemini/index.js';
import { openaiCodec } from '../../src/wire/openai/codec.js';
import { responsesCodec } from '../../src/wire/openai-responses/index.js';
import { droppedParams } from '../../src/pipeline/forward.js';
import { wireJson } from '../helpers/wire.js';

type Json = Record<string, unknown>;

const REASONING = ['tools', 'vision', 'pdf', 'reasoning'];
const cfg = parseConfig(
  {
    providers: {
      oai: {
        group: 'paid', format: 'openai', base_url: 'https://api.openai.com/v1', auth: { type: 'api_key', key: 'k' },
        models: { 'gpt-4o': {}, o3: { capabilities: REASONING, thinking: 'openai' } },
      },
      resp: {
        group: 'paid', format: 'openai-responses', base_url: 'https://api.openai.com/v1', auth: { type: 'api_key', key: 'k' },
        models: { 'gpt-4.1': {}, 'gpt-5': { capabilities: REASONING, thinking: 'openai' } },
      },
      anth: {
        group: 'paid', format: 'anthropic', base_url: 'https://api.anthropic.com', auth: { type: 'api_key', key: 'k' },
        models: {
          'claude-plain': {},
          'claude-sonnet-4-5': { capabilities: REASONING, thinking: 'anthropic-budget' },
          'claude-structured': { capabilities: [...REASONING, 'structured_output'] },
        },
      },
      gem: {
        group: 'paid', format: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', auth: { type: 'api_key', key: 'k' },
        models: { 'gemini-2.5-flash': {}, 'gemini-think': { capabilities: REASONING, thinking: 'gemini-budget' } },
      },
    },
  },
  {},
);

const CODECS = { oai: openaiCodec, resp: responsesCodec, anth: anthropicCodec, gem: geminiCodec } as const;
type Provider = keyof typeof CODECS;
const CLIENTS = { chat: openaiCodec, responses: responsesCodec, anthropic: anthropicCodec, gemini: geminiCodec } as const;
type Client = keyof typeof CLIENTS;
const ALL: readonly [Provider, string][] = [['oai', 'gpt-4o'], ['resp', 'gpt-4.1'], ['anth', 'claude-plain'], ['gem', 'gemini-2.5-flash']];

function target(provider: Provider, modelId: string): Target {
  const p = cfg.providers[provider]!;
  return { providerId: provider, provider: p, modelId, model: p.models[modelId] ?? null };
}

/** The client body sent through to `provider/modelId`: the upstream body as the upstream parses it, and the listing. */
function send(client: Client, body: Json, provider: Provider, modelId: string): { json: Json; listed: string[] } {
  const codec: WireCodec = CLIENTS[client];
  const req = codec.parseRequest(body);
  const up = CODECS[provider].buildRequest(req, target(provider, modelId));
  if (up.refused !== undefined) throw new Error(`refused: ${up.refused.field} ${up.refused.reason}`);
  return { json: wireJson(up.body), listed: droppedParams(codec.paramNames, req, up.dropped) };
}

const chat = (extra: Json): Json => ({ model: 'x/m', messages: [{ role: 'user', content: 'hi' }], ...extra });
const anthropic = (extra: Json): Json => ({ model: 'x/m', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...extra });
const responses = (extra: Json): Json => ({ model: 'x/m', input: 'hi', ...extra });
const gemini = (extra: Json): Json => ({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...extra });
const generationConfig = (j: Json): Json => (j.generationConfig ?? {}) as Json;

// ---------------------------------------------------------------------------------------------------- thinking

t.test('a thinking level the target model cannot take is listed under the client name, never lost silently', async (t) => {
  const effort = send('chat', chat({ reasoning_effort: 'high' }), 'anth', 'claude-plain');
  t.notOk('thinking' in effort.json || 'output_config' in effort.json, 'nothing sent to a model without reasoning');
  t.strictSame(effort.listed, ['reasoning_effort']);

  const budget = send('anthropic', anthropic({ thinking: { type: 'enabled', budget_tokens: 2000 } }), 'oai', 'gpt-4o');
  t.notOk('reasoning_effort' in budget.json);
  t.strictSame(budget.listed, ['thinking']);

  const responsesTarget = send('anthropic', anthropic({ thinking: { type: 'enabled', budget_tokens: 2000 } }), 'resp', 'gpt-4.1');
  t.notOk('reasoning' in responsesTarget.json);
  t.strictSame(responsesTarget.listed, ['thinking']);

  const geminiTarget = send('responses', responses({ reasoning: { effort: 'high' } }), 'gem', 'gemini-2.5-flash');
  t.notOk('thinkingConfig' in generationConfig(geminiTarget.json));
  t.strictSame(geminiTarget.listed, ['reasoning']);

  const fromGemini = send('gemini', gemini({ generationConfig: { thinkingConfig: { thinkingBudget: 2000 } } }), 'anth', 'claude-plain');
  t.notOk('thinking' in fromGemini.json);
  t.strictSame(fromGemini.listed, ['generationConfig.thinkingConfig']);

  const adaptive = send('anthropic', anthropic({ thinking: { type: 'adaptive' } }), 'oai', 'gpt-4o');
  t.strictSame(adaptive.listed, ['thinking'], 'adaptive thinking to a model that does not reason is lost too');

  const noRoom = send('chat', chat({ reasoning_effort: 'high', max_tokens: 1000 }), 'anth', 'claude-sonnet-4-5');
  t.notOk('thinking' in noRoom.json, 'max_tokens 1000 leaves no room for the 1024 minimum budget');
  t.strictSame(noRoom.listed, ['reasoning_effort']);
});

t.test('a thinking level a reasoning model takes is sent and not listed', async (t) => {
  const anth = send('chat', chat({ reasoning_effort: 'high' }), 'anth', 'claude-sonnet-4-5');
  t.strictSame(anth.json.thinking, { type: 'enabled', budget_tokens: 24576 }, "high's budget: no max_tokens from the client or the model");
  t.equal(anth.json.max_tokens, 24576 + 4096, 'max_tokens: the budget plus 4096 for the answer');
  t.strictSame(anth.listed, []);
  const o3 = send('anthropic', anthropic({ thinking: { type: 'enabled', budget_tokens: 2000 } }), 'oai', 'o3');
  t.equal(o3.json.reasoning_effort, 'low');
  t.strictSame(o3.listed, []);
  const gpt5 = send('chat', chat({ reasoning_effort: 'high' }), 'resp', 'gpt-5');
  t.strictSame(gpt5.json.reasoning, { effort: 'high' });
  t.strictSame(gpt5.listed, []);
  const gem = send('chat', chat({ reasoning_effort: 'low' }), 'gem', 'gemini-think');
  t.strictSame(generationConfig(gem.json).thinkingConfig, { thinkingBudget: 1024 });
  t.strictSame(gem.listed, []);
  const auto = send('anthropic', anthropic({ thinking: { type: 'adaptive' } }), 'oai', 'o3');
  t.notOk('reasoning_effort' in auto.json, "auto to a reasoning model sends nothing: the model's default effort");
  t.strictSame(auto.listed, [], 'which is what auto means: not listed');
});

// ---------------------------------------------------------------------------------------------------- Anthropic content

const SEARCH = {
  type: 'search_result', source: 'https://kb/1', title: 'KB', content: [{ type: 'text', text: 'The secret code is 4711.' }], citations: { enabled: true },
};

t.test('search_result: its text reaches every target; its citations are listed', async (t) => {
  const body = anthropic({ messages: [{ role: 'user', content: [SEARCH, { type: 'text', text: 'What is the code?' }] }] });
  const text = 'Search result: KB (https://kb/1)\nThe secret code is 4711.';
  const oai = send('anthropic', body, 'oai', 'gpt-4o');
  t.strictSame(oai.json.messages, [{ role: 'user', content: [{ type: 'text', text }, { type: 'text', text: 'What is the code?' }] }]);
  t.strictSame(oai.listed, ['messages.content.citations']);
  for (const [provider, model] of ALL) {
    const up = send('anthropic', body, provider, model);
    t.match(JSON.stringify(up.json), 'The secret code is 4711.', `${provider}: the result's text is sent`);
    t.strictSame(up.listed, ['messages.content.citations'], `${provider}: citations listed`);
  }
  const inToolResult = anthropicCodec.parseRequest(anthropic({
    messages: [
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'kb', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ ...SEARCH, citations: undefined }] }] },
    ],
  }));
  t.strictSame(inToolResult.messages[1]!.content, [{ type: 'tool_result', callId: 't1', name: 'kb', content: [{ type: 'text', text }] }], 'a tool may return it too');
  t.equal(inToolResult.unmapped, undefined, 'no citations asked: nothing listed');
});

t.test('tool_result is_error: listed where the target has no error flag, carried where it has', async (t) => {
  const body = anthropic({
    tools: [{ name: 'f', input_schema: { type: 'object', properties: {} } }],
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'boom: file not found', is_error: true }] },
    ],
  });
  const oai = send('anthropic', body, 'oai', 'gpt-4o');
  t.strictSame((oai.json.messages as Json[]).at(-1), { role: 'tool', tool_call_id: 't1', content: 'boom: file not found' });
  t.strictSame(oai.listed, ['messages.content.is_error']);
  const resp = send('anthropic', body, 'resp', 'gpt-4.1');
  t.strictSame((resp.json.input as Json[]).at(-1), { type: 'function_call_output', call_id: 't1', output: 'boom: file not found' });
  t.strictSame(resp.listed, ['messages.content.is_error']);
  const gem = send('anthropic', body, 'gem', 'gemini-2.5-flash');
  t.strictSame((gem.json.contents as Json[]).at(-1), { role: 'user', parts: [{ functionResponse: { id: 't1', name: 'f', response: { error: 'boom: file not found' } } }] });
  t.strictSame(gem.listed, [], 'Gemini has a place for the error');
  const ok = send('anthropic', { ...body, messages: [(body.messages as Json[])[0], (body.messages as Json[])[1], { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'fine', is_error: false }] }] }, 'oai', 'gpt-4o');
  t.strictSame(ok.listed, [], 'is_error false says nothing the target misses');
});

t.test('document citations and context, container_upload and other blocks the canonical model has no place for are listed', async (t) => {
  const body = anthropic({
    messages: [
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Doc text' }, citations: { enabled: true }, context: 'ctx', title: 'T' },
          { type: 'container_upload', file_id: 'file_1' },
          { type: 'text', text: 'q' },
        ],
      },
      { role: 'assistant', content: [{ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } }, { type: 'text', text: 'ok' }] },
      { role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Other' }, citations: { enabled: false } }, { type: 'text', text: 'more' }] },
    ],
  });
  const expected = ['messages.content.citations', 'messages.content.container_upload', 'messages.content.context', 'messages.content.server_tool_use'];
  for (const [provider, model] of ALL) {
    const up = send('anthropic', body, provider, model);
    t.notMatch(JSON.stringify(up.json), 'file_1', `${provider}: the container upload is not sent`);
    t.strictSame(up.listed, expected, `${provider}: listed under the Anthropic client's names`);
  }
  const plain = send('anthropic', anthropic({}), 'oai', 'gpt-4o');
  t.strictSame(plain.listed, [], 'a plain request lists nothing');
});

// ---------------------------------------------------------------------------------------------------- Chat fields

const STRICT_TOOLS = [{ type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false } } }];

t.test('Chat tools[].function.strict: sent where the target takes it, else listed', async (t) => {
  const plain = send('chat', chat({ tools: STRICT_TOOLS }), 'anth', 'claude-plain');
  t.notOk('strict' in (plain.json.tools as Json[])[0]!, 'no structured_output: strict is not sent');
  t.strictSame(plain.listed, ['tools.function.strict']);
  const structured = send('chat', chat({ tools: STRICT_TOOLS }), 'anth', 'claude-structured');
  t.equal((structured.json.tools as Json[])[0]!.strict, true);
  t.strictSame(structured.listed, []);
  const gem = send('chat', chat({ tools: STRICT_TOOLS }), 'gem', 'gemini-2.5-flash');
  t.notMatch(JSON.stringify(gem.json.tools), 'strict');
  t.strictSame(gem.listed, ['tools.function.strict']);
  const resp = send('chat', chat({ tools: STRICT_TOOLS }), 'resp', 'gpt-4.1');
  t.equal((resp.json.tools as Json[])[0]!.strict, true);
  t.strictSame(resp.listed, []);
});

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const image = (detail: string): Json => chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail } }] }] });

t.test('Chat image_url.detail low / high: listed where the target has no detail level', async (t) => {
  const anth = send('chat', image('low'), 'anth', 'claude-plain');
  t.strictSame((anth.json.messages as Json[])[0], { role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] });
  t.strictSame(anth.listed, ['messages.content.image_url.detail']);
  t.strictSame(send('chat', image('high'), 'gem', 'gemini-2.5-flash').listed, ['messages.content.image_url.detail']);
  t.strictSame(send('chat', image('auto'), 'anth', 'claude-plain').listed, [], 'auto is what every image gets: nothing lost');
  const resp = send('chat', image('low'), 'resp', 'gpt-4.1');
  t.match(JSON.stringify(resp.json.input), '"detail":"low"', 'Responses carries it');
  t.strictSame(resp.listed, []);
});

t.test("Chat assistant message audio {id}: not carried, listed as messages.audio", async (t) => {
  const body = chat({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', audio: { id: 'audio_1' }, content: null }, { role: 'user', content: 'again' }] });
  for (const [provider, model] of ALL) {
    const up = send('chat', body, provider, model);
    t.notMatch(JSON.stringify(up.json), 'audio_1', `${provider}: the audio reference is not sent`);
    t.strictSame(up.listed, ['messages.audio'], provider);
  }
});

// ---------------------------------------------------------------------------------------------------- file ids

t.test("a file id another provider family holds is dropped and listed, never sent to draw a 400", async (t) => {
  const gs = gemini({ contents: [{ role: 'user', parts: [{ fileData: { mimeType: 'video/mp4', fileUri: 'gs://x/v.mp4' } }, { text: 'what?' }] }] });
  const anth = send('gemini', gs, 'anth', 'claude-plain');
  t.strictSame(anth.json.messages, [{ role: 'user', content: [{ type: 'text', text: 'what?' }] }]);
  t.strictSame(anth.listed, ['inlineData.file']);
  for (const [provider, model] of ALL.filter(([p]) => p !== 'gem')) {
    const up = send('gemini', gs, provider, model);
    t.notMatch(JSON.stringify(up.json), 'gs://', `${provider}: the Gemini URI is not sent`);
    t.strictSame(up.listed, ['inlineData.file'], provider);
  }
  const filesApi = 'https://generativelanguage.googleapis.com/v1beta/files/abc123';
  const pdf = send('gemini', gemini({ contents: [{ role: 'user', parts: [{ fileData: { mimeType: 'application/pdf', fileUri: filesApi } }, { text: 'sum' }] }] }), 'oai', 'gpt-4o');
  t.notMatch(JSON.stringify(pdf.json), filesApi, 'a Files API URI is a Gemini file too');
  t.strictSame(pdf.listed, ['inlineData.file']);
  const gem = send('gemini', gs, 'gem', 'gemini-2.5-flash');
  t.strictSame((gem.json.contents as Json[])[0], { role: 'user', parts: [{ fileData: { mimeType: 'video/mp4', fileUri: 'gs://x/v.mp4' } }, { text: 'what?' }] }, 'Gemini gets its own file');
  t.strictSame(gem.listed, []);

  const openaiFile = chat({ messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }, { type: 'text', text: 'sum' }] }] });
  for (const [provider, model] of [['gem', 'gemini-2.5-flash'], ['anth', 'claude-plain']] as const) {
    const up = send('chat', openaiFile, provider, model);
    t.notMatch(JSON.stringify(up.json), 'file-abc', `${provider}: an OpenAI file id is not sent`);
    t.strictSame(up.listed, ['file'], provider);
  }
  const toResponses = send('chat', openaiFile, 'resp', 'gpt-4.1');
  t.match(JSON.stringify(toResponses.json.input), '"file_id":"file-abc"', 'Chat and Responses share OpenAI files');
  t.strictSame(toResponses.listed, []);

  const responsesFile = responses({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-xyz' }, { type: 'input_text', text: 'sum' }] }] });
  const fromResponses = send('responses', responsesFile, 'anth', 'claude-plain');
  t.notMatch(JSON.stringify(fromResponses.json), 'file-xyz', 'a Responses file id is not sent to Anthropic');
  t.strictSame(fromResponses.listed, ['input_file']);
  t.match(JSON.stringify(send('responses', responsesFile, 'oai', 'gpt-4o').json.messages), '"file_id":"file-xyz"', 'but is to OpenAI Chat');

  const anthFile = anthropic({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_011abc' } }, { type: 'text', text: 'sum' }] }] });
  for (const [provider, model] of [['oai', 'gpt-4o'], ['resp', 'gpt-4.1'], ['gem', 'gemini-2.5-flash']] as const) {
    const up = send('anthropic', anthFile, provider, model);
    t.notMatch(JSON.stringify(up.json), 'file_011abc', `${provider}: an Anthropic file id is not sent`);
    t.strictSame(up.listed, ['document'], provider);
  }
  const toAnth = send('anthropic', anthFile, 'anth', 'claude-plain');
  t.strictSame((toAnth.json.messages as Json[])[0], { role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_011abc' } }, { type: 'text', text: 'sum' }] });
  t.strictSame(toAnth.listed, []);
});

// ---------------------------------------------------------------------------------------------------- media by type

t.test('images in a tool result reach Gemini as inline parts right after the functionResponse', async (t) => {
  const screenshot = anthropic({
    messages: [
      { role: 'user', content: 'look' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }] },
    ],
  });
  const gem = send('anthropic', screenshot, 'gem', 'gemini-2.5-flash');
  t.strictSame((gem.json.contents as Json[]).at(-1), {
    role: 'user', parts: [{ functionResponse: { id: 't1', name: 'screenshot', response: { output: '' } } }, { inlineData: { mimeType: 'image/png', data: PNG } }],
  }, 'an image-only result (a computer-use screenshot)');
  t.strictSame(gem.listed, []);

  const output = responses({
    input: [
      { role: 'user', content: 'look' },
      { type: 'function_call', call_id: 'call_1', name: 'screenshot', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: 'here' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}` }, { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=' }] },
    ],
  });
  const fromResponses = send('responses', output, 'gem', 'gemini-2.5-flash');
  t.strictSame((fromResponses.json.contents as Json[]).at(-1), {
    role: 'user',
    parts: [
      { functionResponse: { id: 'call_1', name: 'screenshot', response: { output: 'here' } } },
      { inlineData: { mimeType: 'image/png', data: PNG } },
      { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
    ],
  }, 'the text in the response, the image and the PDF after it, in the same user turn');
  t.strictSame(fromResponses.listed, []);
});

const inline = (mimeType: string, data: string): Json => ({ inlineData: { mimeType, data } });
const userParts = (...parts: Json[]): Json => gemini({ contents: [{ role: 'user', parts: [...parts, { text: 'describe' }] }] });

t.test('a file of a type the target does not take (video) is dropped and listed; a PDF or a text file is carried', async (t) => {
  const video = userParts(inline('video/mp4', 'AAAA'));
  const anth = send('gemini', video, 'anth', 'claude-plain');
  t.strictSame(anth.json.messages, [{ role: 'user', content: [{ type: 'text', text: 'describe' }] }], 'no base64 document of a video for Anthropic');
  t.strictSame(anth.listed, ['inlineData.file']);
  const oai = send('gemini', video, 'oai', 'gpt-4o');
  t.strictSame(oai.json.messages, [{ role: 'user', content: 'describe' }], 'no file part of a video for Chat (its files are PDFs)');
  t.strictSame(oai.listed, ['inlineData.file']);
  const resp = send('gemini', video, 'resp', 'gpt-4.1');
  t.notMatch(JSON.stringify(resp.json.input), 'video/mp4', 'no input_file of a video for Responses');
  t.strictSame(resp.listed, ['inlineData.file']);
  const gem = send('gemini', video, 'gem', 'gemini-2.5-flash');
  t.strictSame((gem.json.contents as Json[])[0], { role: 'user', parts: [inline('video/mp4', 'AAAA'), { text: 'describe' }] }, 'Gemini takes it');
  t.strictSame(gem.listed, []);

  const docs = userParts(inline('application/pdf', 'JVBERi0='), inline('text/plain', Buffer.from('hello doc').toString('base64')));
  const anthDocs = send('gemini', docs, 'anth', 'claude-plain');
  t.strictSame((anthDocs.json.messages as Json[])[0], {
    role: 'user',
    content: [
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'hello doc' } },
      { type: 'text', text: 'describe' },
    ],
  }, 'Anthropic: the PDF as a base64 document, the text file as a text document');
  t.strictSame(anthDocs.listed, []);
  const oaiDocs = send('gemini', docs, 'oai', 'gpt-4o');
  t.strictSame((oaiDocs.json.messages as Json[])[0], {
    role: 'user',
    content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=' } }, { type: 'text', text: 'hello doc' }, { type: 'text', text: 'describe' }],
  }, 'Chat: the PDF as a file part, the text file as its text');
  t.strictSame(oaiDocs.listed, []);
  const respDocs = send('gemini', docs, 'resp', 'gpt-4.1');
  t.match(JSON.stringify(respDocs.json.input), 'data:text/plain;base64', 'Responses takes a text file as input_file');
  t.strictSame(respDocs.listed, []);

  const textDoc = anthropic({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'hello doc' }, title: 'notes.txt' }, { type: 'text', text: 'sum' }] }] });
  t.strictSame(send('anthropic', textDoc, 'oai', 'gpt-4o').json.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello doc' }, { type: 'text', text: 'sum' }] }], "an Anthropic text document reaches Chat as text, not a file_data Chat refuses");
});

// ---------------------------------------------------------------------------------------------------- Gemini config

const FNS = ['a', 'b', 'c'].map((name) => ({ name, parameters: { type: 'OBJECT', properties: {} } }));
const toolNames = (tools: unknown): unknown[] => (tools as Json[]).map((x) => x.name ?? (x.function as Json | undefined)?.name);

t.test('Gemini ANY with allowedFunctionNames [a, b] of a, b, c: only a and b are sent, and one of them is required', async (t) => {
  const body = gemini({ tools: [{ functionDeclarations: FNS }], toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['a', 'b'] } } });
  const oai = send('gemini', body, 'oai', 'gpt-4o');
  t.strictSame([toolNames(oai.json.tools), oai.json.tool_choice], [['a', 'b'], 'required']);
  const anth = send('gemini', body, 'anth', 'claude-plain');
  t.strictSame([toolNames(anth.json.tools), anth.json.tool_choice], [['a', 'b'], { type: 'any' }]);
  const resp = send('gemini', body, 'resp', 'gpt-4.1');
  t.strictSame([toolNames(resp.json.tools), resp.json.tool_choice], [['a', 'b'], 'required']);
  t.strictSame([oai.listed, anth.listed, resp.listed], [[], [], []]);
  const one = send('gemini', gemini({ tools: [{ functionDeclarations: FNS }], toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['b'] } } }), 'oai', 'gpt-4o');
  t.strictSame([toolNames(one.json.tools), one.json.tool_choice], [['a', 'b', 'c'], { type: 'function', function: { name: 'b' } }], 'one name: that tool forced');
});

t.test('Gemini text/x.enum is a text answer, its schema listed; a dropped response format is listed under the key the client set', async (t) => {
  const enumBody = gemini({ generationConfig: { responseMimeType: 'text/x.enum', responseSchema: { type: 'STRING', enum: ['yes', 'no'] } } });
  const oai = send('gemini', enumBody, 'oai', 'gpt-4o');
  t.notMatch(JSON.stringify(oai.json.response_format ?? {}), 'json_schema', 'no json_schema with a string root');
  t.strictSame(oai.listed, ['generationConfig.responseSchema']);

  const tools = [{ functionDeclarations: FNS }];
  const schema = { type: 'OBJECT', properties: { a: { type: 'STRING' } } };
  const named = (generationConfig: Json) => send('gemini', gemini({ tools, generationConfig }), 'anth', 'claude-plain').listed;
  t.strictSame(named({ responseMimeType: 'application/json', responseSchema: schema }), ['generationConfig.responseSchema'], 'responseSchema');
  t.strictSame(named({ responseMimeType: 'application/json', responseJsonSchema: { type: 'object' } }), ['generationConfig.responseJsonSchema'], 'responseJsonSchema');
  t.strictSame(named({ responseMimeType: 'application/json' }), ['generationConfig.responseMimeType'], 'the JSON MIME type alone');
});
