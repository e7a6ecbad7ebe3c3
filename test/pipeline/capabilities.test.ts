// Through the gateway: max_tokens is clamped to the model's ceiling on the fast path too, and an OpenAI Chat request
// that uses something the target model's capabilities exclude is translated so that it is removed before sending.

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, {
  providers: {
    fake: fakeProvider(up.baseUrl, {
      models: {
        'text-only': { kind: 'llm', capabilities: ['structured_output'], max_output_tokens: 256 },
        'all-round': { kind: 'llm', capabilities: ['tools', 'vision'], max_output_tokens: 32768 },
        undescribed: { kind: 'llm' },
      },
    }),
  },
});
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];

t.test('max_tokens is clamped to max_output_tokens on the byte-for-byte path', async (t) => {
  await client.chat.completions.create({ model: 'fake/all-round', max_tokens: 100000, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(up.received.at(-1)!.body.max_tokens, 32768);
  await client.chat.completions.create({ model: 'fake/all-round', max_completion_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(up.received.at(-1)!.body.max_completion_tokens, 50, 'a smaller value is left alone');
});

t.test('tools and an image sent to a model that takes neither are removed before sending', async (t) => {
  const res = await client.chat.completions.create({
    model: 'fake/text-only',
    max_tokens: 1000,
    tools,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: PNG } }] }],
  });
  t.equal(res.choices[0]?.message.content, 'Hello from the fake upstream', 'the client still gets its answer');
  const sent = up.received.at(-1)!.body;
  t.notOk('tools' in sent, 'no tools upstream');
  t.notMatch(JSON.stringify(sent.messages), /image_url/, 'no image upstream');
  t.match(JSON.stringify(sent.messages), /what is this\?/, 'the text is kept');
  t.equal(sent.max_tokens, 256, 'and max_tokens clamped on the translated path');
});

t.test('a model that can take them gets them unchanged; an undescribed model gets the request as written', async (t) => {
  for (const model of ['fake/all-round', 'fake/undescribed']) {
    await client.chat.completions.create({
      model, tools,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: PNG } }] }],
    });
    const sent = up.received.at(-1)!.body;
    t.ok(Array.isArray(sent.tools), `${model}: tools sent`);
    t.match(JSON.stringify(sent.messages), /image_url/, `${model}: image sent`);
  }
});
