// Start (issue 17): packages the request path does not need are not loaded at start. The built CLI runs in a child
// process with a preload that writes the main thread's CommonJS module cache to a file every 50 ms; after it has proxied a traced
// request, the cache says what was loaded: the W3C propagator's own module and not the rest of @opentelemetry/core
// (nor @opentelemetry/semantic-conventions, which that index loads), and not @fastify/send until a console file is
// asked for (which then loads it: the check can fail), and not fastify's schema compilers nor Ajv until a route with a
// schema is first called.

import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { cliConfig, spawnCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

t.test('the built CLI loads the console\'s sender on first use and only the propagator of @opentelemetry/core', async (t) => {
  const { dir, file, base, up } = await cliConfig(t, 'tollgate-lazy-');
  const out = join(dir, 'modules.json');
  const preload = join(dir, 'modules.cjs');
  // Workers get the preload too (NODE_OPTIONS), each with a module cache of its own: the main thread's alone is written.
  writeFileSync(preload, `const fs = require('node:fs');
if (require('node:worker_threads').isMainThread) setInterval(() => {
  fs.writeFileSync(${JSON.stringify(`${out}.tmp`)}, JSON.stringify({ at: Date.now(), modules: Object.keys(require.cache) }));
  fs.renameSync(${JSON.stringify(`${out}.tmp`)}, ${JSON.stringify(out)});
}, 50).unref();
`);
  const cli = spawnCli(t, ['--config', file], { cwd: dir, env: { NODE_OPTIONS: `--require ${preload}` } });
  const snapshot = (): { at: number; modules: string[] } => (existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : { at: 0, modules: [] });
  /** The modules loaded by the time of a snapshot taken after `after` (epoch ms). */
  const loadedAfter = async (after: number): Promise<string[]> => {
    await waitFor(() => snapshot().at > after, 5_000);
    return snapshot().modules;
  };
  await waitFor(async () => {
    if (!cli.running()) throw new Error(`the CLI exited: ${cli.out.stderr}${cli.out.stdout}`);
    try {
      return (await request(`${base}/health`)).statusCode === 200;
    } catch {
      return false;
    }
  }, 30_000);

  const res = await request(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${TRACE}-00f067aa0ba902b7-01`, tracestate: 'vendor=a,other=b' },
    body: JSON.stringify({ model: 'open/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.statusCode, 200, 'proxied');
  await res.body.dump();
  const sent = up.received.at(-1)!.headers;
  t.match(sent.traceparent, new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`), 'the client\'s trace went upstream');
  t.equal(sent.tracestate, 'vendor=a,other=b', 'with its tracestate');

  // What was loaded by a moment after the request was answered (so after every module of the start).
  const served = await loadedAfter(Date.now());
  const has = (mods: string[], re: RegExp) => mods.some((m) => re.test(m));
  t.ok(has(served, /@opentelemetry\/core\/build\/src\/trace\/W3CTraceContextPropagator\.js$/), 'the propagator\'s module is loaded (the check sees @opentelemetry/core)');
  t.notOk(has(served, /@opentelemetry\/core\/build\/src\/index\.js$/), 'not the index of @opentelemetry/core');
  t.notOk(has(served, /@opentelemetry\/semantic-conventions\//), 'not @opentelemetry/semantic-conventions');
  t.notOk(has(served, /@fastify\/(send|static)\//), 'no console file asked for: neither @fastify/send nor @fastify/static is loaded');
  t.notOk(has(served, /@fastify\/ajv-compiler\//), 'no schema compiled: not fastify\'s validator compiler');
  t.notOk(has(served, /\/ajv\/dist\/(ajv|core)\.js$/), 'nor Ajv itself (the config validators use only its runtime helpers)');
  t.notOk(has(served, /@fastify\/fast-json-stringify-compiler\/|\/fast-json-stringify\/index\.js$/), 'nor the serializer compiler (fastify\'s error serializer uses only its runtime)');
  t.ok(has(served, /\/ajv\/dist\/runtime\/equal\.js$/), 'the config validators\' runtime helper is (the check sees ajv\'s files)');

  const js = await request(`${base}/console/app.js`);
  t.equal(js.statusCode, 200, 'a console file');
  await js.body.dump();
  t.ok(has(await loadedAfter(Date.now()), /@fastify\/send\/index\.js$/), 'asked for a console file: @fastify/send is loaded now');

  // A route with a schema, validated by fastify's own compiler on its first request: a 400 for a wrong type, then
  // the compiler (and Ajv) are loaded.
  const bad = await request(`${base}/api/settings/budgets`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ daily_usd: 'lots' }) });
  const badBody = (await bad.body.json()) as { error?: { message?: string } };
  t.equal(bad.statusCode, 400, 'a settings body of the wrong type is refused');
  t.match(badBody.error?.message, /daily_usd/, 'naming the field');
  const later = await loadedAfter(Date.now());
  t.ok(has(later, /@fastify\/ajv-compiler\/index\.js$/) && has(later, /\/ajv\/dist\/core\.js$/), 'validated: fastify\'s compiler and Ajv are loaded now');
});
