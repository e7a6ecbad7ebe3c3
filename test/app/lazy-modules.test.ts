// Start (issue 17): packages the request path does not need are not loaded at start. Two views of one start:
// - The packages the bundle holds (scripts/build-bundle.mjs) are in its chunks: esbuild's account of them
//   (dist/bundle/meta.json) says which modules are in the chunks a start imports (the entry, the app, and what they
//   import statically): of @opentelemetry/core only the W3C propagator's module, of undici its Pool and `request`
//   and what they use (src/core/undici.ts: the index, with fetch, WebSocket and the mocks, is in a chunk of its own).
// - The packages left as imports of node_modules load through Node's module cache: the built CLI runs in a child
//   process with a preload that writes the main thread's CommonJS module cache to a file every 50 ms; after it has
//   proxied a traced request, the cache says what was loaded: not @opentelemetry/semantic-conventions, not
//   @fastify/send until a console file is asked for (which then loads it: the check can fail), and not fastify's
//   schema compilers nor Ajv until a route with a schema is first called.

import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { MAIN, cliConfig, spawnCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

/** Does any of `mods` (module paths) match `re`? */
const has = (mods: string[], re: RegExp): boolean => mods.some((m) => re.test(m));

interface Metafile {
  outputs: Record<string, { inputs: Record<string, unknown>; imports: { path: string; kind: string; external?: boolean }[] }>;
}

t.test('the chunks a start imports hold the propagator of @opentelemetry/core and undici\'s Pool, not their indexes', async (t) => {
  const bundle = join(dirname(MAIN), 'bundle');
  const meta = JSON.parse(readFileSync(join(bundle, 'meta.json'), 'utf8')) as Metafile;
  const prefix = Object.keys(meta.outputs).find((k) => k.endsWith('/main.js'))!.slice(0, -'main.js'.length);
  const main = meta.outputs[`${prefix}main.js`]!;
  // `serve` imports the app (main.ts: `await import('./app.js')`); every chunk either imports statically comes with it.
  const app = main.imports.find((i) => i.kind === 'dynamic-import' && /\/app-[A-Z0-9]+\.js$/.test(i.path));
  t.ok(app, 'the entry imports the app chunk lazily');
  const atStart = new Set<string>();
  const visit = (path: string): void => {
    if (atStart.has(path)) return;
    atStart.add(path);
    for (const i of meta.outputs[path]?.imports ?? []) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  visit(`${prefix}main.js`);
  visit(app!.path);
  const loaded = [...atStart].flatMap((c) => Object.keys(meta.outputs[c]!.inputs));
  const bundled = Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs));
  t.ok(has(loaded, /node_modules\/fastify\/fastify\.js$/), 'fastify is in them (the check sees the packages)');
  t.ok(has(loaded, /node_modules\/@opentelemetry\/core\/build\/src\/trace\/W3CTraceContextPropagator\.js$/), 'the propagator\'s module is');
  t.notOk(has(loaded, /node_modules\/@opentelemetry\/core\/build\/src\/index\.js$/), 'not the index of @opentelemetry/core');
  t.ok(has(loaded, /node_modules\/undici\/lib\/dispatcher\/pool\.js$/) && has(loaded, /node_modules\/undici\/lib\/api\/api-request\.js$/), 'undici\'s Pool and its request are');
  t.notOk(has(loaded, /node_modules\/undici\/index\.js$/), 'not undici\'s index');
  t.notOk(has(loaded, /node_modules\/undici\/lib\/(web\/(fetch\/index|websocket\/websocket|eventsource\/eventsource)|mock\/mock-agent)\.js$/), 'nor fetch, WebSocket, EventSource or the mocks');
  t.ok(has(bundled, /node_modules\/undici\/index\.js$/), 'the index is in the bundle, in a chunk imported on first use');
});

t.test('the built CLI loads the console\'s sender and the schema compilers on first use', async (t) => {
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
