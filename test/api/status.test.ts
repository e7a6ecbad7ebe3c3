// GET /api/version and GET /api/tunnel (src/api/status.ts), and the settings of an app started without a config file.
// The tunnel is checked against loopback URLs only: this instance, another app (a plain server answering /health as
// another Tollgate would), and a closed port.

import t from 'tap';
import { createServer } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEMO_PROVIDER, startApp, testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { INSTANCE_HEADER, releaseNotes } from '../../src/api/status.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const raw = { server: { host: '127.0.0.1' }, storage: { data_dir: join(dir, 'data'), batch: { flush_ms: 50 } }, providers: { demo: DEMO_PROVIDER } };
writeFileSync(file, stringify(raw));
const gw = await startApp(t, raw, { dataDir: join(dir, 'data'), configFile: file });
const json = async (path: string) => (await (await fetch(`${gw.url}${path}`)).json()) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

t.test('releaseNotes: the version\'s section, else [Unreleased]', async (t) => {
  const log = '# Changelog\n\n## [Unreleased]\n\n### Added\n\n- next\n\n## [1.2.0] - 2026-01-01\n\n### Fixed\n\n- a bug\n\n## [1.1.0]\n\n- old\n';
  t.same(releaseNotes(log, '1.2.0'), { section: '1.2.0', released: true, notes: '### Fixed\n\n- a bug' });
  t.same(releaseNotes(log, '9.9.9'), { section: 'Unreleased', released: false, notes: '### Added\n\n- next' });
  t.equal(releaseNotes('# nothing here\n', '1.0.0'), null);
});

t.test('GET /api/version: version, its notes from the shipped CHANGELOG.md, the config on disk against what runs', async (t) => {
  const v = await json('/api/version');
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  t.match(v, { name: 'tollgate', version: pkg.version, instance_id: gw.app.tollgate.instanceId, config: { file, matches_running: true, error: null } });
  t.ok(v.release_notes.notes.length > 100, 'the notes of the section');
  t.equal(v.release_notes.notes, releaseNotes(readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8'), pkg.version)!.notes);
  // An edit on disk not applied (no watcher here): the page says so; a broken file says why.
  writeFileSync(file, stringify({ ...raw, budgets: { daily_usd: 3 } }));
  t.match(await json('/api/version'), { config: { matches_running: false, error: null } });
  writeFileSync(file, 'server: [unclosed\n');
  const broken = await json('/api/version');
  t.match(broken.config, { matches_running: false, error: /YAML syntax/ });
  writeFileSync(file, stringify(raw));
  t.match(await json('/api/version'), { config: { matches_running: true } });
});

t.test('GET /health carries the instance id', async (t) => {
  const res = await fetch(`${gw.url}/health`);
  t.equal(res.headers.get(INSTANCE_HEADER), gw.app.tollgate.instanceId);
  t.match(gw.app.tollgate.instanceId, /^[0-9a-f-]{36}$/);
});

t.test('GET /api/tunnel: not configured, this instance, another instance, unreachable', async (t) => {
  t.match(await json('/api/tunnel'), { public_url: null, state: 'not_configured', error: null });
  const use = (url: string) => gw.holder.replace(testConfig({ ...raw, server: { ...raw.server, public_url: url } }, join(dir, 'data')));

  use(gw.url);
  t.match(await json('/api/tunnel'), { public_url: gw.url, state: 'reaches_this_instance', http_status: 200, error: null });

  const other = createServer((req, res) => {
    res.writeHead(req.url === '/health' ? 200 : 404, { [INSTANCE_HEADER]: 'another-instance-id', 'content-type': 'application/json' });
    res.end('{"status":"ok"}');
  });
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => other.close(r)));
  const port = (other.address() as { port: number }).port;
  use(`http://127.0.0.1:${port}/`);
  t.match(await json('/api/tunnel'), { state: 'reaches_another_instance', http_status: 200 });

  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const closedPort = (closed.address() as { port: number }).port;
  await new Promise((r) => closed.close(r));
  use(`http://127.0.0.1:${closedPort}`);
  const down = await json('/api/tunnel');
  t.match(down, { state: 'unreachable', http_status: null, latency_ms: null, error: new RegExp(`127\\.0\\.0\\.1:${closedPort}/health`) });
});

t.test('the public_url must be an http(s) URL', async (t) => {
  t.throws(() => testConfig({ ...raw, server: { ...raw.server, public_url: 'ftp://x' } }, join(dir, 'data')), /server\.public_url/);
});
