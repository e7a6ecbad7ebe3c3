// Loading: defaults are applied, the DESIGN.md sample and the shipped config.yaml validate, the result is deeply
// frozen, and the checks that span keys (loopback without keys, duplicate key names, api_key without key,
// base_url for real upstreams) are enforced with their path.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, isLoopback, loadConfigFile, parseConfig, parseConfigText } from '../../src/config/load.js';
import { issuesOf } from '../helpers/issues.js';
import { tempDir } from '../helpers/tmp.js';

const SHIPPED = fileURLToPath(new URL('../../config.yaml', import.meta.url));

/** The sample from /work/shared/DESIGN.md ("The YAML shape"), verbatim. */
const DESIGN_SAMPLE = `
server:
  host: 127.0.0.1            # a non-loopback host with no api_keys is refused at start
  port: 4000                 # PORT overrides
  api_keys:                  # Authorization: Bearer <key> on /v1/* and /api/*; none: loopback only, no auth,
    - { name: admin, key: "\${TOLLGATE_API_KEY}" }   # and a warning in the log
storage:
  clickhouse_url: ""         # empty: embedded ClickHouse under data_dir
  database: tollgate
  data_dir: ./data
telemetry:
  otlp_endpoint: ""          # empty: spans are not exported
providers:
  openai:                    # the provider prefix
    name: OpenAI
    group: paid              # subscription | paid | free
    format: openai           # openai | openai-responses | anthropic | gemini
    base_url: https://api.openai.com/v1
    auth: { type: api_key, key: "\${OPENAI_API_KEY}" }   # api_key | none | oauth
    timeouts: { connect_s: 10, stall_s: 30 }
    price: { input: 2.5, output: 10, cached: 1.25 }     # USD per 1M tokens; models may override
    quota: { kind: daily_tokens, limit: 10000000, reset_time: "10:00+08:00" }
    models:
      gpt-4o: { kind: llm, capabilities: [vision, tools], max_output_tokens: 16384 }
      o3: { kind: llm, capabilities: [reasoning, tools], thinking: openai }
  anthropic:
    name: Anthropic
    group: subscription
    format: anthropic
    base_url: https://api.anthropic.com
    auth: { type: api_key, key: "\${ANTHROPIC_API_KEY}" }
    models:
      claude-sonnet-4-5: { kind: llm, capabilities: [vision, pdf, tools, reasoning], thinking: anthropic-budget,
                           max_output_tokens: 32768 }
combos:
  smart: { strategy: fallback, models: [anthropic/claude-sonnet-4-5, openai/gpt-4o] }
budgets:
  daily_usd: 5
  monthly_usd: 100
  auto_switch: { enabled: true, to: free/llama-3.3-70b }
alerts:
  kinds: { quota_warning: true, quota_exhausted: true, quota_reset: true, daily_budget: true,
           monthly_budget: true, cost_anomaly: true, exhaustion_pattern: true }
  channels:
    dashboard: true
    email: { smtp_url: "smtp://127.0.0.1:2525", from: tollgate@localhost, to: [ops@localhost] }
    webhook: { url: "http://127.0.0.1:9000/hook", secret: "\${TOLLGATE_WEBHOOK_SECRET}" }
`;

const DESIGN_ENV = {
  TOLLGATE_API_KEY: 'tk-admin-123',
  OPENAI_API_KEY: 'sk-openai-456',
  ANTHROPIC_API_KEY: 'sk-ant-789',
  TOLLGATE_WEBHOOK_SECRET: 'whsec-0',
};

t.test('defaults are applied to a file that only names its providers', async (t) => {
  const cfg = parseConfigText('providers: {}\n', {});
  t.same(cfg.server, {
    host: '127.0.0.1', port: 4000, api_keys: [], body_limit_bytes: 134217728, upstream_answer_limit_bytes: 67108864, trust_proxy: [],
    rate_limit: { requests_per_minute: 0, auth_failures_per_minute: 10 }, metrics_auth: false, json_max_depth: 128, public_url: '', idle_gc_s: 10, request_timeout_s: 120, shutdown_timeout_s: 25,
  });
  t.same(cfg.storage, {
    clickhouse_url: '',
    cluster: '', sharded: false,
    database: 'tollgate',
    data_dir: './data',
    username: 'default',
    password: '',
    request_timeout_ms: 30000,
    batch: { max_rows: 10000, flush_ms: 2000, queue_max: 100000 },
    spool: { commit_ms: 50, max_bytes: 1073741824, dir: '' },
  });
  t.same(cfg.telemetry, { otlp_endpoint: '', service_name: 'tollgate' });
  t.same(cfg.providers, {});
  t.same(cfg.combos, {});
  t.same(cfg.budgets, { auto_switch: { enabled: false } });
  t.same(cfg.alerts, { kinds: {}, thresholds: { quota: [80, 90], daily: [80, 100], monthly: [50, 80, 100], anomaly_multiple: 2 }, channels: { dashboard: true } });
  t.same(parseConfig({}, {}), cfg, 'an empty mapping gets the same defaults');
});

