// Environment: `${VAR}` and `${VAR:-default}` in any string of the file, numbers from the environment coerce,
// PORT overrides server.port and TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE sets server.body_limit_bytes.

import t from 'tap';
import { parseConfig, parseConfigText, parseServerAddress, resolveEnv } from '../../src/config/load.js';
import { issuesOf } from '../helpers/issues.js';

t.test('${VAR} is replaced in strings at any depth, in maps and arrays', async (t) => {
  const env = {
    DB_PASSWORD: 'pw-1',
    OPENAI_API_KEY: 'sk-live-abc',
    ORG: 'org-42',
    OPS: 'ops@example.com',
    UP_HOST: 'api.example.com',
    ADMIN_KEY: 'tk-admin',
  };
  const cfg = parseConfigText(`
server:
  api_keys:
    - { name: admin, key: "\${ADMIN_KEY}" }
storage:
  password: \${DB_PASSWORD}
providers:
  openai:
    group: paid
    format: openai
    base_url: "https://\${UP_HOST}/v1"
    auth: { type: api_key, key: "\${OPENAI_API_KEY}" }
    headers: { OpenAI-Organization: "\${ORG}" }
    models: { gpt-4o: { kind: llm }, o3: { kind: llm } }
combos:
  smart: { strategy: fallback, models: ["openai/\${MODEL:-gpt-4o}", "openai/o3"] }
alerts:
  channels:
    email: { smtp_url: "smtp://127.0.0.1:2525", from: "tollgate@\${UP_HOST}", to: ["\${OPS}", "second@example.com"] }
`, env);
  t.equal(cfg.server.api_keys[0]?.key, 'tk-admin', 'in an object inside an array');
  t.equal(cfg.storage.password, 'pw-1', 'an unquoted plain scalar');
  t.equal(cfg.providers.openai?.base_url, 'https://api.example.com/v1', 'inside a longer string');
  t.equal(cfg.providers.openai?.auth.key, 'sk-live-abc', 'nested three levels');
  t.equal(cfg.providers.openai?.headers['OpenAI-Organization'], 'org-42', 'in a free-form map');
  t.same(cfg.combos.smart?.models, ['openai/gpt-4o', 'openai/o3'], 'in an array, with a default');
  const email = cfg.alerts.channels.email!;
  t.same(email.to, ['ops@example.com', 'second@example.com'], 'in an array of strings');
  t.equal(email.from, 'tollgate@api.example.com');
});

t.test('several references in one string, and text that is not a reference, are handled', async (t) => {
  const out = resolveEnv(
    { a: '${A}-${B}:${C:-3}', b: '$A and {A} and $${A}x', c: 'no refs', d: 7, e: true, f: null },
    { A: 'one', B: 'two' },
    '',
    [],
  );
  t.same(out, { a: 'one-two:3', b: '$A and {A} and $onex', c: 'no refs', d: 7, e: true, f: null });
  const again = resolveEnv('${A}', { A: '${B}', B: 'no' }, '', []);
  t.equal(again, '${B}', 'a value from the environment is not expanded again');
});

t.test('${VAR:-default}: the default is used when VAR is unset or empty, VAR otherwise', async (t) => {
  const yaml = 'storage:\n  password: "${PW:-fallback}"\n  username: "${USER_X:-}"\n';
  t.equal(parseConfigText(yaml, {}).storage.password, 'fallback', 'unset');
  t.equal(parseConfigText(yaml, { PW: '' }).storage.password, 'fallback', 'empty');
  t.equal(parseConfigText(yaml, { PW: 'set' }).storage.password, 'set', 'set');
  t.equal(parseConfigText(yaml, {}).storage.username, '', 'an empty default is allowed');
  const url = parseConfigText('storage:\n  clickhouse_url: "${CH_URL:-http://127.0.0.1:8123/?x=1}"\n', {});
  t.equal(url.storage.clickhouse_url, 'http://127.0.0.1:8123/?x=1', 'a default may contain : / ? =');
});

t.test('an unset VAR without a default is an error naming the path and the variable', async (t) => {
  const issues = issuesOf(t, () =>
    parseConfigText(`
providers:
  openai:
    group: paid
    format: openai
    base_url: https://api.openai.com/v1
    auth: { type: api_key, key: "\${OPENAI_API_KEY}" }
alerts:
  channels:
    email: { smtp_url: "smtp://x", from: a@x, to: [ok@x, "\${OPS_EMAIL}"] }
`, {}),
  );
  const byPath = Object.fromEntries(issues.map((i) => [i.path, i.message]));
  t.match(byPath['providers.openai.auth.key'], /environment variable OPENAI_API_KEY is not set/);
  t.match(byPath['alerts.channels.email.to[1]'], /environment variable OPS_EMAIL is not set/, 'array elements are named by index');
  t.match(byPath['providers.openai.auth.key'], /\$\{OPENAI_API_KEY:-default\}/, 'the message shows how to give a default');

  const empty = issuesOf(t, () => parseConfigText('storage:\n  password: "${PW}"\n', { PW: '' }));
  t.same(empty.map((i) => i.path), ['storage.password'], 'an empty VAR without a default is an error too');
});

