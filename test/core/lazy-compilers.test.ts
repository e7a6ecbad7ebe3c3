// Fastify's schema compilers through the app's lazy factory (src/core/lazy-validator.ts): a route with a body, a
// header and a response schema, and no compiler of its own, answers exactly as it does on a Fastify app with the
// default factory (the 400 and its message, coercion, defaults, the serialised response), and the factory builds its
// compilers once, on the first route that needs them.

import Fastify, { type FastifyInstance } from 'fastify';
import t from 'tap';
import { lazyCompilersFactory } from '../../src/core/lazy-validator.js';

const BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['n'],
  properties: { n: { type: 'integer', minimum: 1 }, tag: { type: 'string', default: 'none' } },
} as const;

function app(lazy: boolean): FastifyInstance {
  const a = Fastify(lazy ? { schemaController: { compilersFactory: lazyCompilersFactory } } : {});
  a.post('/r', {
    schema: {
      body: BODY,
      headers: { type: 'object', properties: { 'x-count': { type: 'integer' } } },
      response: { 200: { type: 'object', properties: { n: { type: 'integer' }, tag: { type: 'string' }, count: { type: 'integer' } } } },
    },
  }, async (req) => ({ ...(req.body as object), count: (req.headers as { 'x-count'?: number })['x-count'], secret: 'not in the schema' }));
  return a;
}

t.test('the lazy factory validates, coerces and serialises as fastify\'s default does', async (t) => {
  const plain = app(false);
  const lazy = app(true);
  t.teardown(() => Promise.all([plain.close(), lazy.close()]));
  const cases: { body: string; headers?: Record<string, string> }[] = [
    { body: '{"n": 2}', headers: { 'x-count': '7' } },
    { body: '{"n": "3", "tag": "a"}' },
    { body: '{"n": 0}' },
    { body: '{"tag": "a"}' },
    { body: '{"n": 1, "extra": true}' },
    { body: '{"n": 1}', headers: { 'x-count': 'many' } },
  ];
  for (const c of cases) {
    const req = { method: 'POST' as const, url: '/r', headers: { 'content-type': 'application/json', ...c.headers }, payload: c.body };
    const [a, b] = await Promise.all([plain.inject(req), lazy.inject(req)]);
    t.same([b.statusCode, b.body], [a.statusCode, a.body], `${c.body} ${JSON.stringify(c.headers ?? {})}: ${a.statusCode}`);
  }
  const ok = await lazy.inject({ method: 'POST', url: '/r', headers: { 'content-type': 'application/json', 'x-count': '7' }, payload: '{"n": "2"}' });
  t.same(ok.json(), { n: 2, tag: 'none', count: 7 }, 'coerced, defaulted, the header coerced, the response serialised by its schema');
  const bad = await lazy.inject({ method: 'POST', url: '/r', headers: { 'content-type': 'application/json' }, payload: '{"n": 0}' });
  t.equal(bad.statusCode, 400, 'a value below the minimum is refused');
});
