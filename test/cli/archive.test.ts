// `tollgate export` and `tollgate import` on the built CLI (dist/main.js; `npm run build` first) against a gateway
// started by the same CLI: the URL comes from the config's server.host/port, the admin key from --key or
// TOLLGATE_API_KEY; without a key a gateway with keys refuses, and the command exits 1 saying why.

import t from 'tap';
import { demoProvidersYaml } from '../helpers/app.js';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, spawnCli } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const KEY = 'k-cli-admin-0123456789abcdef';
const dir = tempDir(t);
const port = await freePort();
const file = join(dir, 'config.yaml');
writeFileSync(file, `
server:
  host: 127.0.0.1
  port: ${port}
  api_keys:
    - { name: admin, key: "\${TOLLGATE_API_KEY}", role: admin }
storage:
  data_dir: ${JSON.stringify(join(dir, 'data'))}
  batch: { flush_ms: 50 }
${demoProvidersYaml()}`);
const server = spawnCli(t, ['--config', file], { cwd: dir, env: { TOLLGATE_API_KEY: KEY } });
await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200, 30_000);
const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
  method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
});
await res.text();
await new Promise((r) => setTimeout(r, 300)); // the row reaches the store (flush_ms 50)

t.test('export writes the archive; import of it finds everything already present', async (t) => {
  const out = join(dir, 'backup.tar.gz');
  const exported = await runCli(t, ['export', '--config', file, '--out', out], { cwd: dir, env: { TOLLGATE_API_KEY: KEY } });
  t.equal(exported.code, 0, exported.stderr);
  t.match(exported.stdout, `exported to ${out}`);
  t.same(execFileSync('tar', ['-tzf', out], { encoding: 'utf8' }).trim().split('\n'), ['manifest.json', 'config.yaml', 'tables/alert_deliveries.native', 'tables/alerts.native', 'tables/requests.native']);
  t.same(readdirSync(dir).filter((f) => f.endsWith('.partial')), [], 'no partial file left');
  const imported = await runCli(t, ['import', out, '--url', `http://127.0.0.1:${port}`, '--key', KEY], { cwd: dir });
  t.equal(imported.code, 0, imported.stderr);
  t.match(imported.stdout, /requests: 0 imported, 1 already present/);
  t.match(imported.stdout, /alerts: 0 imported, 0 already present/);
});

t.test('without the admin key: exit 1 and the reason', async (t) => {
  // --url: the gateway named, the config file not read
  const run = await runCli(t, ['export', '--url', `http://127.0.0.1:${port}`, '--out', join(dir, 'x.tar.gz')], { cwd: dir });
  t.equal(run.code, 1);
  t.match(run.stderr, /re-authentication failed: HTTP 401 .*pass an admin key with --key or TOLLGATE_API_KEY/);
  t.notOk(existsSync(join(dir, 'x.tar.gz')));
  const wrong = await runCli(t, ['import', join(dir, 'backup.tar.gz'), '--url', `http://127.0.0.1:${port}/`, '--key', 'k-wrong-0000000000000000'], { cwd: dir });
  t.equal(wrong.code, 1);
  t.match(wrong.stderr, /re-authentication failed: HTTP 401/);
  t.equal(server.running(), true, 'the gateway is still up');
});

t.test('Ctrl-C during an export leaves no partial file, and the next export to the same name works', async (t) => {
  const { createServer } = await import('node:http');
  // a stand-in gateway whose export is slow (a big store): reauth answers a token, the archive trickles
  let slow = true;
  const srv = createServer((req, res) => {
    if (req.url === '/api/admin/reauth') return void res.end('{"token":"t"}');
    res.writeHead(200, { 'content-type': 'application/gzip' });
    if (!slow) return void res.end(Buffer.alloc(10));
    const iv = setInterval(() => res.write(Buffer.alloc(1024)), 50);
    res.on('close', () => clearInterval(iv));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => { srv.closeAllConnections(); srv.close(() => r()); }));
  const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  const work = tempDir(t);
  const out = join(work, 'backup.tar.gz');
  const p = spawnCli(t, ['export', '--url', url, '--out', out], { cwd: work });
  await waitFor(() => readdirSync(work).some((f) => f.endsWith('.partial')), 10_000);
  p.child.kill('SIGINT');
  const { code } = await p.exited;
  t.equal(code, 130, 'exit 130, as a shell reports Ctrl-C');
  t.same(readdirSync(work), [], 'the partial file is removed');
  slow = false;
  const again = await runCli(t, ['export', '--url', url, '--out', out], { cwd: work });
  t.equal(again.code, 0, again.stderr);
  t.same(readdirSync(work), ['backup.tar.gz']);
});

