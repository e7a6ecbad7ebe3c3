// A query string that does not decode is a 400 BAD_REQUEST in the error shape (docs/errors.md), as a path that does not
// decode is: fastify's query parser took it as it came, so `?provider=%E0%A4%A` answered 200, filtered on the raw text.

import t from 'tap';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';

const gw = await startApp(t, { providers: { demo: DEMO_PROVIDER } });

const get = async (path: string) => {
  const r = await fetch(`${gw.url}${path}`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

t.test('a query that does not decode is refused, on the API and the data plane', async (t) => {
  for (const path of ['/api/usage?provider=%E0%A4%A', '/api/usage?period=%ZZ', '/api/usage/logs?model=%', '/health?x=%C0%AF']) {
    const a = await get(path);
    t.match(a, { status: 400, body: { error: { code: 'TOLLGATE_ERR_BAD_REQUEST', message: /query string does not decode/ } } }, path);
  }
  const r = await fetch(`${gw.url}/v1beta/models/demo/echo-1:generateContent?alt=%`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  });
  t.equal(r.status, 400, 'the data plane too');
  t.match(await r.json(), { error: { code: 'TOLLGATE_ERR_BAD_REQUEST' } });
});

t.test('a query that decodes is served as before', async (t) => {
  const a = await get('/api/usage?provider=a%20b%26c');
  t.equal(a.status, 200);
  t.match(a.body, { filters: { provider: 'a b&c' } }, 'decoded once');
  t.equal((await get('/api/usage?period=today')).status, 200, 'no % at all');
});
