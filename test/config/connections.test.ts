// Provider connections: several keys per provider, each with its own (region or cluster) base URL, used in turn;
// a key the upstream refuses cools down alone while the provider's other keys carry on; a free provider without
// auth sends no credentials. The row names the connection; /api/quota shows each connection's cooldown.

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { rowOf, spyFetch } from '../helpers/clients.js';

const us = await startFakeOpenAI(t);
const eu = await startFakeOpenAI(t);
const open = await startFakeOpenAI(t);
const gw = await startApp(t, {
  providers: {
    multi: fakeProvider(us.baseUrl, {
      auth: { type: 'api_key', keys: [{ name: 'us', key: 'sk-us-111' }, { name: 'eu', key: 'sk-eu-222', base_url: eu.baseUrl }] },
    }),
    gratis: fakeProvider(open.baseUrl, { group: 'free', auth: { type: 'none' } }),
  },
});
const spy = spyFetch();
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: spy.fetch });
const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });

t.test('keys are used in turn, each at its own base URL, and the row names the connection', async (t) => {
  const connections: string[] = [];
  for (let i = 0; i < 4; i++) {
    await ask('multi/gpt-4o');
    connections.push(String((await rowOf(gw, spy.last.headers.get('x-request-id')!)).connection));
  }
  t.same([us.received.length, eu.received.length], [2, 2], 'two requests to each region');
  t.same(connections.slice().sort(), ['eu', 'eu', 'us', 'us']);
  t.ok(us.received.every((r) => r.headers.authorization === 'Bearer sk-us-111'), "the us region gets the us key");
  t.ok(eu.received.every((r) => r.headers.authorization === 'Bearer sk-eu-222'), 'the eu region gets the eu key');
});

t.test('a refused key cools down alone; the provider carries on with its other key', async (t) => {
  const [u0, e0] = [us.received.length, eu.received.length];
  // Four requests so far: the turn is back at the first key, us.
  us.next({ kind: 'error', status: 401, body: { error: { message: 'invalid api key', type: 'invalid_request_error', code: 'invalid_api_key' } } });
  const err = await ask('multi/gpt-4o').catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.AuthenticationError, 'a direct request gets the 401 (it is not retried)');
  for (let i = 0; i < 3; i++) await ask('multi/gpt-4o');
  t.same([us.received.length - u0, eu.received.length - e0], [1, 3], 'after us was refused, the next three went to eu');
  const quota = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; connections: string[]; cooldown: { cooling: boolean; connections: { name: string; cooling: boolean; reason: string | null }[] } }[] };
  const multi = quota.providers.find((p) => p.id === 'multi')!;
  t.same(multi.connections, ['us', 'eu']);
  t.equal(multi.cooldown.cooling, false, 'the provider is not cooling: one key is fine');
  t.same(multi.cooldown.connections.map((c) => [c.name, c.cooling, c.reason]), [['us', true, '401'], ['eu', false, null]]);
});

t.test('a free provider without auth sends no credentials', async (t) => {
  await ask('gratis/gpt-4o');
  const h = open.received.at(-1)!.headers;
  t.equal(h.authorization, undefined);
  t.equal(h['x-api-key'], undefined);
  const row = await rowOf(gw, spy.last.headers.get('x-request-id')!);
  t.same([row.connection, Number(row.cost), row.provider_group], ['default', 0, 'free']);
});

t.test('secrets never reach rows, metrics or /api/quota', async (t) => {
  const rows = JSON.stringify(await gw.rows());
  const metrics = await gw.metrics();
  const quota = await (await fetch(`${gw.url}/api/quota`)).text();
  for (const secret of ['sk-us-111', 'sk-eu-222']) {
    t.notMatch(rows, secret);
    t.notMatch(metrics, secret);
    t.notMatch(quota, secret);
  }
});
