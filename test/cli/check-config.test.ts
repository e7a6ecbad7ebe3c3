// `tollgate check-config [FILE]` on the built CLI (dist/main.js; `npm run build` first): exit 0 and "ok" on stdout
// for a valid file, exit 1 and every path-named error on stderr for an invalid one, and never a server. The file
// comes from the argument, --config, TOLLGATE_CONFIG or ./config.yaml, in that order.

import t from 'tap';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tmp.js';
import { runCli } from '../helpers/cli.js';
import { accepts, freePort } from '../helpers/net.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

const run = runCli;

const validYaml = (port: number, dataDir: string) => `
server:
  host: 127.0.0.1
  port: ${port}
storage:
  data_dir: ${JSON.stringify(dataDir)}
providers:
  demo:
    name: Demo
    group: paid
    format: mock
    price: { input: 1, output: 2 }
    models: { echo-1: { kind: llm } }
  up:
    group: paid
    format: openai
    base_url: https://api.example.com/v1
    auth: { type: api_key, key: "\${UP_KEY:-sk-default}" }
`;

const invalidYaml = (port: number, dataDir: string) => `
server:
  host: 127.0.0.1
  port: ${port}
  hots: 0.0.0.0
storage:
  data_dir: ${JSON.stringify(dataDir)}
providers:
  demo:
    group: premium
    format: mock
    pricee: { input: 1, output: 2 }
`;

t.test('the shipped config.yaml is ok', async (t) => {
  const cwd = tempDir(t);
  const r = await run(t, ['check-config', join(REPO, 'config.yaml')], { cwd });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, `${join(REPO, 'config.yaml')}: ok (1 providers)\n`);
  t.equal(r.stderr, '');
  t.notOk(existsSync(join(cwd, 'data')), 'no store was opened');

  const inRepo = await run(t, ['check-config'], { cwd: REPO });
  t.equal(inRepo.code, 0, 'with no FILE: ./config.yaml');
  t.equal(inRepo.stdout, './config.yaml: ok (1 providers)\n');
});

t.test('a valid file is ok, and checking it starts nothing', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'tollgate.yaml');
  writeFileSync(file, validYaml(port, join(dir, 'data')));
  const probe = setInterval(() => void accepts(port).then((up) => up && listened.push(Date.now())), 25);
  const listened: number[] = [];
  const r = await run(t, ['check-config', file], { cwd: dir });
  clearInterval(probe);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.signal, null, 'exited by itself');
  t.equal(r.stdout, `${file}: ok (2 providers)\n`);
  t.equal(r.stderr, '');
  t.same(listened, [], `nothing listened on ${port}`);
  t.notOk(existsSync(join(dir, 'data')), 'the data directory was not created: no store opened');
});

t.test('an invalid file: exit 1, every path-named error on stderr, nothing started', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, invalidYaml(port, join(dir, 'data')));
  const r = await run(t, ['check-config', file], { cwd: dir });
  t.equal(r.code, 1);
  t.equal(r.stdout, '', 'nothing on stdout');
  t.match(r.stderr, `invalid config ${file}:`);
  t.match(r.stderr, '  - server.hots: unknown key');
  t.match(r.stderr, '  - providers.demo.pricee: unknown key');
  t.match(r.stderr, '  - providers.demo.group: expected one of: subscription, paid, free');
  t.equal(r.stderr.split('\n').filter((l) => l.startsWith('  - ')).length, 3, 'all three at once');
  t.notOk(existsSync(join(dir, 'data')), 'no store opened');
  t.notOk(await accepts(port), 'nothing listening');
});

t.test('an unset ${VAR} is an error until the variable is given', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'providers:\n  up: { group: paid, format: openai, base_url: "https://x.example/v1", auth: { type: api_key, key: "${UP_SECRET}" } }\n');
  const bad = await run(t, ['check-config', file], { cwd: dir });
  t.equal(bad.code, 1);
  t.match(bad.stderr, /providers\.up\.auth\.key: environment variable UP_SECRET is not set/);
  const ok = await run(t, ['check-config', file], { cwd: dir, env: { UP_SECRET: 'sk-1' } });
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, ': ok (1 providers)');
});

t.test('a YAML syntax error is reported with its line', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'server:\n  host: 127.0.0.1\n  port: 4000: 5\n');
  const r = await run(t, ['check-config', file], { cwd: dir });
  t.equal(r.code, 1);
  t.match(r.stderr, /YAML syntax: Nested mappings are not allowed/);
  t.match(r.stderr, /line 3/, 'the line is named');
});

