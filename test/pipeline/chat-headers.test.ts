// The OpenAI Chat fast path (src/pipeline/chat.ts) forwards the client's protocol headers as the same-format passthrough
// does (src/providers/forward-headers.ts, docs/translation.md): `openai-*` and `x-stainless-*` reach the upstream; the
// client's credentials, organisation/project and anything else stay behind; the provider's config headers and key win.

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, {
  providers: {
    oa: fakeProvider(up.baseUrl),
    oacfg: fakeProvider(up.baseUrl, { headers: { 'OpenAI-Beta': 'from-config' } }),
  },
});

t.test('raw request: protocol headers go, credentials and the rest stay, config wins', async (t) => {
  for (const [model, beta] of [['oa/gpt-4o', 'assistants=v2'], ['oacfg/gpt-4o', 'from-config']] as const) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json', authorization: 'Bearer client-key', cookie: 'session=1', 'x-api-key': 'client',
        'openai-beta': 'assistants=v2', 'openai-organization': 'org-client', 'openai-project': 'proj-client', 'x-stainless-os': 'Linux', 'x-other': 'no',
      },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    t.equal(res.status, 200, model);
    await res.text();
    const h = up.received.at(-1)!.headers;
    t.equal(h['openai-beta'], beta, `${model}: openai-beta ${beta}`);
    t.equal(h['x-stainless-os'], 'Linux', `${model}: the SDK's own description`);
    t.equal(h.authorization, 'Bearer sk-upstream-secret-123', `${model}: the provider's key, not the client's`);
    for (const k of ['cookie', 'x-api-key', 'openai-organization', 'openai-project', 'x-other']) t.notOk(k in h, `${model}: ${k} not forwarded`);
  }
});

t.test('the OpenAI SDK, streamed: its x-stainless-* headers reach the upstream', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', defaultHeaders: { 'OpenAI-Beta': 'responses=v1' } });
  const stream = await client.chat.completions.create({ model: 'oa/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  t.equal(text, 'Hello from the fake upstream');
  const h = up.received.at(-1)!.headers;
  t.equal(h['openai-beta'], 'responses=v1');
  t.match(h['x-stainless-lang'], 'js', 'the SDK named itself');
  t.equal(h.authorization, 'Bearer sk-upstream-secret-123');
});