// From a review of the command line: `--out` naming a FIFO (a pipe into gpg) or a device was replaced by an ordinary
// file (the partial file renamed over it; as root, /dev/null itself) and its reader got nothing; a server's suggested
// name was taken as it came (a hostile --url named config.yaml and overwrote it); the archive was world-readable.
t.test('--out a FIFO: written through, the FIFO stays one and its reader gets the archive', async (t) => {
  const fifo = join(dir, 'pipe');
  execFileSync('mkfifo', [fifo]);
  const { spawn } = await import('node:child_process');
  const cat = spawn('sh', ['-c', `cat ${JSON.stringify(fifo)} | wc -c`]);
  let counted = '';
  cat.stdout.on('data', (d: Buffer) => (counted += String(d)));
  const closed = new Promise((r) => cat.on('close', r));
  const run = await runCli(t, ['export', '--config', file, '--out', fifo], { cwd: dir, env: { TOLLGATE_API_KEY: KEY } });
  await closed;
  t.equal(run.code, 0, run.stderr);
  t.ok(statSync(fifo).isFIFO(), 'still a FIFO');
  const bytes = Number(counted.trim());
  t.ok(bytes > 1000, `the reader got the archive (${bytes} bytes)`);
  t.match(run.stdout, `exported to ${fifo} (${bytes} bytes)`);
  t.same(readdirSync(dir).filter((f) => f.endsWith('.partial')), [], 'no partial file left');
});

t.test('a suggested name other than tollgate-export-*.tar.gz is not taken, and no file is replaced without --out', async (t) => {
  const { createServer } = await import('node:http');
  const srv = createServer((req, res) => {
    if (req.url === '/api/admin/reauth') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"token":"t"}');
    res.writeHead(200, { 'content-type': 'application/gzip', 'content-disposition': 'attachment; filename="config.yaml"' }).end('PWNED-CONTENT');
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => srv.close());
  const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  const work = tempDir(t);
  writeFileSync(join(work, 'config.yaml'), 'mine\n');
  const run = await runCli(t, ['export', '--url', url, '--key', 'k'], { cwd: work });
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /exported to tollgate-export\.tar\.gz/);
  t.equal(readFileSync(join(work, 'config.yaml'), 'utf8'), 'mine\n', 'config.yaml untouched');
  t.equal(statSync(join(work, 'tollgate-export.tar.gz')).mode & 0o777, 0o600, 'readable by its owner only');
  const again = await runCli(t, ['export', '--url', url, '--key', 'k'], { cwd: work });
  t.equal(again.code, 1, 'the default name exists: not replaced');
  t.match(again.stderr, /tollgate-export\.tar\.gz exists already: name another with --out/);
  t.equal(readFileSync(join(work, 'tollgate-export.tar.gz'), 'utf8'), 'PWNED-CONTENT', 'the earlier file kept');
  t.same(readdirSync(work).filter((f) => f.endsWith('.partial')), [], 'no partial file left');
});

