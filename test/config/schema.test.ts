// The closed schema: unknown keys, wrong types, enums, ranges and missing keys are errors that name their dotted
// path and what was expected; every problem in a file is reported at once; YAML syntax errors carry a line.

import t from 'tap';
import { ConfigError, parseConfig, parseConfigText, type ConfigIssue } from '../../src/config/load.js';
import { issuesOf } from '../helpers/issues.js';

/** The issues of the ConfigError `fn` throws; fails the test (and returns []) when it throws nothing. */
const text = (yaml: string, env: Record<string, string> = {}) => () => parseConfigText(yaml, env);
const obj = (raw: unknown, env: Record<string, string> = {}) => () => parseConfig(raw, env);

/** A valid mock provider to hang errors on. */
const demo = (extra: Record<string, unknown> = {}) => ({
  group: 'paid',
  format: 'mock',
  price: { input: 1, output: 2 },
  models: { 'echo-1': { kind: 'llm' } },
  ...extra,
});

t.test('an unknown key is an error naming its path', async (t) => {
  const issues = issuesOf(t, text(`
providers:
  demo:
    group: paid
    format: mock
    pricee: { input: 1, output: 2 }
`));
  t.same(issues, [{ path: 'providers.demo.pricee', message: 'unknown key' }]);
  const err = (() => {
    try {
      parseConfigText('providers:\n  demo: { group: paid, format: mock, pricee: 1 }\n', {}, 'my.yaml');
    } catch (e) {
      return e as Error;
    }
    return null;
  })();
  t.ok(err instanceof ConfigError);
  t.match(err?.message, /providers\.demo\.pricee: unknown key/, 'the message reads `path: unknown key`');
  t.match(err?.message, /my\.yaml/, 'the message names the source');
});

t.test('unknown keys are caught at every level', async (t) => {
  const cases: [string, unknown, string][] = [
    ['root', { serverr: {} }, 'serverr'],
    ['server', { server: { hots: 'x' } }, 'server.hots'],
    ['api key entry', { server: { api_keys: [{ name: 'a', key: 'k', scope: 'all' }] } }, 'server.api_keys[0].scope'],
    ['storage.batch', { storage: { batch: { max_row: 5 } } }, 'storage.batch.max_row'],
    ['telemetry', { telemetry: { endpoint: 'x' } }, 'telemetry.endpoint'],
    ['provider auth', { providers: { demo: demo({ auth: { type: 'none', token: 'x' } }) } }, 'providers.demo.auth.token'],
    ['provider timeouts', { providers: { demo: demo({ timeouts: { stall: 3 } }) } }, 'providers.demo.timeouts.stall'],
    ['provider price', { providers: { demo: demo({ price: { input: 1, output: 2, inptu: 3 } }) } }, 'providers.demo.price.inptu'],
    ['provider mock', { providers: { demo: demo({ mock: { chunk: 3 } }) } }, 'providers.demo.mock.chunk'],
    ['provider quota', { providers: { demo: demo({ quota: { kind: 'unlimited', limt: 1 } }) } }, 'providers.demo.quota.limt'],
    ['model', { providers: { demo: demo({ models: { 'echo-1': { kind: 'llm', capabilites: [] } } }) } }, 'providers.demo.models.echo-1.capabilites'],
    ['model price', { providers: { demo: demo({ models: { m: { price: { input: 1, outptu: 2 } } } }) } }, 'providers.demo.models.m.price.outptu'],
    ['combo', { providers: { demo: demo() }, combos: { smart: { strategy: 'fallback', models: ['demo/echo-1'], retries: 2 } } }, 'combos.smart.retries'],
    ['budgets', { budgets: { daily: 5 } }, 'budgets.daily'],
    ['auto_switch', { budgets: { auto_switch: { enabled: false, too: 'x' } } }, 'budgets.auto_switch.too'],
    ['alert channels', { alerts: { channels: { slack: {} } } }, 'alerts.channels.slack'],
    ['webhook', { alerts: { channels: { webhook: { url: 'http://x', sekret: 's' } } } }, 'alerts.channels.webhook.sekret'],
  ];
  for (const [name, raw, path] of cases) {
    t.same(issuesOf(t, obj(raw)), [{ path, message: 'unknown key' }], name);
  }
});

