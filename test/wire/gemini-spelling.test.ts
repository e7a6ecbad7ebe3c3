// camelCaseRequest (src/wire/gemini/spelling.ts) reads a snake_case Gemini body in lowerCamelCase without changing the
// client's body, and copies only the objects and arrays on the way to a renamed name: a lowerCamelCase body, the usual
// one, is read as it came (no copy of its messages on every translated request).

import t from 'tap';
import { camelCaseRequest } from '../../src/wire/gemini/spelling.js';

type Json = Record<string, unknown>;

const camelBody = (): Json => ({
  systemInstruction: { parts: [{ text: 'You are a cat.' }] },
  contents: [
    { role: 'user', parts: [{ text: 'hi' }, { inlineData: { mimeType: 'image/png', data: 'iVBOR' } }] },
    { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city_name: 'Paris' } } }] },
  ],
  generationConfig: { maxOutputTokens: 300, stopSequences: ['END'] },
  tools: [{ functionDeclarations: [{ name: 'weather', parameters: { type: 'OBJECT', properties: { city_name: { type: 'STRING' } } } }] }],
});

t.test('a lowerCamelCase body is read as it came: the same object, nothing copied', async (t) => {
  const body = camelBody();
  const { body: read, spelled } = camelCaseRequest(body);
  t.equal(read, body, 'the body itself');
  t.equal(spelled.size, 0);
});

t.test('a snake_case name deep in one message copies only the path to it', async (t) => {
  const body = camelBody();
  const contents = body.contents as Json[];
  const second = contents[1]!;
  (second.parts as Json[])[0] = { function_call: { name: 'weather', args: { city_name: 'Paris' } } };
  const before = JSON.stringify(body);
  const { body: read, spelled } = camelCaseRequest(body);
  t.equal(JSON.stringify(body), before, "the client's body is unchanged");
  t.not(read, body, 'the body is copied');
  const readContents = read.contents as Json[];
  t.not(readContents, contents, 'and its contents');
  t.equal(readContents[0], contents[0], 'the message without a snake_case name is not copied');
  t.same(readContents[1], { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city_name: 'Paris' } } }] }, 'the other is read in lowerCamelCase');
  t.equal(((readContents[1]!.parts as Json[])[0]!.functionCall as Json).args, ((second.parts as Json[])[0]!.function_call as Json).args, 'user data (args) travels as written, not copied');
  t.equal(read.tools, body.tools, 'the tools, untouched, are the same array');
  t.equal(read.generationConfig, body.generationConfig);
  t.same([...spelled], [['functionCall', 'function_call']]);
  t.same(Object.keys(read), Object.keys(body), "in the client's key order");
});

t.test('a snake_case top-level name keeps the key order, renamed in place', async (t) => {
  const { body: read } = camelCaseRequest({ contents: [{ role: 'user', parts: [{ text: 'x' }] }], generation_config: { max_output_tokens: 5 }, safety_settings: [] });
  t.same(Object.keys(read), ['contents', 'generationConfig', 'safety_settings']);
  t.same(read.generationConfig, { maxOutputTokens: 5 });
});

t.test('both spellings of one field are refused, naming it', async (t) => {
  t.throws(() => camelCaseRequest({ contents: [], generationConfig: {}, generation_config: {} }), /both generationConfig and generation_config are set/);
});
