// What the same-format passthrough removes is listed, as on the translated path (docs/translation.md, "Listing"):
// the x-tollgate-dropped-params header and the span's tollgate.dropped_params name every client parameter a model's
// capabilities excluded, a thinking level the model cannot take, and the sampling parameters thinking forbids.
// Before, the passthrough removed a client's tools, thinking or PDF without a word (200, no header), where the same
// request translated listed them. And the OpenAI Chat fast path sent `reasoning_effort` to a model listed without
// `reasoning` (the real API answers that with a 400): such a request now leaves the fast path, which removes and
// lists it.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { respProvider, startFakeResponses } from '../helpers/fake-responses.js';

const anthUp = await startFakeAnthropic(t);
const respUp = await startFakeResponses(t);
const gemUp = await startFakeGemini(t);
const chatUp = await startFakeOpenAI(t);
const visionOnly = { kind: 'llm', capabilities: ['vision'] };
const gw = await startApp(t, {
  providers: {
    anth: fakeAnthropicProvider(anthUp.url, { models: { plain: visionOnly, 'claude-sonnet-4-5': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'anthropic-budget' } } }),
    resp: respProvider(respUp.baseUrl, { models: { 'gpt-4.1': visionOnly } }),
    gem: geminiProvider({ baseUrl: gemUp.baseUrl, key: gemUp.key }, { models: { plain: visionOnly } }),
    oa: fakeProvider(chatUp.baseUrl, { models: { plain: visionOnly, undescribed: { kind: 'llm' } } }),
  },
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; dropped: string[]; id: string }> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  const h = res.headers.get('x-tollgate-dropped-params');
  return { status: res.status, dropped: h === null ? [] : h.split(', '), id: res.headers.get('x-request-id') ?? '' };
}
const spanDrops = (id: string) => gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === id)?.attributes['tollgate.dropped_params'];

const PDF = 'JVBERi0xLjQKJcOkw7zDtsOfCg==';
const tool = { name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: {} } };

t.test('Anthropic: tools, thinking and a PDF removed for a vision-only model are listed', async (t) => {
  const a = await post('/v1/messages', {
    model: 'anth/plain', max_tokens: 500, tools: [tool], tool_choice: { type: 'auto' },
    thinking: { type: 'enabled', budget_tokens: 2000 }, output_config: { effort: 'high' },
    messages: [{ role: 'user', content: [{ type: 'text', text: 'read this' }, { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } }] }],
  }, { 'anthropic-version': '2023-06-01' });
  t.equal(a.status, 200);
  const sent = anthUp.received.at(-1)!.body;
  t.notOk('tools' in sent || 'thinking' in sent || 'tool_choice' in sent, 'removed upstream');
  t.notMatch(JSON.stringify(sent.messages), /document/, 'the PDF removed upstream');
  t.same(a.dropped, ['document', 'output_config.effort', 'thinking', 'tool_choice', 'tools'], 'every removal listed, sorted');
  t.same(spanDrops(a.id), ['document', 'output_config.effort', 'thinking', 'tool_choice', 'tools'], 'and on the span');
});

t.test('Anthropic: a suffix level the model cannot take, and the sampling parameters thinking forbids, are listed', async (t) => {
  const a = await post('/v1/messages', { model: 'anth/plain(high)', max_tokens: 500, messages: [{ role: 'user', content: 'hi' }] }, { 'anthropic-version': '2023-06-01' });
  t.notOk('thinking' in anthUp.received.at(-1)!.body);
  t.same(a.dropped, ['thinking'], 'the level not sent is listed');
  const b = await post('/v1/messages', {
    model: 'anth/claude-sonnet-4-5(low)', max_tokens: 4000, temperature: 0.5, top_k: 3, top_p: 0.5, messages: [{ role: 'user', content: 'hi' }],
  }, { 'anthropic-version': '2023-06-01' });
  const sent = anthUp.received.at(-1)!.body;
  t.same(sent.thinking, { type: 'enabled', budget_tokens: 1024 }, 'the level applied');
  t.same(b.dropped, ['temperature', 'top_k', 'top_p'], 'what thinking forbids is removed and listed');
  const c = await post('/v1/messages', { model: 'anth/claude-sonnet-4-5', max_tokens: 500, messages: [{ role: 'user', content: 'hi' }] }, { 'anthropic-version': '2023-06-01' });
  t.same(c.dropped, [], 'nothing removed: no header');
});

t.test('Responses: tools, reasoning, its encrypted include and a json_schema format removed are listed', async (t) => {
  const a = await post('/v1/responses', {
    model: 'resp/gpt-4.1', input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }, { type: 'input_file', file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' }] }],
    tools: [{ type: 'web_search' }], parallel_tool_calls: false, reasoning: { effort: 'high' }, include: ['reasoning.encrypted_content'],
    text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } },
  });
  t.equal(a.status, 200);
  const sent = respUp.received.at(-1)!.body as Record<string, unknown>;
  t.notOk('tools' in sent || 'reasoning' in sent || 'include' in sent, 'removed upstream');
  t.same(sent.text, { format: { type: 'json_object' } }, 'JSON mode kept');
  t.same(a.dropped, ['include.reasoning.encrypted_content', 'input_file', 'parallel_tool_calls', 'reasoning', 'text.format', 'tools']);
});

t.test('Gemini: tools, thinkingConfig and a PDF part removed are listed', async (t) => {
  const a = await post('/v1beta/models/gem/plain:generateContent', {
    contents: [{ role: 'user', parts: [{ text: 'read' }, { inlineData: { mimeType: 'application/pdf', data: PDF } }] }],
    tools: [{ functionDeclarations: [{ name: 'lookup', parameters: { type: 'OBJECT', properties: {} } }] }],
    generationConfig: { thinkingConfig: { thinkingBudget: 1024 }, maxOutputTokens: 100 },
  }, { 'x-goog-api-key': 'unused' });
  t.equal(a.status, 200);
  const sent = gemUp.received.at(-1)!.body as Record<string, unknown>;
  t.notOk('tools' in sent, 'removed upstream');
  t.same(sent.generationConfig, { maxOutputTokens: 100 });
  t.same(a.dropped, ['generationConfig.thinkingConfig', 'inlineData.file', 'tools']);
});

t.test('OpenAI Chat: reasoning_effort to a model listed without reasoning leaves the fast path, removed and listed', async (t) => {
  const a = await post('/v1/chat/completions', { model: 'oa/plain', reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(a.status, 200);
  t.notOk('reasoning_effort' in chatUp.received.at(-1)!.body, 'not sent to draw a 400');
  t.same(a.dropped, ['reasoning_effort']);
  const b = await post('/v1/chat/completions', { model: 'oa/undescribed', reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chatUp.received.at(-1)!.body.reasoning_effort, 'high', 'an undescribed model gets the request as written');
  t.same(b.dropped, []);
});