t.test('numbers and booleans from the environment are coerced to the schema type', async (t) => {
  const yaml = `
server:
  port: "\${P:-4000}"
storage:
  batch: { max_rows: "\${ROWS:-500}" }
providers:
  demo:
    group: paid
    format: mock
    connections: "\${CONNS:-16}"
    timeouts: { stall_s: "\${STALL:-2.5}" }
    allow_unlisted_models: "\${ALLOW:-true}"
`;
  const d = parseConfigText(yaml, {});
  t.equal(d.server.port, 4000, 'default port');
  t.equal(typeof d.server.port, 'number');
  t.equal(d.storage.batch.max_rows, 500);
  t.equal(d.providers.demo?.connections, 16);
  t.equal(d.providers.demo?.timeouts.stall_s, 2.5);
  t.equal(d.providers.demo?.allow_unlisted_models, true);

  const s = parseConfigText(yaml, { P: '4100', ROWS: '20', CONNS: '4', STALL: '7', ALLOW: 'false' });
  t.equal(s.server.port, 4100, 'port from the environment');
  t.equal(s.storage.batch.max_rows, 20);
  t.equal(s.providers.demo?.connections, 4);
  t.equal(s.providers.demo?.timeouts.stall_s, 7);
  t.equal(s.providers.demo?.allow_unlisted_models, false);

  t.same(issuesOf(t, () => parseConfigText(yaml, { P: 'http' })), [{ path: 'server.port', message: 'expected integer' }], 'a non-number is still a type error');
});

t.test('PORT overrides server.port', async (t) => {
  const yaml = 'server:\n  port: 5000\n';
  t.equal(parseConfigText(yaml, {}).server.port, 5000, 'the file when PORT is unset');
  t.equal(parseConfigText(yaml, { PORT: '' }).server.port, 5000, 'an empty PORT is ignored');
  t.equal(parseConfigText(yaml, { PORT: '6001' }).server.port, 6001, 'PORT wins over the file');
  t.equal(parseConfigText('providers: {}\n', { PORT: '6002' }).server.port, 6002, 'PORT wins over the default');
  t.equal(parseConfigText('providers: {}\n', { PORT: '0' }).server.port, 0, '0 (any free port) is allowed');
  t.equal(parseConfigText('server:\n  port: "${P:-4000}"\n', { P: '4500', PORT: '6003' }).server.port, 6003, 'PORT wins over ${P}');
});

t.test('an invalid PORT is an error naming PORT', async (t) => {
  for (const bad of ['abc', '70000', '65536', '-1', '80.5', '80x']) {
    t.same(
      issuesOf(t, () => parseConfigText('providers: {}\n', { PORT: bad })),
      [{ path: 'PORT', message: 'expected an integer from 0 to 65535' }],
      `PORT=${JSON.stringify(bad)}`,
    );
  }
});

t.test('PORT must be a plain decimal number', async (t) => {
  // Number(' ') is 0 and Number('0x1F90') is 8080: neither is a port someone meant to write.
  for (const bad of [' ', '0x1F90', '1e3']) {
    t.same(
      issuesOf(t, () => parseConfigText('providers: {}\n', { PORT: bad })),
      [{ path: 'PORT', message: 'expected an integer from 0 to 65535' }],
      `PORT=${JSON.stringify(bad)}`,
    );
  }
});

t.test('TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE sets server.body_limit_bytes', async (t) => {
  t.equal(parseConfig({}, {}).server.body_limit_bytes, 128 * 1024 * 1024, 'default 128 MiB');
  t.equal(parseConfig({ server: { body_limit_bytes: 1000 } }, {}).server.body_limit_bytes, 1000, 'from the file');
  const cases: [string, number][] = [
    ['1048576', 1048576],
    ['64k', 64 * 1024],
    ['64K', 64 * 1024],
    ['2m', 2 * 1024 ** 2],
    ['16M', 16 * 1024 ** 2],
    ['1g', 1024 ** 3],
    ['512kb', 512 * 1024],
    [' 3m ', 3 * 1024 ** 2],
  ];
  for (const [value, bytes] of cases) {
    t.equal(parseConfig({ server: { body_limit_bytes: 1000 } }, { TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE: value }).server.body_limit_bytes, bytes, value);
  }
  t.equal(parseConfig({}, { TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE: '' }).server.body_limit_bytes, 128 * 1024 * 1024, 'empty is ignored');
});