t.test('defaults are applied inside providers and models', async (t) => {
  const cfg = parseConfig(
    {
      providers: {
        up: { group: 'paid', format: 'openai', base_url: 'https://api.example.com/v1', models: { m: {} } },
        demo: { group: 'free', format: 'mock', timeouts: { connect_s: 2 }, mock: { chunks: 3 } },
      },
    },
    {},
  );
  const up = cfg.providers.up!;
  t.same(up.auth, { type: 'none' }, 'auth defaults to none');
  t.same(up.headers, {});
  t.same(up.timeouts, { connect_s: 10, stall_s: 30, request_s: 600 }, 'timeouts connect_s 10, stall_s 30, request_s 600');
  t.equal(up.connections, 128);
  t.equal(up.allow_unlisted_models, false);
  t.same(up.mock, { chunks: 8, latency_ms: 20, chunk_delay_ms: 5 });
  t.same(up.models.m, { kind: 'llm', capabilities: [] }, 'model kind llm, no capabilities');
  t.equal(up.price, undefined, 'no price unless given');
  const demo = cfg.providers.demo!;
  t.same(demo.timeouts, { connect_s: 2, stall_s: 30, request_s: 600 }, 'a partial section keeps the other defaults');
  t.same(demo.mock, { chunks: 3, latency_ms: 20, chunk_delay_ms: 5 });
  t.same(demo.models, {});
  t.not(up.headers, demo.headers, 'default objects are not shared between providers');
});

t.test('the DESIGN.md sample validates with its variables set', async (t) => {
  const cfg = parseConfigText(DESIGN_SAMPLE, DESIGN_ENV, 'DESIGN.md');
  t.same(cfg.server.api_keys, [{ name: 'admin', key: 'tk-admin-123' }]);
  t.equal(cfg.providers.openai?.auth.key, 'sk-openai-456');
  t.equal(cfg.providers.anthropic?.auth.key, 'sk-ant-789');
  t.same(cfg.providers.openai?.price, { input: 2.5, output: 10, cached: 1.25 });
  t.same(cfg.providers.openai?.quota, { kind: 'daily_tokens', limit: 10000000, reset_time: '10:00+08:00' });
  t.same(cfg.providers.openai?.timeouts, { connect_s: 10, stall_s: 30, request_s: 600 });
  // max_output_tokens from the catalog (o3 is in it; the sample leaves the limit out)
  t.same(cfg.providers.openai?.models.o3, { kind: 'llm', capabilities: ['reasoning', 'tools'], thinking: 'openai', max_output_tokens: 100000 });
  t.same(cfg.providers.anthropic?.models['claude-sonnet-4-5'], {
    kind: 'llm',
    capabilities: ['vision', 'pdf', 'tools', 'reasoning'],
    thinking: 'anthropic-budget',
    max_output_tokens: 32768,
  });
  t.same(cfg.combos.smart, { strategy: 'fallback', models: ['anthropic/claude-sonnet-4-5', 'openai/gpt-4o'] });
  t.same(cfg.budgets, { daily_usd: 5, monthly_usd: 100, auto_switch: { enabled: true, to: 'free/llama-3.3-70b' } });
  t.match(cfg.alerts, { channels: { webhook: { url: 'http://127.0.0.1:9000/hook', secret: 'whsec-0' }, email: { to: ['ops@localhost'] } } });
  t.equal(Object.keys((cfg.alerts as { kinds: object }).kinds).length, 7);
});

t.test('the DESIGN.md sample without its variables names each missing one', async (t) => {
  const issues = issuesOf(t, () => parseConfigText(DESIGN_SAMPLE, {}));
  const got = issues
    .filter((i) => i.message.startsWith('environment variable'))
    .map((i) => `${i.path} ${/environment variable (\w+)/.exec(i.message)?.[1]}`)
    .sort();
  t.same(got, [
    'alerts.channels.webhook.secret TOLLGATE_WEBHOOK_SECRET',
    'providers.anthropic.auth.key ANTHROPIC_API_KEY',
    'providers.openai.auth.key OPENAI_API_KEY',
    'server.api_keys[0].key TOLLGATE_API_KEY',
  ]);
});

