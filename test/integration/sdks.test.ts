// Each official client in its own format against Tollgate, translated to a fake OpenAI Chat upstream on a real
// socket: the answer reaches the client in its own shape, streamed and not, and the recorded usage is the
// upstream's, bucketed exactly once (prompt 11 with 3 cached, completion 7 with 2 reasoning).

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, {
  providers: {
    fake: fakeProvider(up.baseUrl, {
      models: { 'gpt-4o': { kind: 'llm', capabilities: ['tools', 'vision'] }, o3: { kind: 'llm', capabilities: ['reasoning', 'tools'], thinking: 'openai' } },
    }),
  },
});

// Hand computation: input 11 - 3 cached = 8, cached 3, output 7 - 2 reasoning = 5, reasoning 2; total 18.
// Cost: (8 x 2.5 + 3 x 1.25 + 5 x 10 + 2 x 10) / 1e6.
const COST = (8 * 2.5 + 3 * 1.25 + 5 * 10 + 2 * 10) / 1e6;
const TEXT = 'Hello from the fake upstream';

async function lastRow(endpoint: string, stream: boolean) {
  const rows = await gw.rows(`endpoint = '${endpoint}' AND stream = ${stream}`);
  return rows.at(-1)!;
}

function checkUsage(t: Test, row: Record<string, unknown>) {
  t.same(
    [row.input_tokens, row.cached_tokens, row.output_tokens, row.reasoning_tokens, row.total_tokens].map(Number),
    [8, 3, 5, 2, 18],
    'usage bucketed once',
  );
  t.equal(Number(row.cost), COST, 'cost by hand');
  t.equal(row.status, 'success');
}

t.test('Anthropic SDK -> /v1/messages -> OpenAI Chat upstream', async (t) => {
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
  const msg = await client.messages.create({ model: 'fake/gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(msg.type, 'message');
  t.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', TEXT);
  t.equal(msg.stop_reason, 'end_turn');
  t.equal(msg.usage.input_tokens, 8, 'Anthropic counts input without cache reads');
  t.equal(msg.usage.cache_read_input_tokens, 3);
  t.equal(msg.usage.output_tokens, 7, 'Anthropic output includes thinking');
  t.equal(up.received.at(-1)!.body.model, 'gpt-4o');
  t.equal(up.received.at(-1)!.body.max_tokens, 100);
  checkUsage(t, await lastRow('messages', false));

  let text = '';
  const stream = client.messages.stream({ model: 'fake/gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  stream.on('text', (d) => (text += d));
  const final = await stream.finalMessage();
  t.equal(text, TEXT);
  t.equal(final.usage.output_tokens, 7);
  checkUsage(t, await lastRow('messages', true));
});

t.test('openai SDK Responses -> /v1/responses -> OpenAI Chat upstream', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const res = await client.responses.create({ model: 'fake/gpt-4o', input: 'hi' });
  t.equal(res.output_text, TEXT);
  t.equal(res.usage?.input_tokens, 11);
  t.equal(res.usage?.output_tokens_details.reasoning_tokens, 2);
  checkUsage(t, await lastRow('responses', false));

  let text = '';
  const stream = await client.responses.create({ model: 'fake/gpt-4o', input: 'hi', stream: true });
  let completed = false;
  for await (const e of stream) {
    if (e.type === 'response.output_text.delta') text += e.delta;
    if (e.type === 'response.completed') completed = true;
  }
  t.equal(text, TEXT);
  t.ok(completed, 'terminal response.completed');
  checkUsage(t, await lastRow('responses', true));
});

t.test('Gemini SDK -> :generateContent / :streamGenerateContent -> OpenAI Chat upstream', async (t) => {
  const client = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: gw.url } });
  const res = await client.models.generateContent({ model: 'fake/gpt-4o', contents: 'hi' });
  t.equal(res.text, TEXT);
  t.equal(res.usageMetadata?.promptTokenCount, 11);
  t.equal(res.usageMetadata?.thoughtsTokenCount, 2);
  checkUsage(t, await lastRow('generate_content', false));

  let text = '';
  for await (const chunk of await client.models.generateContentStream({ model: 'fake/gpt-4o', contents: 'hi' })) text += chunk.text ?? '';
  t.equal(text, TEXT);
  checkUsage(t, await lastRow('generate_content', true));
});

t.test('a thinking suffix becomes the target family parameter and leaves the recorded model clean', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  await client.chat.completions.create({ model: 'fake/o3(high)', messages: [{ role: 'user', content: 'think' }] });
  const sent = up.received.at(-1)!.body;
  t.equal(sent.model, 'o3', 'suffix removed upstream');
  t.equal(sent.reasoning_effort, 'high');
  const rows = await gw.rows(`model = 'fake/o3'`);
  t.equal(rows.length, 1);
  t.equal(rows[0]!.requested_model, 'fake/o3', 'suffix removed from the recorded model');

  await client.chat.completions.create({ model: 'fake/gpt-4o(high)', messages: [{ role: 'user', content: 'no reasoning here' }] });
  t.notOk('reasoning_effort' in up.received.at(-1)!.body, 'a model without the reasoning capability gets no thinking field');
});