t.test('a model id containing "/" keeps it in the path', async (t) => {
  const issues = issuesOf(t, obj({ providers: { demo: demo({ models: { 'org/model': { kind: 'llm', size: 1 } } }) } }));
  t.same(issues, [{ path: 'providers.demo.models.org/model.size', message: 'unknown key' }]);
});

t.test('a "__proto__" key is an unknown key like any other (not silently applied)', async (t) => {
  // YAML makes `__proto__` an own key; the config must reject it rather than turn it into a prototype.
  const issues = issuesOf(t, text('server:\n  __proto__: { host: 0.0.0.0 }\n'));
  t.same(issues, [{ path: 'server.__proto__', message: 'unknown key' }]);
});

t.test('wrong types name the path and the expected type', async (t) => {
  const cases: [string, unknown, ConfigIssue][] = [
    ['port not a number', { server: { port: 'four thousand' } }, { path: 'server.port', message: 'expected integer' }],
    ['port fractional', { server: { port: 80.5 } }, { path: 'server.port', message: 'expected integer' }],
    ['api_keys not a list', { server: { api_keys: 'k' } }, { path: 'server.api_keys', message: 'expected array' }],
    ['server not a map', { server: 'localhost' }, { path: 'server', message: 'expected object' }],
    ['providers not a map', { providers: ['demo'] }, { path: 'providers', message: 'expected object' }],
    ['models not a map', { providers: { demo: demo({ models: ['echo-1'] }) } }, { path: 'providers.demo.models', message: 'expected object' }],
    ['boolean', { providers: { demo: demo({ allow_unlisted_models: 'maybe' }) } }, { path: 'providers.demo.allow_unlisted_models', message: 'expected boolean' }],
    ['price number', { providers: { demo: demo({ price: { input: 'cheap', output: 2 } }) } }, { path: 'providers.demo.price.input', message: 'expected number' }],
    ['combo models list', { providers: { a: demo({ models: { b: { kind: 'llm' } } }) }, combos: { smart: { strategy: 'fallback', models: 'a/b' } } }, { path: 'combos.smart.models', message: 'expected array' }],
    ['alert kind flag', { alerts: { kinds: { quota_warning: 'loud' } } }, { path: 'alerts.kinds.quota_warning', message: 'expected boolean' }],
  ];
  for (const [name, raw, issue] of cases) t.same(issuesOf(t, obj(raw)), [issue], name);
});

t.test('a boolean or an empty value where a number is expected is a type error, not coerced', async (t) => {
  // `port: true` must not become port 1, and `port:` (YAML null) must not become port 0 (a random port).
  t.same(issuesOf(t, text('server:\n  port: true\n')), [{ path: 'server.port', message: 'expected integer' }], 'boolean');
  t.same(issuesOf(t, text('server:\n  port:\n')), [{ path: 'server.port', message: 'expected integer' }], 'null');
});

t.test('enums name the path and list the allowed values', async (t) => {
  const fmt = issuesOf(t, obj({ providers: { demo: demo({ format: 'grpc' }) } }));
  t.equal(fmt.length, 1);
  t.equal(fmt[0]?.path, 'providers.demo.format');
  t.equal(fmt[0]?.message, 'expected one of: openai, openai-responses, anthropic, gemini, mock');

  const cases: [string, unknown, string, RegExp][] = [
    ['group', { providers: { demo: demo({ group: 'premium' }) } }, 'providers.demo.group', /expected one of: subscription, paid, free$/],
    ['auth type', { providers: { demo: demo({ auth: { type: 'basic' } }) } }, 'providers.demo.auth.type', /expected one of: api_key, none, oauth$/],
    ['model kind', { providers: { demo: demo({ models: { m: { kind: 'audio' } } }) } }, 'providers.demo.models.m.kind', /expected one of: llm, image, embedding$/],
    ['capability', { providers: { demo: demo({ models: { m: { capabilities: ['tools', 'telepathy'] } } }) } }, 'providers.demo.models.m.capabilities[1]', /expected one of: vision, pdf, audio, tools, reasoning, structured_output$/],
    ['thinking', { providers: { demo: demo({ models: { m: { thinking: 'deep' } } }) } }, 'providers.demo.models.m.thinking', /expected one of: openai, anthropic-budget, .*minimax$/],
    ['quota kind', { providers: { demo: demo({ quota: { kind: 'weekly' } }) } }, 'providers.demo.quota.kind', /expected one of: rolling_hours, .*unlimited$/],
    ['combo strategy', { providers: { a: demo({ models: { b: { kind: 'llm' } } }) }, combos: { smart: { strategy: 'random', models: ['a/b'] } } }, 'combos.smart.strategy', /expected one of: fallback, round-robin, fusion, capacity$/],
  ];
  for (const [name, raw, path, message] of cases) {
    const issues = issuesOf(t, obj(raw));
    t.equal(issues.length, 1, `${name}: one issue`);
    t.equal(issues[0]?.path, path, `${name}: path`);
    t.match(issues[0]?.message, message, `${name}: allowed values`);
  }
});

