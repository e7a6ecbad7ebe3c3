// The built CLI runs from a bundle (scripts/build-bundle.mjs): dist/main.js only imports dist/bundle/main.js. The
// modules that resolve a path from their own file keep resolving it from the bundle, which lies as deep under the
// package root as they do: the console's files (api/console.ts), the version from package.json (store/archive.ts), the
// release notes from CHANGELOG.md (api/status.ts), and fastify's compilers resolved from fastify
// (core/lazy-validator.ts). Each is asked of the running CLI here and compared with the file it comes from. And a
// package the bundle holds but imports only on first use (undici's index) works when it comes: its chunk's namespace
// has only a default export, which src/core/undici.ts takes (the tunnel check fails without that). Every chunk is
// ASCII (one other character makes Node decode the whole file the slow way and V8 keep its source as two-byte text),
// with the packages' license notices kept verbatim beside them.

import t from 'tap';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { MAIN, cliConfig, serveCli } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

t.test('dist/main.js imports the bundle, and nothing else', async (t) => {
  const lines = readFileSync(MAIN, 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith('//') && !l.startsWith('#!'));
  t.same(lines, ["import './bundle/main.js';"]);
  // Without code splitting, esbuild inlines main.ts's lazy imports of our modules (the app among them).
  t.match(readFileSync(join(ROOT, 'dist', 'bundle', 'main.js'), 'utf8'), /import\("\.\/app-[A-Z0-9]+\.js"\)/, 'the app is a chunk of its own, imported lazily');
});

t.test('every chunk of the bundle is ASCII, the license notices kept verbatim beside them', async (t) => {
  const dir = join(ROOT, 'dist', 'bundle');
  const files = readdirSync(dir);
  const chunks = files.filter((f) => f.endsWith('.js'));
  t.ok(chunks.length > 5, `${chunks.length} chunks`);
  t.same(chunks.filter((f) => /[^\x00-\x7f]/.test(readFileSync(join(dir, f), 'utf8'))), [], 'no chunk has a non-ASCII character');
  const legal = files.filter((f) => f.endsWith('.LEGAL.txt')).map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
  // A notice whose author's name is not ASCII (formdata-polyfill's, through undici and fastify's inject): kept as written.
  t.match(legal, /formdata-polyfill\. MIT License\. Jimmy W\u00e4rting/, 'a license notice kept as it was written');
  t.match(legal, /@fastify\/proxy-addr/, 'and the others');
});

t.test('the bundled CLI finds its console, version, release notes and schema compilers', async (t) => {
  const { dir, file, base } = await cliConfig(t, 'tollgate-bundle-');
  await serveCli(t, file, base, dir);

  const proxied = await request(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'open/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(proxied.statusCode, 200, 'a request proxied');
  await proxied.body.dump();

  const css = await request(`${base}/console/app.css`);
  t.equal(css.statusCode, 200, 'a console file');
  t.equal(await css.body.text(), readFileSync(join(ROOT, 'dist', 'console', 'app.css'), 'utf8'), 'the one in dist/console');

  const version = await request(`${base}/api/version`);
  const v = (await version.body.json()) as { version: string; release_notes: { section: string; notes: string } | null };
  t.equal(v.version, (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version, 'the version from package.json');
  t.equal(v.release_notes?.section, 'Unreleased', 'release notes from CHANGELOG.md');
  t.ok(v.release_notes !== null && readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8').includes(v.release_notes.notes.slice(0, 200)), 'its text');

  const bad = await request(`${base}/api/settings/budgets`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ daily_usd: 'lots' }) });
  t.equal(bad.statusCode, 400, 'a settings body validated by fastify\'s compiler, resolved from fastify');
  await bad.body.dump();
});

t.test('the bundled CLI imports undici\'s index on first use, with its named exports (the tunnel check)', async (t) => {
  // src/core/undici.ts: what calls out now and then (the tunnel check, a webhook, a usage source) imports the whole
  // package on its first call; in the bundle that is a chunk of its own, whose namespace has only a default export.
  const { dir, file, base } = await cliConfig(t, 'tollgate-bundle-undici-');
  const config = parse(readFileSync(file, 'utf8')) as { server: Record<string, unknown> };
  config.server.public_url = base; // this instance itself: its /health answers with its own instance id
  writeFileSync(file, stringify(config));
  await serveCli(t, file, base, dir);

  const res = await request(`${base}/api/tunnel`);
  const tunnel = (await res.body.json()) as { state: string; http_status: number | null; error: string | null };
  t.equal(res.statusCode, 200);
  t.same({ state: tunnel.state, http_status: tunnel.http_status, error: tunnel.error }, { state: 'reaches_this_instance', http_status: 200, error: null }, 'the check reached this instance through undici');
});