t.test('the shipped config.yaml validates', async (t) => {
  const cfg = loadConfigFile(SHIPPED, {});
  t.equal(cfg.server.host, '127.0.0.1');
  t.equal(cfg.server.port, 4000);
  t.equal(cfg.providers.demo?.format, 'mock');
  t.same(Object.keys(cfg.providers.demo?.models ?? {}), ['echo-1', 'echo-mini']);
});

t.test('the validated config is deeply frozen', async (t) => {
  const cfg = parseConfigText(DESIGN_SAMPLE, DESIGN_ENV);
  const unfrozen: string[] = [];
  let objects = 0;
  const walk = (v: unknown, path: string) => {
    if (v === null || typeof v !== 'object') return;
    objects++;
    if (!Object.isFrozen(v)) unfrozen.push(path || '(root)');
    for (const [k, c] of Object.entries(v)) walk(c, `${path}.${k}`);
  };
  walk(cfg, '');
  t.ok(objects > 30, `walked ${objects} objects and arrays`);
  t.same(unfrozen, [], 'every object and array is frozen');

  // Test files are ES modules, so strict mode: writes to frozen objects throw.
  const mutable = cfg as unknown as {
    server: { port: number; api_keys: { key: string }[] };
    providers: Record<string, { models: Record<string, unknown>; price: { input: number } }>;
  };
  t.throws(() => {
    mutable.server.port = 1;
  }, TypeError, 'assigning a field throws');
  t.throws(() => {
    mutable.providers.openai!.price.input = 0;
  }, TypeError, 'assigning a nested field throws');
  t.throws(() => {
    mutable.providers.openai!.models['gpt-5'] = { kind: 'llm' };
  }, TypeError, 'adding a key throws');
  t.throws(() => {
    delete (mutable.providers as Record<string, unknown>).anthropic;
  }, TypeError, 'deleting a key throws');
  t.throws(() => {
    mutable.server.api_keys.push({ key: 'x' });
  }, TypeError, 'pushing to an array throws');
  t.throws(() => {
    mutable.server.api_keys[0]!.key = 'stolen';
  }, TypeError, 'assigning inside an array element throws');
  t.equal(cfg.server.port, 4000, 'and nothing changed');
  t.equal(cfg.server.api_keys.length, 1);
});

t.test('the input tree is not modified by parsing', async (t) => {
  const raw = { server: { port: '${P:-4100}' }, providers: { demo: { group: 'paid', format: 'mock' } } };
  const copy = JSON.parse(JSON.stringify(raw)) as unknown;
  const cfg = parseConfig(raw, { PORT: '4200' });
  t.same(raw, copy, 'no defaults or resolved values written into the input');
  t.notOk(Object.isFrozen(raw), 'the input is not frozen');
  t.equal(cfg.server.port, 4200);
});

t.test('a non-loopback host without api_keys is refused', async (t) => {
  for (const host of ['0.0.0.0', '::', '192.168.1.10', 'gateway.internal']) {
    const issues = issuesOf(t, () => parseConfig({ server: { host } }, {}));
    t.equal(issues.length, 1, host);
    t.equal(issues[0]?.path, 'server.api_keys', `${host}: path`);
    t.match(issues[0]?.message, /at least one key is required/, `${host}: what is expected`);
    t.match(issues[0]?.message, host, `${host}: names the host`);
  }
  for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
    t.equal(parseConfig({ server: { host } }, {}).server.host, host, `${host} is loopback: no key needed`);
    t.ok(isLoopback(host));
  }
  t.notOk(isLoopback('0.0.0.0'));
});

t.test('a non-loopback host with api_keys is accepted', async (t) => {
  const cfg = parseConfig({ server: { host: '0.0.0.0', api_keys: [{ name: 'admin', key: '${K}' }] } }, { K: 'tk-1-0123456789abcdef' });
  t.equal(cfg.server.host, '0.0.0.0');
  t.same(cfg.server.api_keys, [{ name: 'admin', key: 'tk-1-0123456789abcdef' }]);
  const viaEnv = issuesOf(t, () => parseConfig({ server: { host: '0.0.0.0', api_keys: [{ name: 'admin', key: '${K:-}' }] } }, {}));
  t.same(viaEnv.map((i) => i.path), ['server.api_keys[0].key'], 'a key that resolves to empty is not a key');
});

