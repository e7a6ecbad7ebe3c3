// `tollgate [--config FILE]` on the built CLI (dist/main.js; `npm run build` first). An invalid config exits
// non-zero before anything listens; a valid one serves /health on 127.0.0.1:$PORT, applies live edits of its file
// (and counts rejected ones in /metrics), and exits 0 on SIGTERM. Every server started here is killed at teardown.

import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tempDir } from '../helpers/tmp.js';
import { spawnCli, type Proc } from '../helpers/cli.js';
import { accepts, freePort } from '../helpers/net.js';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';

const start = spawnCli;

/** Probe `port` until the process exits; resolves with how many connection attempts succeeded. */
async function connectionsUntilExit(p: Proc, port: number, timeoutMs = 30_000): Promise<number> {
  let accepted = 0;
  let exited = false;
  void p.exited.then(() => (exited = true));
  const end = Date.now() + timeoutMs;
  while (!exited && Date.now() < end) {
    if (await accepts(port)) accepted++;
    await new Promise((r) => setTimeout(r, 20));
  }
  return accepted;
}

async function health(port: number): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`)).status;
  } catch {
    return 0;
  }
}

const config = (opts: { port: number; dataDir: string; host?: string; models?: string[]; extra?: string }) => `
server:
  host: ${opts.host ?? '127.0.0.1'}
  port: ${opts.port}
storage:
  data_dir: ${JSON.stringify(opts.dataDir)}
  batch: { flush_ms: 50 }
providers:
  demo:
    name: Demo
    group: paid
    format: mock
    price: { input: 1, output: 2 }
    mock: { chunks: 4, latency_ms: 0, chunk_delay_ms: 0 }
    models:
${(opts.models ?? ['echo-1']).map((m) => `      ${m}: { kind: llm }`).join('\n')}
${opts.extra ?? ''}`;

/** A gateway started by the CLI on a fresh directory and port, with the demo config (not yet waited for). */
async function served(t: Parameters<typeof tempDir>[0]): Promise<{ dir: string; port: number; file: string; dataDir: string; p: Proc }> {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'tollgate.yaml');
  const dataDir = join(dir, 'data');
  writeFileSync(file, config({ port, dataDir }));
  return { dir, port, file, dataDir, p: start(t, ['--config', file], { cwd: dir }) };
}

t.test('serving an invalid config exits 1 before listening', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, config({ port, dataDir: join(dir, 'data'), extra: 'unknown_section: {}\n' }));
  const p = start(t, ['--config', file], { cwd: dir });
  const accepted = await connectionsUntilExit(p, port);
  const { code } = await p.exited;
  t.equal(code, 1, 'exit code 1');
  t.equal(accepted, 0, `nothing ever accepted a connection on ${port}`);
  t.notOk(await accepts(port), 'and nothing listens now');
  t.match(p.out.stderr, `invalid config ${file}:\n  - unknown_section: unknown key`);
  t.notOk(existsSync(join(dir, 'data')), 'the store was never opened');
});

t.test('TOLLGATE_CONFIG selects the file to serve', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'from-env.yaml');
  writeFileSync(file, config({ port, dataDir: join(dir, 'data') }).replace('group: paid', 'group: gold'));
  const p = start(t, [], { cwd: dir, env: { TOLLGATE_CONFIG: file } });
  const accepted = await connectionsUntilExit(p, port);
  t.equal((await p.exited).code, 1);
  t.equal(accepted, 0);
  t.match(p.out.stderr, `invalid config ${file}:\n  - providers.demo.group: expected one of: subscription, paid, free`);
});

t.test('a public host without api keys is refused before listening', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'public.yaml');
  writeFileSync(file, config({ port, dataDir: join(dir, 'data'), host: '0.0.0.0' }));
  const p = start(t, ['--config', file], { cwd: dir });
  const accepted = await connectionsUntilExit(p, port);
  t.equal((await p.exited).code, 1);
  t.equal(accepted, 0);
  t.match(p.out.stderr, /server\.api_keys: at least one key is required when server\.host \(0\.0\.0\.0\) is not a loopback address/);
});

t.test('the compose config with the .env.example key, a placeholder or no key refuses to start, naming the key path', async (t) => {
  const deployed = resolve(import.meta.dirname, '../../deploy/tollgate.compose.yaml');
  const example = /^TOLLGATE_API_KEY=(.*)$/m.exec(readFileSync(resolve(import.meta.dirname, '../../.env.example'), 'utf8'))?.[1];
  t.equal(example, '', '.env.example ships no key value');
  const cases: [string, Record<string, string>, RegExp][] = [
    ['the .env.example value', { TOLLGATE_API_KEY: example ?? '' }, /server\.api_keys\[0\]\.key: environment variable TOLLGATE_API_KEY is not set/],
    ['change-me', { TOLLGATE_API_KEY: 'change-me' }, /server\.api_keys\[0\]\.key: is a known placeholder: refused while server\.host \(0\.0\.0\.0\)/],
    ['a short key', { TOLLGATE_API_KEY: 'short-key' }, /server\.api_keys\[0\]\.key: is shorter than 16 characters/],
  ];
  for (const [name, env, line] of cases) {
    const p = start(t, ['--config', deployed], { cwd: tempDir(t), env });
    t.equal((await p.exited).code, 1, `${name}: exit 1`);
    t.match(p.out.stderr, line, `${name}: the line names the key's path`);
    t.notMatch(p.out.stderr, 'change-me', `${name}: the value is not printed`);
  }
});

