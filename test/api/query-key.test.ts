// The gateway key as `?key=` (docs/config.md: every route takes it; Gemini clients send it so) on the routes that
// refuse unknown query parameters (src/api/analytics/params.ts QueryReader): the gate reads it, the route ignores it,
// a parameter that is really unknown is still a 400, and the key is never echoed in an answer.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { errorCode, send, type Answer } from '../helpers/raw-http.js';

const KEY = 'k-query-0123456789abcdef';
const gw = await startApp(t, { server: { api_keys: [{ name: 'reader', key: KEY }] }, providers: { demo: DEMO_PROVIDER } });

// Every /api/* route that reads its query through QueryReader.
const ROUTES = [
  '/api/usage', '/api/usage/logs', '/api/usage/request-logs', '/api/usage/cost', '/api/usage/projection',
  '/api/usage/combos', '/api/usage/hourly', '/api/usage/overview', '/api/catalog',
];

const get = (path: string): Promise<Answer> => send(gw.url, 'GET', path);
const echoes = (a: Answer): boolean => a.body.includes(KEY) || JSON.stringify(a.headers).includes(KEY);

t.test('?key= is the gate\'s, taken and ignored by every strict route', async (t) => {
  for (const route of ROUTES) {
    const a = await get(`${route}?key=${KEY}`);
    t.equal(a.status, 200, `${route}?key=: ${a.body.slice(0, 200)}`);
    t.notOk(echoes(a), `${route}: the key is not echoed`);
  }
  const withParam = await get(`/api/usage?period=7d&key=${KEY}`);
  t.equal(withParam.status, 200, 'beside a real parameter');
  t.equal((JSON.parse(withParam.body) as { period: string }).period, '7d');
  t.equal((await get('/api/usage')).status, 401, 'without a key: refused as before');
  t.equal((await get('/api/usage?key=wrong-key-0123456789')).status, 401, 'a wrong ?key=: refused');
});

t.test('an unknown parameter is still a 400 that names it, without the key', async (t) => {
  for (const route of ROUTES) {
    const a = await get(`${route}?key=${KEY}&bogus=1`);
    t.equal(a.status, 400, route);
    t.equal(errorCode(a), 'TOLLGATE_ERR_INVALID_QUERY');
    t.match(JSON.parse(a.body), { error: { message: /unknown query parameter "bogus"/ } });
    t.notOk(echoes(a), `${route}: the key is not echoed`);
  }
});
