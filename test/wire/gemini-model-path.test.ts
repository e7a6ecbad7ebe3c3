// A Gemini model id is one path segment of the upstream URL: put in it as it came, an unlisted id (a provider with
// `allow_unlisted_models`) holding `:`, `?` or `/..` called another method or resource of the Gemini API with the
// provider's key (`gemini-2.5-flash:batchEmbedContents?` made a batch embedding call, recorded as a success). A tuned
// model (`tunedModels/…`) is served under its own collection, not under `/models/`.

import t from 'tap';
import { listenLoopback } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';
import { modelPath } from '../../src/wire/gemini/wire.js';

t.test('modelPath: one encoded segment under models/ or tunedModels/', async (t) => {
  t.equal(modelPath('gemini-2.5-flash'), '/models/gemini-2.5-flash');
  t.equal(modelPath('models/gemini-2.5-flash'), '/models/gemini-2.5-flash', 'a leading models/ taken off');
  t.equal(modelPath('tunedModels/my-tuned'), '/tunedModels/my-tuned');
  t.equal(modelPath('gemini-1.5-pro@001'), '/models/gemini-1.5-pro@001', '@ kept');
  t.equal(modelPath('gemini-2.5-flash:batchEmbedContents?'), '/models/gemini-2.5-flash%3AbatchEmbedContents%3F');
  t.equal(modelPath('../files?x=#y'), '/models/..%2Ffiles%3Fx%3D%23y');
  t.throws(() => modelPath('gem\ud800'), { code: 'TOLLGATE_ERR_INVALID_REQUEST' }, 'a lone surrogate: the client\'s error, not a 500');
});

t.test('through the gateway: the upstream gets the routed method on the encoded id, passthrough and translated', async (t) => {
  const got: string[] = [];
  const up = await listenLoopback(t, async (req, res) => {
    for await (const _ of req);
    got.push(req.url!);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
    }));
  }, (err, res) => res.writeHead(500).end(String(err)));
  const gw = await startApp(t, {
    providers: {
      ge: {
        group: 'paid', format: 'gemini', base_url: `http://127.0.0.1:${up.port}/v1beta`, auth: { type: 'api_key', key: 'k' },
        price: { input: 1, output: 1 }, allow_unlisted_models: true, models: { 'tunedModels/my-tuned': { kind: 'llm' } },
      },
    },
  });
  const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
  const native = await fetch(`${gw.url}/v1beta/models/ge/gemini-2.5-flash%3AbatchEmbedContents%3F:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.equal(native.status, 200);
  t.equal(got.at(-1), '/v1beta/models/gemini-2.5-flash%3AbatchEmbedContents%3F:generateContent', 'passthrough: the id one segment, the routed method');
  const chat = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'ge/gemini-2.5-flash:batchGenerateContent?x=', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(chat.status, 200);
  t.equal(got.at(-1), '/v1beta/models/gemini-2.5-flash%3AbatchGenerateContent%3Fx%3D:generateContent', 'translated: the same');
  const tuned = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'ge/tunedModels/my-tuned', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(tuned.status, 200);
  t.equal(got.at(-1), '/v1beta/tunedModels/my-tuned:generateContent', 'a tuned model under its own collection');
  const lone = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: '{"model":"ge/gem\\ud800","messages":[{"role":"user","content":"hi"}]}',
  });
  t.equal(lone.status, 400, 'a lone surrogate in the id: 400');
  t.match(await lone.json(), { error: { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'model' } });
});