t.test('ranges and patterns name the path and the constraint', async (t) => {
  const cases: [string, unknown, string, RegExp][] = [
    ['port too big', { server: { port: 70000 } }, 'server.port', /expected a value that must be <= 65535/],
    ['negative price', { providers: { demo: demo({ price: { input: -1, output: 2 } }) } }, 'providers.demo.price.input', /must be >= 0/],
    ['zero timeout', { providers: { demo: demo({ timeouts: { stall_s: 0 } }) } }, 'providers.demo.timeouts.stall_s', /must be > 0/],
    ['connections', { providers: { demo: demo({ connections: 0 }) } }, 'providers.demo.connections', /must be >= 1/],
    ['base_url scheme', { providers: { demo: demo({ format: 'openai', base_url: 'ftp://example.com' }) } }, 'providers.demo.base_url', /must match pattern/],
    ['database name', { storage: { database: 'my-db' } }, 'storage.database', /must match pattern/],
    ['empty host', { server: { host: '' } }, 'server.host', /must NOT have fewer than 1 characters/],
    ['reset_time', { providers: { demo: demo({ quota: { kind: 'daily_tokens', reset_time: 'noon' } }) } }, 'providers.demo.quota.reset_time', /must match pattern/],
    ['quota window', { providers: { demo: demo({ quota: { kind: 'rolling_tokens', window: '5 hours' } }) } }, 'providers.demo.quota.window', /must match pattern/],
    ['flush_ms', { storage: { batch: { flush_ms: 1 } } }, 'storage.batch.flush_ms', /must be >= 10/],
    ['combo without models', { providers: { a: demo({ models: { b: { kind: 'llm' } } }) }, combos: { smart: { strategy: 'fallback', models: [] } } }, 'combos.smart.models', /must NOT have fewer than 1 items/],
    ['duplicate capability', { providers: { demo: demo({ models: { m: { capabilities: ['tools', 'tools'] } } }) } }, 'providers.demo.models.m.capabilities', /duplicate items/],
  ];
  for (const [name, raw, path, message] of cases) {
    const issues = issuesOf(t, obj(raw));
    t.equal(issues.length, 1, `${name}: one issue (${JSON.stringify(issues)})`);
    t.equal(issues[0]?.path, path, `${name}: path`);
    t.match(issues[0]?.message, message, `${name}: what was expected`);
  }
});

t.test('missing required keys name their path', async (t) => {
  const cases: [string, unknown, string][] = [
    ['provider group', { providers: { demo: { format: 'mock' } } }, 'providers.demo.group'],
    ['provider format', { providers: { demo: { group: 'paid' } } }, 'providers.demo.format'],
    ['price output', { providers: { demo: demo({ price: { input: 1 } }) } }, 'providers.demo.price.output'],
    ['auth type', { providers: { demo: demo({ auth: { key: 'k' } }) } }, 'providers.demo.auth.type'],
    ['api key', { server: { api_keys: [{ name: 'admin' }] } }, 'server.api_keys[0].key'],
    ['quota kind', { providers: { demo: demo({ quota: { limit: 5 } }) } }, 'providers.demo.quota.kind'],
    ['combo strategy', { providers: { a: demo({ models: { b: { kind: 'llm' } } }) }, combos: { smart: { models: ['a/b'] } } }, 'combos.smart.strategy'],
    ['webhook url', { alerts: { channels: { webhook: { secret: 's' } } } }, 'alerts.channels.webhook.url'],
  ];
  for (const [name, raw, path] of cases) t.same(issuesOf(t, obj(raw)), [{ path, message: 'is required' }], name);
});