t.test('a missing file is an error', async (t) => {
  const dir = tempDir(t);
  const r = await run(t, ['check-config', join(dir, 'nope.yaml')], { cwd: dir });
  t.equal(r.code, 1);
  t.match(r.stderr, /\(file\): cannot read: .*ENOENT/);
});

t.test('PORT and TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE are checked too', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'c.yaml');
  writeFileSync(file, validYaml(4000, join(dir, 'data')));
  const port = await run(t, ['check-config', file], { cwd: dir, env: { PORT: 'eighty' } });
  t.equal(port.code, 1);
  t.match(port.stderr, 'PORT: expected an integer from 0 to 65535');
  const size = await run(t, ['check-config', file], { cwd: dir, env: { TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE: 'huge' } });
  t.equal(size.code, 1);
  t.match(size.stderr, 'TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE: expected a size');
});

t.test('the file is chosen by argument, --config, TOLLGATE_CONFIG, then ./config.yaml', async (t) => {
  const dir = tempDir(t);
  const good = join(dir, 'good.yaml');
  const bad = join(dir, 'bad.yaml');
  writeFileSync(good, validYaml(4000, join(dir, 'data')));
  writeFileSync(bad, invalidYaml(4000, join(dir, 'data')));

  const viaFlag = await run(t, ['check-config', '--config', good], { cwd: dir, env: { TOLLGATE_CONFIG: bad } });
  t.equal(viaFlag.code, 0, '--config FILE wins over TOLLGATE_CONFIG');
  t.equal(viaFlag.stdout, `${good}: ok (2 providers)\n`);

  const viaEq = await run(t, ['check-config', `--config=${bad}`], { cwd: dir, env: { TOLLGATE_CONFIG: good } });
  t.equal(viaEq.code, 1, '--config=FILE');
  t.match(viaEq.stderr, `invalid config ${bad}:`);

  const viaShort = await run(t, ['-c', good, 'check-config'], { cwd: dir });
  t.equal(viaShort.code, 1, 'check-config must come first');
  t.match(viaShort.stderr, /unknown argument 'check-config'/);

  const viaEnv = await run(t, ['check-config'], { cwd: dir, env: { TOLLGATE_CONFIG: bad } });
  t.equal(viaEnv.code, 1, 'TOLLGATE_CONFIG');
  t.match(viaEnv.stderr, `invalid config ${bad}:`);
  const viaEnvGood = await run(t, ['check-config'], { cwd: dir, env: { TOLLGATE_CONFIG: good } });
  t.equal(viaEnvGood.code, 0);
  t.equal(viaEnvGood.stdout, `${good}: ok (2 providers)\n`);

  const argWins = await run(t, ['check-config', good], { cwd: dir, env: { TOLLGATE_CONFIG: bad } });
  t.equal(argWins.code, 0, 'the FILE argument wins over TOLLGATE_CONFIG');

  const cwd = join(dir, 'cwd');
  mkdirSync(cwd);
  const none = await run(t, ['check-config'], { cwd });
  t.equal(none.code, 1, 'no ./config.yaml here');
  t.match(none.stderr, /invalid config \.\/config\.yaml:\n  - \(file\): cannot read/);
  writeFileSync(join(cwd, 'config.yaml'), validYaml(4000, join(dir, 'data')));
  const local = await run(t, ['check-config'], { cwd });
  t.equal(local.code, 0, './config.yaml in the working directory');
  t.equal(local.stdout, './config.yaml: ok (2 providers)\n');
});

t.test('--help prints the usage; an unknown argument is an error with the usage', async (t) => {
  const dir = tempDir(t);
  const help = await run(t, ['--help'], { cwd: dir });
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: tollgate \[--config FILE\]\n\s+tollgate check-config \[FILE\]/);
  const bad = await run(t, ['--port', '80'], { cwd: dir });
  t.equal(bad.code, 1);
  t.match(bad.stderr, /unknown argument '--port'/);
  t.match(bad.stderr, /usage: tollgate/);
  const extra = await run(t, ['check-config', 'a.yaml', 'b.yaml'], { cwd: dir });
  t.equal(extra.code, 1, 'one FILE only');
  t.match(extra.stderr, /unknown argument 'b\.yaml'/);
});