t.test('a public host refuses placeholder and short keys, naming the key path; loopback accepts them', async (t) => {
  const placeholders = ['change-me', 'CHANGEME', 'password', 'admin', 'secret', 'tollgate', 'your-key-here'];
  for (const key of placeholders) {
    const issues = issuesOf(t, () => parseConfig({ server: { host: '0.0.0.0', api_keys: [{ name: 'ok', key: 'k'.repeat(32) }, { name: 'weak', key }] } }, {}));
    t.same(issues.map((i) => i.path), ['server.api_keys[1].key'], `${key}: the weak key's path`);
    t.match(issues[0]?.message, /known placeholder.*0\.0\.0\.0.*openssl rand -hex 32/, `${key}: says why and how to make one`);
    t.notMatch(issues[0]?.message, key, 'the value itself is not repeated');
  }
  const short = issuesOf(t, () => parseConfig({ server: { host: '10.0.0.5', api_keys: [{ name: 'a', key: '${K}' }] } }, { K: 'fifteen-chars-x' }));
  t.same(short.map((i) => [i.path, /shorter than 16 characters/.test(i.message)]), [['server.api_keys[0].key', true]]);
  t.equal(parseConfig({ server: { host: '10.0.0.5', api_keys: [{ name: 'a', key: 'sixteen-chars-xy' }] } }, {}).server.api_keys.length, 1, '16 characters are enough');
  const unset = issuesOf(t, () => parseConfig({ server: { host: '0.0.0.0', api_keys: [{ name: 'a', key: '${TOLLGATE_API_KEY}' }] } }, {}));
  t.same(unset.map((i) => i.path), ['server.api_keys[0].key'], 'a missing key names the same path');
  for (const host of ['127.0.0.1', 'localhost', '::1']) {
    t.equal(parseConfig({ server: { host, api_keys: [{ name: 'a', key: 'change-me' }] } }, {}).server.api_keys[0]?.key, 'change-me', `${host}: accepted`);
  }
});

t.test('storage.spool.max_bytes takes bytes or a size with a unit', async (t) => {
  const at = (v: unknown) => parseConfig({ storage: { spool: { max_bytes: v } } }, {}).storage.spool.max_bytes;
  t.equal(at(4096), 4096);
  t.equal(at('1GiB'), 1024 ** 3);
  t.equal(at('512MiB'), 512 * 1024 ** 2);
  t.equal(at('64m'), 64 * 1024 ** 2);
  t.equal(at('2g'), 2 * 1024 ** 3);
  const bad = issuesOf(t, () => parseConfig({ storage: { spool: { max_bytes: 'lots' } } }, {}));
  t.same(bad.map((i) => i.path), ['storage.spool.max_bytes']);
});

t.test('duplicate api key names are refused', async (t) => {
  const issues = issuesOf(t, () =>
    parseConfig(
      { server: { api_keys: [{ name: 'admin', key: 'a' }, { name: 'ci', key: 'b' }, { name: 'admin', key: 'c' }] } },
      {},
    ),
  );
  t.equal(issues.length, 1);
  t.equal(issues[0]?.path, 'server.api_keys[2].name');
  t.match(issues[0]?.message, /duplicate key name 'admin'/);
});

t.test('auth.type api_key without a key is refused', async (t) => {
  const up = (auth: unknown) => ({ providers: { up: { group: 'paid', format: 'openai', base_url: 'https://x.example/v1', auth } } });
  const missing = issuesOf(t, () => parseConfig(up({ type: 'api_key' }), {}));
  t.same(missing, [{ path: 'providers.up.auth.key', message: 'is required when auth.type is api_key (or give auth.keys)' }]);
  const empty = issuesOf(t, () => parseConfig(up({ type: 'api_key', key: '${UP_KEY:-}' }), {}));
  t.same(empty.map((i) => i.path), ['providers.up.auth.key'], 'an empty key from the environment');
  t.equal(parseConfig(up({ type: 'api_key', key: 'sk' }), {}).providers.up?.auth.key, 'sk', 'with a key');
  t.equal(parseConfig(up({ type: 'none' }), {}).providers.up?.auth.type, 'none', 'none needs no key');
});

t.test('a provider that is not the mock needs a base_url', async (t) => {
  for (const format of ['openai', 'openai-responses', 'anthropic', 'gemini']) {
    const issues = issuesOf(t, () => parseConfig({ providers: { up: { group: 'paid', format } } }, {}));
    t.same(issues, [{ path: 'providers.up.base_url', message: 'is required for this format' }], format);
  }
  t.ok(parseConfig({ providers: { demo: { group: 'paid', format: 'mock' } } }, {}), 'the mock needs none');
});

