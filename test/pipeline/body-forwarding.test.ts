// What an OpenAI-format upstream receives for a forwarded chat request, byte for byte: the client's body with the
// model rewritten (JSON.stringify's bytes), sent with a content-length when small and chunked when large.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, { providers: { fake: fakeProvider(up.baseUrl) } });

async function forward(body: Record<string, unknown>) {
  const res = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.body.dump();
  return { status: res.statusCode, got: up.received.at(-1)! };
}

t.test('a small body arrives as JSON.stringify of the body with the model rewritten, with a content-length', async (t) => {
  const body = { messages: [{ role: 'user', content: 'héllo 🎉 "q" \\ \u2028 [{' }], model: 'fake/gpt-4o', temperature: 0.5, n: 1e21, seed: -0, metadata: { b: 1, a: [null, true] } };
  const { status, got } = await forward(body);
  t.equal(status, 200);
  t.equal(got.text, JSON.stringify({ ...body, model: 'gpt-4o' }));
  t.equal(got.headers['content-length'], String(Buffer.byteLength(got.text)));
  t.notOk(got.headers['transfer-encoding']);
});

t.test('a streamed request gets include_usage added and nothing else changed', async (t) => {
  const body = { model: 'fake/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }], stream_options: { foo: 1 } };
  const res = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.body.dump();
  t.equal(up.received.at(-1)!.text, JSON.stringify({ ...body, model: 'gpt-4o', stream_options: { foo: 1, include_usage: true } }));
});

t.test('a large body arrives byte for byte, chunked', async (t) => {
  const content = 'Grüße, 世界! \ud83d\ude00 "quoted" \n\t\\ '.repeat(60_000); // ~2.4 MB of UTF-8 with escapes
  const body = { model: 'fake/gpt-4o', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content }], max_tokens: 5 };
  const { status, got } = await forward(body);
  t.equal(status, 200);
  t.ok(got.text === JSON.stringify({ ...body, model: 'gpt-4o' }), 'identical bytes');
  t.equal(got.headers['transfer-encoding'], 'chunked');
});