t.test('an invalid TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE is an error naming it', async (t) => {
  // '9' x 400: Infinity once multiplied, which check-config took and the start then refused with fastify's own error
  for (const bad of ['lots', '0', '-5', '1.5m', '10t', 'm', '9'.repeat(400), '99999999999999999g']) {
    const issues = issuesOf(t, () => parseConfig({}, { TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE: bad }));
    t.equal(issues.length, 1, bad);
    t.equal(issues[0]?.path, 'TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE', `${bad}: path`);
    t.match(issues[0]?.message, /expected a size such as 134217728, 128m or 64k/, `${bad}: what is expected`);
  }
});

// What `tollgate export` and `tollgate import` read of the file without --url: the address alone, so that only its own
// variables need be set (docs/api.md); it is checked as a start checks it.
t.test('parseServerAddress resolves only server.host and server.port', async (t) => {
  const text = `
server:
  host: "\${GW_HOST:-127.0.0.1}"
  port: "\${GW_PORT}"
  api_keys: [{ name: admin, key: "\${TOLLGATE_API_KEY}", role: admin }]
storage: { clickhouse_url: "\${CH_URL}" }
providers:
  paid: { group: paid, format: openai, base_url: https://api.example.com/v1, auth: { type: api_key, key: "\${SOME_KEY}" } }
`;
  t.same(parseServerAddress(text, { GW_PORT: '4100' }), { host: '127.0.0.1', port: 4100 }, 'the other variables unset');
  t.same(parseServerAddress(text, { GW_PORT: '4100', GW_HOST: '0.0.0.0', PORT: '5000' }), { host: '0.0.0.0', port: 5000 }, 'PORT overrides, as for a start');
  t.same(parseServerAddress('providers: {}\n', {}), { host: '127.0.0.1', port: 4000 }, 'the defaults');
  t.same(issuesOf(t, () => parseServerAddress(text, {})), [
    { path: 'server.port', message: 'environment variable GW_PORT is not set (use ${GW_PORT:-default} for a default)' },
  ], 'an unset variable of the address is named, and it alone');
  t.same(issuesOf(t, () => parseServerAddress(text, { GW_PORT: 'http' })), [{ path: 'server.port', message: 'expected integer' }]);
  t.same(issuesOf(t, () => parseServerAddress('server: 5\n', {})), [{ path: 'server', message: 'expected object' }]);
  t.same(issuesOf(t, () => parseServerAddress('server: { port: 1 }\n', { PORT: '0x1F90' })), [{ path: 'PORT', message: 'expected an integer from 0 to 65535' }]);
  t.same(issuesOf(t, () => parseConfigText(text, { GW_PORT: '4100', TOLLGATE_API_KEY: 'k-0123456789abcdef' })).map((i) => i.path),
    ['storage.clickhouse_url', 'providers.paid.auth.key'], 'a start still needs every variable');
});

// A key name the start refuses that would move the address: a misspelt `server:` or `port:`, or a merge key (`<<:`,
// not supported: the start says "unknown key"). Read past, they left the default 127.0.0.1:4000, and export/import
// took the admin key there (to another gateway, or to whatever listens on 4000); they are refused, as by a start.
t.test('parseServerAddress refuses an unknown key at the top level or under server, as a start does', async (t) => {
  const cases: Array<[string, string]> = [
    ['server:\n  host: 127.0.0.1\n  prot: 4100\n', 'server.prot'],
    ['sevrer:\n  port: 4100\n', 'sevrer'],
    ['base: &b { port: 4100 }\nserver:\n  <<: *b\n', 'base'],
    ['server:\n  <<: { port: 4100 }\n', 'server.<<'],
  ];
  for (const [text, path] of cases) {
    const address = issuesOf(t, () => parseServerAddress(text, {}));
    t.ok(address.some((i) => i.path === path && i.message === 'unknown key'), `${path}: ${JSON.stringify(address)}`);
    t.ok(issuesOf(t, () => parseConfigText(text, {})).some((i) => i.path === path && i.message === 'unknown key'), `${path}: the start says the same`);
  }
  // the names of the other sections' keys are not read (nor their values): only the address's own keys matter
  t.same(parseServerAddress('server: { port: 4100, api_keys: [] }\nproviders: { p: { nonsense: 1 } }\n', {}), { host: '127.0.0.1', port: 4100 });
});

// A document that is null (`~`) is no settings: a start listens at the defaults, and the address read is theirs.
t.test('parseServerAddress of a null document is the defaults, as a start reads it', async (t) => {
  const started = parseConfigText('~\n', {});
  t.same({ host: started.server.host, port: started.server.port }, { host: '127.0.0.1', port: 4000 });
  t.same(parseServerAddress('~\n', {}), { host: '127.0.0.1', port: 4000 });
  t.same(parseServerAddress('null\n', { PORT: '4100' }), { host: '127.0.0.1', port: 4100 });
});