t.test('every cross-key problem is reported at once', async (t) => {
  const issues = issuesOf(t, () =>
    parseConfig(
      {
        server: { host: '0.0.0.0', api_keys: [{ name: 'a', key: '1'.repeat(16) }, { name: 'a', key: '2'.repeat(16) }] },
        providers: { x: { group: 'paid', format: 'openai', auth: { type: 'api_key' } }, y: { group: 'free', format: 'gemini' } },
      },
      {},
    ),
  );
  t.same(issues.map((i) => i.path).sort(), ['providers.x.auth.key', 'providers.x.base_url', 'providers.y.base_url', 'server.api_keys[1].name']);
});

t.test('loadConfigFile reads, names the file, and reports an unreadable file', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'tollgate.yaml');
  writeFileSync(file, 'server:\n  port: 4321\nproviders:\n  demo: { group: paid, format: mock, pricee: 1 }\n');
  let err: unknown;
  try {
    loadConfigFile(file, {});
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof ConfigError);
  t.match((err as Error).message, `invalid config ${file}:`);
  t.match((err as Error).message, '  - providers.demo.pricee: unknown key');

  writeFileSync(file, 'server:\n  port: "${P}"\n');
  t.equal(loadConfigFile(file, { P: '4322' }).server.port, 4322, 'env from the argument');

  const missing = issuesOf(t, () => loadConfigFile(join(dir, 'nope.yaml'), {}));
  t.equal(missing.length, 1);
  t.equal(missing[0]?.path, '(file)');
  t.match(missing[0]?.message, /cannot read: .*ENOENT/);

  writeFileSync(file, 'server:\n  host: 127.0.0.1\n  port: 4000: 5\n');
  const syntax = issuesOf(t, () => loadConfigFile(file, {}));
  t.match(syntax[0]?.message, /^YAML syntax/, 'syntax errors from a file');
});

t.test('budgets.timezone must be a time zone the runtime knows', async (t) => {
  const cfg = (timezone: string) => ({ budgets: { daily_usd: 1, timezone } });
  t.equal(parseConfig(cfg('Europe/Paris'), {}).budgets.timezone, 'Europe/Paris');
  t.same(issuesOf(t, () => parseConfig(cfg('Europe/Pariss'), {})), [
    { path: 'budgets.timezone', message: "'Europe/Pariss' is not an IANA time zone name (e.g. UTC, Europe/Paris)" },
  ]);
});

t.test('storage.sharded needs a cluster on a server', async (t) => {
  const issues = issuesOf(t, () => parseConfig({ storage: { sharded: true } }, {}));
  t.same(issues.map((i) => i.path), ['storage.sharded']);
  t.match(issues[0]?.message, /storage\.cluster and storage\.clickhouse_url/);
  const cfg = parseConfig({ storage: { sharded: true, cluster: 'prod', clickhouse_url: 'http://ch:8123' } }, {});
  t.equal(cfg.storage.sharded, true);
});

t.test('storage.clickhouse_url: an http(s) URL without a path, refused without quoting it', async (t) => {
  for (const ok of ['http://ch:8123', 'https://ch.example.com:8443/', 'http://user:pw@ch:8123', 'http://ch:8123/?pathname=/clickhouse']) {
    t.equal(parseConfig({ storage: { clickhouse_url: ok } }, {}).storage.clickhouse_url, ok, `${ok} is taken`);
  }
  const cases: [string, RegExp][] = [
    ['http://user:s3cret-pw@ch:8123/clickhouse', /must not have a path: the database is storage\.database.*\?pathname=/],
    ['http://ch:8123/tollgate', /must not have a path/],
    ['ch:8123', /must be an http:\/\/ or https:\/\/ URL/],
    ['tcp://ch:9000', /must be an http:\/\/ or https:\/\/ URL/],
    ['not a url at all s3cret-pw', /is not a URL/],
  ];
  for (const [url, why] of cases) {
    const issues = issuesOf(t, () => parseConfig({ storage: { clickhouse_url: url } }, {}));
    t.same(issues.map((i) => i.path), ['storage.clickhouse_url'], `${url.replace(/s3cret-pw/, '***')}: refused`);
    t.match(issues[0]?.message, why);
    t.notMatch(issues[0]?.message, /s3cret-pw/, 'the message never quotes the URL');
  }
});