// Without --url the commands read the gateway's address from the file, and only that: a config whose provider keys or
// data directory name variables this shell does not have (a cron job, a box without the provider keys) was refused
// whole ("environment variable SOME_KEY is not set"), as for a start. A variable of server.host or server.port
// itself is still needed, and its absence is the same error a start gives, naming it; the start still refuses.
t.test('without --url only server.host and server.port need their ${VAR}s', async (t) => {
  const partial = join(dir, 'partial-env.yaml');
  writeFileSync(partial, `
server:
  host: "\${GW_HOST:-127.0.0.1}"
  port: "\${GW_PORT}"
  api_keys:
    - { name: admin, key: "\${TOLLGATE_API_KEY}", role: admin }
storage:
  data_dir: "\${TOLLGATE_DATA_DIR}"
providers:
  paid: { group: paid, format: openai, base_url: https://api.example.com/v1, auth: { type: api_key, key: "\${SOME_KEY}" } }
`);
  const out = join(dir, 'partial-env.tar.gz');
  const exported = await runCli(t, ['export', '--config', partial, '--out', out], { cwd: dir, env: { TOLLGATE_API_KEY: KEY, GW_PORT: String(port) } });
  t.equal(exported.code, 0, exported.stderr);
  t.match(exported.stdout, `exported to ${out}`);
  const manifest = existsSync(out) ? JSON.parse(execFileSync('tar', ['-xzOf', out, 'manifest.json'], { encoding: 'utf8' })) as { tables: Record<string, { rows: number }> } : null;
  t.equal(manifest?.tables.requests?.rows, 1, 'the archive holds the request row');
  // the key from --key: the config's own ${TOLLGATE_API_KEY} (server.api_keys) is not needed either
  const imported = await runCli(t, ['import', out, '--config', partial, '--key', KEY], { cwd: dir, env: { GW_PORT: String(port) } });
  t.equal(imported.code, 0, imported.stderr);
  t.match(imported.stdout, /requests: 0 imported, 1 already present/);

  const notSet = /^invalid config .*partial-env\.yaml:\n {2}- server\.port: environment variable GW_PORT is not set \(use \$\{GW_PORT:-default\} for a default\)\n$/;
  const noPort = await runCli(t, ['export', '--config', partial, '--out', join(dir, 'none.tar.gz')], { cwd: dir, env: { TOLLGATE_API_KEY: KEY } });
  t.equal(noPort.code, 1);
  t.match(noPort.stderr, notSet, 'names the one variable it needs, not the others');
  t.notOk(existsSync(join(dir, 'none.tar.gz')));
  const noPortImport = await runCli(t, ['import', out, '--config', partial, '--key', KEY], { cwd: dir });
  t.equal(noPortImport.code, 1);
  t.match(noPortImport.stderr, notSet);
  const badPort = await runCli(t, ['import', out, '--config', partial, '--key', KEY], { cwd: dir, env: { GW_PORT: 'http' } });
  t.equal(badPort.code, 1);
  t.match(badPort.stderr, /- server\.port: expected integer/);

  // the gateway's own start and check-config still want every variable
  const start = await runCli(t, ['--config', partial], { cwd: dir, env: { TOLLGATE_API_KEY: KEY, GW_PORT: String(port) } });
  t.equal(start.code, 1);
  t.match(start.stderr, /storage\.data_dir: environment variable TOLLGATE_DATA_DIR is not set/);
  t.match(start.stderr, /providers\.paid\.auth\.key: environment variable SOME_KEY is not set/);
  const check = await runCli(t, ['check-config', partial], { cwd: dir, env: { TOLLGATE_API_KEY: KEY, GW_PORT: String(port) } });
  t.equal(check.code, 1);
  t.match(check.stderr, /environment variable SOME_KEY is not set/);
  t.equal(server.running(), true, 'the gateway is still up');
});

// A key name the start refuses, read past, left the default address (127.0.0.1:4000): the command took the admin key
// there, to another gateway or whatever listens on 4000, instead of saying what is wrong with the file.
t.test('without --url a misspelt address key is refused as a start refuses it, nothing sent anywhere', async (t) => {
  const typo = join(dir, 'typo.yaml');
  writeFileSync(typo, `server:\n  host: 127.0.0.1\n  prot: ${port}\n`);
  const run = await runCli(t, ['export', '--config', typo, '--out', join(dir, 'typo.tar.gz')], { cwd: dir, env: { TOLLGATE_API_KEY: KEY } });
  t.equal(run.code, 1);
  t.equal(run.stderr, `invalid config ${typo}:\n  - server.prot: unknown key\n`);
  t.notOk(existsSync(join(dir, 'typo.tar.gz')));
  const check = await runCli(t, ['check-config', typo], { cwd: dir });
  t.match(check.stderr, /- server\.prot: unknown key/, 'the start\'s own words');
});