t.test('provider prefixes and alert kinds are checked by name', async (t) => {
  const bad = issuesOf(t, obj({ providers: { 'my provider': demo() } }));
  t.ok(bad.some((i) => i.path === 'providers.my provider' && /not an allowed key/.test(i.message)), JSON.stringify(bad));
  const kind = issuesOf(t, obj({ alerts: { kinds: { quota_warnin: true } } }));
  t.ok(kind.some((i) => i.path === 'alerts.kinds.quota_warnin' && /not an allowed key/.test(i.message)), JSON.stringify(kind));
  t.ok(parseConfig({ providers: { 'open.ai-2_x': demo() } }, {}), 'letters, digits, dot, dash and underscore are allowed');
});

t.test('a root that is not a mapping is an error', async (t) => {
  t.same(issuesOf(t, text('- a\n- b\n')), [{ path: '', message: 'expected object' }]);
  const err = (() => {
    try {
      parseConfigText('just a string\n', {});
    } catch (e) {
      return e as Error;
    }
    return null;
  })();
  t.match(err?.message, /\(root\): expected object/, 'the root is named (root) in the message');
});

t.test('several errors in one file are reported at once', async (t) => {
  const yaml = `
server:
  port: 99999
  hots: 0.0.0.0
providers:
  demo:
    group: premium
    format: mock
    pricee: { input: 1, output: 2 }
    models:
      echo-1: { kind: llm, capabilities: [telepathy] }
combos:
  smart: { models: [demo/echo-1] }
`;
  const issues = issuesOf(t, text(yaml));
  const paths = issues.map((i) => i.path).sort();
  t.same(paths, [
    'combos.smart.strategy',
    'providers.demo.group',
    'providers.demo.models.echo-1.capabilities[0]',
    'providers.demo.pricee',
    'server.hots',
    'server.port',
  ]);
  for (const i of issues) {
    t.ok(i.path.length > 0, `issue has a path: ${JSON.stringify(i)}`);
    t.match(i.message, /^(unknown key|is required|expected .+)$/, `issue says what was expected: ${JSON.stringify(i)}`);
  }
  let message = '';
  try {
    parseConfigText(yaml, {}, 'cfg.yaml');
  } catch (e) {
    message = (e as Error).message;
  }
  t.equal(message.split('\n').filter((l) => l.startsWith('  - ')).length, 6, 'one line per issue in the message');
});

t.test('schema, environment and semantic problems are reported together', async (t) => {
  // One round trip: a user should not have to fix the unknown key to learn that base_url is also missing.
  const issues = issuesOf(t, text(
    `
server:
  hots: x
providers:
  up: { group: paid, format: openai, auth: { type: api_key } }
`,
    { PORT: 'not-a-port' },
  ));
  const paths = issues.map((i) => i.path).sort();
  t.same(paths, ['PORT', 'providers.up.auth.key', 'providers.up.base_url', 'server.hots']);
});

t.test('YAML syntax errors are reported with their line', async (t) => {
  const cases: [string, string, number][] = [
    ['nested mapping', 'server:\n  host: 127.0.0.1\n  port: 4000: 5\n', 3],
    ['tab indentation', 'server:\n  host: 127.0.0.1\n\tport: 4000\n', 3],
    ['duplicate key', 'server:\n  host: 127.0.0.1\n  port: 1\n  port: 2\n', 4],
    ['unclosed flow map', 'server:\n  port: 4000\nproviders:\n  demo: { group: paid, format: mock\n', 5],
  ];
  for (const [name, yaml, line] of cases) {
    const issues = issuesOf(t, text(yaml));
    t.ok(issues.length >= 1, `${name}: reported`);
    t.match(issues[0]?.message, /^YAML syntax: /, `${name}: says it is a YAML syntax error`);
    // the unclosed flow map is noticed at the end of the input: the line where it should have closed or the next
    const want = name === 'unclosed flow map' ? [line - 1, line, line + 1].map((n) => `line ${n}`) : [`line ${line}`];
    t.ok(want.includes(issues[0]?.path ?? ''), `${name}: reported at ${want.join(' or ')}, got ${issues[0]?.path}`);
  }
});

t.test('a valid file is accepted', async (t) => {
  const cfg = parseConfigText(`
server: { host: 127.0.0.1, port: 4100 }
providers:
  demo:
    group: paid
    format: mock
    price: { input: 1, output: 2 }
    models: { echo-1: { kind: llm, capabilities: [tools, vision] } }
`, {});
  t.equal(cfg.server.port, 4100);
  t.same(cfg.providers.demo?.models['echo-1']?.capabilities, ['tools', 'vision']);
});