t.test('server.public_url takes no credentials (GET /api/tunnel shows it to every key)', async (t) => {
  t.equal(parseConfig({ server: { public_url: 'https://gw.example.com/tollgate' } }, {}).server.public_url, 'https://gw.example.com/tollgate');
  for (const url of ['https://user:s3cret@gw.example.com', 'https://s3cret@gw.example.com/x']) {
    const issues = issuesOf(t, () => parseConfig({ server: { public_url: url } }, {}));
    t.same(issues.map((i) => i.path), ['server.public_url']);
    t.notMatch(issues[0]?.message, /s3cret/, 'the message never quotes the value');
  }
});

t.test('a config file that is not one is a one-line ConfigError, never a crash or a hang', async (t) => {
  // a billion laughs: yaml refuses to expand it; that is a ConfigError now, not an uncaught ReferenceError
  const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (const c of 'bcdefghi') laughs.push(`${c}: &${c} [${Array(9).fill(`*${String.fromCharCode(c.charCodeAt(0) - 1)}`).join(',')}]`);
  const bomb = issuesOf(t, () => parseConfigText(`${laughs.join('\n')}\n`, {}));
  t.same(bomb.map((i) => i.path), ['(file)']);
  t.match(bomb[0]?.message, /^YAML: .*alias/i);
  const dir = tempDir(t);
  const big = join(dir, 'big.yaml');
  writeFileSync(big, `# ${'x'.repeat(5 * 1024 * 1024)}\n`);
  t.match(issuesOf(t, () => loadConfigFile(big, {}))[0], { path: '(file)', message: /is larger than 4 MiB/ }, 'over 4 MiB: refused before it is read');
  const { execFileSync } = await import('node:child_process');
  const fifo = join(dir, 'fifo.yaml');
  execFileSync('mkfifo', [fifo]);
  t.match(issuesOf(t, () => loadConfigFile(fifo, {}))[0], { path: '(file)', message: 'is not a regular file' }, 'a FIFO: refused, not read for ever');
  t.match(issuesOf(t, () => loadConfigFile('/dev/zero', {}))[0], { path: '(file)', message: 'is not a regular file' }, '/dev/zero too');
  // duplicates are still found with yaml's own check off, in every mapping, at the second key's line
  const dup = issuesOf(t, () => parseConfigText('server:\n  port: 1\ncombos:\n  a: { strategy: fallback, models: [x/y] }\n  b: { strategy: fallback, models: [x/y], models: [x/z] }\n', {}));
  t.same(dup.map((i) => [i.path, i.message]), [['line 5', 'YAML syntax: Map keys must be unique']]);
});

t.test('a value taken from an environment variable is never quoted in an error: the variable is named', async (t) => {
  const issues = issuesOf(t, () => parseConfigText('budgets:\n  timezone: "${TG_KEY}"\nserver:\n  host: "${TG_HOST}"\n', { TG_KEY: 'sk-PROVSECRET-0123456789', TG_HOST: 'sk-OTHERSECRET-abcdef.example' }));
  const text = JSON.stringify(issues);
  t.notMatch(text, /PROVSECRET|OTHERSECRET/, 'no value of a variable');
  t.match(text, /\$\{TG_KEY\}/, 'the variable named instead');
  // a message that shortens a long value quotes only its start: that start is not shown either
  const long = issuesOf(t, () => parseConfigText('budgets:\n  timezone: "${TG_LONG}"\n', { TG_LONG: `sk-LONGSECRET-${'x'.repeat(200)}` }));
  t.notMatch(JSON.stringify(long), /LONGSECRET/, `a long value's start (${JSON.stringify(long)})`);
});

t.test('a number YAML would read differently is kept as written: a key works as its line says; a number field reads the same number', async (t) => {
  const cfg = parseConfigText(
    [
      'server:',
      '  port: 0x1F90',
      '  api_keys:',
      '    - { name: digits, key: 12345678901234567890 }',
      '    - { name: hex, key: 0x1f2e3d4c5b6a79881234 }',
      '    - { name: zeros, key: 0070 }',
      '    - { name: plain, key: 1234 }',
      'providers: {}',
      '',
    ].join('\n'),
    {},
  );
  t.same(cfg.server.api_keys.map((k) => k.key), ['12345678901234567890', '0x1f2e3d4c5b6a79881234', '0070', '1234']);
  t.equal(cfg.server.port, 8080, 'a number field reads the same number as before');
});