t.test('on loopback a placeholder key starts, with a warning naming its path', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'weak.yaml');
  writeFileSync(file, config({ port, dataDir: join(dir, 'data') }).replace('  port:', '  api_keys: [{ name: admin, key: change-me }]\n  port:'));
  const p = start(t, ['--config', file], { cwd: dir });
  await waitFor(async () => (await health(port)) === 200, 30_000);
  const res = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer change-me' } });
  t.equal(res.status, 200, 'the key works on loopback');
  t.match(p.out.stdout + p.out.stderr, /server\.api_keys\[0\]\.key is a known placeholder: accepted on a loopback address only/);
  p.child.kill('SIGTERM');
  await p.exited;
});

t.test('an invalid PORT is refused before listening', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'c.yaml');
  writeFileSync(file, config({ port: 4000, dataDir: join(dir, 'data') }));
  const p = start(t, ['--config', file], { cwd: dir, env: { PORT: '99999' } });
  t.equal((await p.exited).code, 1);
  t.match(p.out.stderr, 'PORT: expected an integer from 0 to 65535');
  t.notOk(existsSync(join(dir, 'data')));
});

t.test('a valid config serves on PORT, reloads its file, and exits 0 on SIGTERM', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'tollgate.yaml');
  const dataDir = join(dir, 'data');
  // the file says port 1; PORT overrides it
  writeFileSync(file, config({ port: 1, dataDir }));
  const p = start(t, ['--config', file], { cwd: dir, env: { PORT: String(port) } });
  await waitFor(async () => !p.running() || (await health(port)) === 200, 30_000);
  t.ok(p.running(), `still running (stderr: ${p.out.stderr})`);
  const h = await fetch(`http://127.0.0.1:${port}/health`);
  t.equal(h.status, 200);
  t.same(await h.json(), { status: 'ok' });
  t.ok(existsSync(dataDir), 'the embedded store lives under storage.data_dir');

  const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(chat.status, 200, 'the mock provider answers');
  t.match(await chat.json(), { object: 'chat.completion', usage: { completion_tokens: 4 } });

  const ids = async () => ((await (await fetch(`http://127.0.0.1:${port}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
  const reloads = async (result: string) => metricValue(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), 'tollgate_config_reloads_total', { result });
  t.same(await ids(), ['demo/echo-1']);

  // live reload in the real process: polled every 500 ms
  writeFileSync(file, config({ port: 1, dataDir, models: ['echo-1', 'echo-2'] }));
  await waitFor(async () => (await ids()).includes('demo/echo-2'), 2000);
  t.same(await ids(), ['demo/echo-1', 'demo/echo-2'], 'a valid edit is served within 2 s');
  t.equal(await reloads('applied'), 1);

  writeFileSync(file, config({ port: 1, dataDir, models: ['echo-1', 'echo-2', 'echo-3'], extra: 'typo: 1\n' }));
  await waitFor(async () => (await reloads('rejected')) === 1, 2000);
  t.equal(await reloads('rejected'), 1, 'an invalid edit is counted as rejected');
  t.same(await ids(), ['demo/echo-1', 'demo/echo-2'], 'and the previous config keeps serving');
  // The log line is written before the counter moves, but the pipe may be read after the metrics response.
  await waitFor(() => /config edit rejected/.test(p.out.stdout), 2000).catch(() => undefined);
  t.match(p.out.stdout, /config edit rejected/, 'and logged');
  t.match(p.out.stdout, /"path":"typo","message":"unknown key"/, 'with its issues');

  p.child.kill('SIGTERM');
  const { code, signal } = await p.exited;
  t.equal(signal, null, 'not killed by the signal');
  t.equal(code, 0, 'exit code 0 after SIGTERM');
  t.notOk(await accepts(port), 'the port is released');
  t.match(p.out.stdout, /shutting down/);
});

t.test('an edit made while the server is starting is not lost', async (t) => {
  const { port, file, dataDir, p } = await served(t);
  // the store's directory is created after the file was loaded and before the server listens: edit right then
  await waitFor(() => existsSync(dataDir) || !p.running(), 30_000);
  writeFileSync(file, config({ port, dataDir, models: ['echo-1', 'late-1'] }));
  await waitFor(async () => !p.running() || (await health(port)) === 200, 30_000);
  t.ok(p.running(), `serving (stderr: ${p.out.stderr})`);
  const ids = async () => ((await (await fetch(`http://127.0.0.1:${port}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
  const seen = await waitFor(async () => (await ids()).includes('demo/late-1'), 2000).then(() => true, () => false);
  t.ok(seen, `the edit is served within 2 s of listening (models: ${(await ids()).join(', ')})`);
  p.child.kill('SIGTERM');
  t.same(await p.exited, { code: 0, signal: null });
});

t.test('with no --config, ./config.yaml in the working directory is served', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  writeFileSync(join(dir, 'config.yaml'), config({ port, dataDir: join(dir, 'data') }));
  const p = start(t, [], { cwd: dir });
  await waitFor(async () => !p.running() || (await health(port)) === 200, 30_000);
  t.equal(await health(port), 200, `serving on the port from the file (stderr: ${p.out.stderr})`);
  p.child.kill('SIGTERM');
  t.same(await p.exited, { code: 0, signal: null });
});

t.test('SIGHUP re-reads the config file and keeps serving; a port in use is one line on stderr', async (t) => {
  const { port, file, dataDir, p } = await served(t);
  await waitFor(async () => !p.running() || (await health(port)) === 200, 30_000);
  const ids = async () => ((await (await fetch(`http://127.0.0.1:${port}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
  p.child.kill('SIGHUP'); // with nothing changed: a no-op, and (before) the end of the process
  await new Promise((r) => setTimeout(r, 300));
  t.ok(p.running(), 'SIGHUP does not stop the gateway');
  t.equal(await health(port), 200);
  t.match(p.out.stdout, /re-reading the config file/);
  // The same text as at start is no edit (before: the first SIGHUP logged and counted a reload of it).
  const applied = async () => /tollgate_config_reloads_total\{result="applied"\} (\d+)/.exec(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())?.[1];
  t.notMatch(p.out.stdout, /config reloaded/, 'an unchanged file: no reload logged');
  t.equal(await applied(), '0', 'nor counted');
  // a second instance on the same port (its own data directory): refused with one line on stderr
  const dir2 = tempDir(t);
  const file2 = join(dir2, 'tollgate.yaml');
  writeFileSync(file2, config({ port, dataDir: join(dir2, 'data') }));
  const second = start(t, ['--config', file2], { cwd: dir2 });
  const { code } = await second.exited;
  t.equal(code, 1, 'the second instance exits 1');
  t.equal(second.out.stderr.trim(), `cannot listen on 127.0.0.1:${port}: address already in use`, 'saying why in one line on stderr');
  // an edit, then SIGHUP at once: applied without waiting for the file's poll
  writeFileSync(file, config({ port, dataDir, models: ['echo-1', 'echo-2'] }));
  p.child.kill('SIGHUP');
  await waitFor(async () => (await ids()).includes('demo/echo-2'), 2000);
  t.same(await ids(), ['demo/echo-1', 'demo/echo-2'], 'the edit is served');
  t.equal(await applied(), '1', 'and counted once (the poll that sees it after SIGHUP finds the text applied)');
  p.child.kill('SIGTERM');
  t.equal((await p.exited).code, 0);
});

t.test('a data_dir that is a file, and an empty --config, are one line saying which setting', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  writeFileSync(join(dir, 'afile'), '');
  const file = join(dir, 'tollgate.yaml');
  writeFileSync(file, config({ port, dataDir: join(dir, 'afile') }));
  const p = start(t, ['--config', file], { cwd: dir });
  const { code } = await p.exited;
  t.equal(code, 1);
  t.match(p.out.stderr.trim(), /^storage\.data_dir .*afile cannot be used \(it, or a directory above it, is a file\): point storage\.data_dir at a directory/);
  const empty = start(t, ['--config', ''], { cwd: dir });
  t.equal((await empty.exited).code, 1);
  t.match(empty.out.stderr, /^--config needs a value/);
});

// A collector that takes the connection and never answers held a clean stop about 10 s past shutdown_timeout_s (the
// OTLP exporter's own timeout on the spans queued at the stop). Spans get what is left of the bound, at least 2 s.
t.test('a clean stop with a hanging OTLP collector ends within shutdown_timeout_s and the spans\' 2 s', async (t) => {
  const { createServer } = await import('node:http');
  let posts = 0;
  const collector = createServer((req) => {
    posts++;
    req.resume(); // read the batch, never answer
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    collector.closeAllConnections();
    collector.close();
  });
  const otlp = `http://127.0.0.1:${(collector.address() as { port: number }).port}`;
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'otlp.yaml');
  const text = config({ port, dataDir: join(dir, 'data'), extra: `telemetry: { otlp_endpoint: ${JSON.stringify(otlp)} }\n` });
  writeFileSync(file, text.replace('  port:', '  shutdown_timeout_s: 1\n  port:'));
  const p = start(t, ['--config', file], { cwd: dir });
  await waitFor(async () => (await health(port)) === 200, 30_000);
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200);
  await res.text();
  const stopAt = Date.now();
  p.child.kill('SIGTERM');
  const { code } = await p.exited;
  const tookMs = Date.now() - stopAt;
  t.equal(code, 0, 'a clean exit');
  t.ok(posts >= 1, `the queued spans were sent to the collector (${posts} export requests)`);
  t.ok(tookMs < 5_000, `the stop took ${tookMs} ms: the 1 s bound and at most 2 s for the spans`);
});
