// A max_tokens under 16 to an openai-responses provider: the Responses API refuses a max_output_tokens below 16 with a
// 400 (the fake of test/helpers/fake-responses.ts does too), and Claude Code / Claude Desktop probe a model with
// max_tokens 1. The translated request goes with max_output_tokens 16; the answer reaches the client as the upstream
// gave it and the row records what the upstream reported (docs/translation.md).

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { DEFAULT_TEXT, respProvider, startFakeResponses } from '../helpers/fake-responses.js';
import { buckets, withRow } from '../helpers/clients.js';

const up = await startFakeResponses(t);
const gw = await startApp(t, { providers: { resp: respProvider(up.baseUrl) } });
const anthropic = new Anthropic({ apiKey: 'x', baseURL: gw.url, maxRetries: 0 });
const openai = new OpenAI({ apiKey: 'x', baseURL: `${gw.url}/v1`, maxRetries: 0 });

// The fake reports input 40 (16 cached), output 25 (10 reasoning): buckets 24, 16, null, 15, 10.
const REPORTED = [24, 16, null, 15, 10];

t.test('Anthropic SDK, max_tokens 1: sent as 16, answered, the row as reported', async (t) => {
  const { value, row } = await withRow(gw, t, () => anthropic.messages.create({ model: 'resp/gpt-4.1', max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] }));
  t.equal(up.received.at(-1)!.body.max_output_tokens, 16, 'max_output_tokens raised to 16');
  t.same(value.content, [{ type: 'text', text: DEFAULT_TEXT }], "the upstream's answer as it gave it");
  t.equal(row.status, 'success');
  t.same(buckets(row), REPORTED, 'the usage the upstream reported');
});

t.test('Chat client, max_tokens 5, streamed: sent as 16', async (t) => {
  const { value, row } = await withRow(gw, t, async () => {
    const stream = await openai.chat.completions.create({ model: 'resp/gpt-4.1', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'yes or no?' }] });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    return text;
  });
  t.equal(up.received.at(-1)!.body.max_output_tokens, 16);
  t.equal(value, DEFAULT_TEXT);
  t.equal(row.status, 'success');
  t.same(buckets(row), REPORTED);
});

t.test('16 and more go as asked', async (t) => {
  await openai.chat.completions.create({ model: 'resp/gpt-4.1', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] });
  t.equal(up.received.at(-1)!.body.max_output_tokens, 16);
  await openai.chat.completions.create({ model: 'resp/gpt-4.1', max_tokens: 300, messages: [{ role: 'user', content: 'x' }] });
  t.equal(up.received.at(-1)!.body.max_output_tokens, 300);
});
