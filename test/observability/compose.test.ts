// The docker-compose stack stays true: `docker-compose config -q` (Debian's docker-compose) accepts it, every file it
// mounts or builds from exists in the repository, the image is multi-stage, runs as a non-root user and leaves the
// embedded engine out, every port is published on loopback only, Grafana's anonymous access is off unless .env says
// otherwise, and .env.example names every variable the stack requires.

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { parse } from 'yaml';

const ROOT = resolve(import.meta.dirname, '../..');
const COMPOSE = join(ROOT, 'docker-compose.yml');
const REQUIRED = { TOLLGATE_API_KEY: 'compose-check', GRAFANA_ADMIN_PASSWORD: 'compose-check' };
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !(k in REQUIRED) && !k.startsWith('GRAFANA_') && !k.startsWith('CLICKHOUSE_')));

function compose(args: string[], env: Record<string, string | undefined>) {
  return spawnSync('docker-compose', ['-f', COMPOSE, ...args], { encoding: 'utf8', cwd: ROOT, env: { ...baseEnv, ...env } as NodeJS.ProcessEnv });
}

interface Service {
  build?: string | { context: string; dockerfile?: string };
  volumes?: (string | { type: string; source: string; target: string })[];
  ports?: (string | { host_ip?: string; published?: string | number; target: number })[];
  environment?: Record<string, string | null>;
}

t.test('docker-compose config -q accepts it with the required variables, and refuses it without them', async (t) => {
  const ok = compose(['config', '-q'], REQUIRED);
  t.equal(ok.status, 0, ok.stderr);
  const services = compose(['config', '--services'], REQUIRED);
  t.same(services.stdout.trim().split('\n').sort(), ['alertmanager', 'clickhouse', 'grafana', 'jaeger', 'prometheus', 'tollgate']);
  for (const missing of Object.keys(REQUIRED)) {
    const env = { ...REQUIRED, [missing]: undefined };
    const r = compose(['config', '-q'], env);
    t.not(r.status, 0, `refused without ${missing}`);
    t.match(r.stderr, missing);
  }
  const noKey = compose(['config', '-q'], { ...REQUIRED, TOLLGATE_API_KEY: '' });
  t.not(noKey.status, 0, 'an empty key (as .env.example ships it) is refused too');
  t.match(noKey.stderr, 'server.api_keys[0].key is not set', 'with the guard line, naming the key path');
  t.match(noKey.stderr, 'openssl rand -hex 32');
});

const resolved = parse(compose(['config'], REQUIRED).stdout) as { services: Record<string, Service> };

t.test('every file the stack mounts or builds from exists in the repository', async (t) => {
  let mounts = 0;
  for (const [name, s] of Object.entries(resolved.services)) {
    for (const v of s.volumes ?? []) {
      const source = typeof v === 'string' ? v.split(':')[0]! : v.type === 'bind' ? v.source : '';
      if (!source || !(isAbsolute(source) || source.startsWith('.'))) continue; // a named volume
      const path = isAbsolute(source) ? source : join(ROOT, source);
      t.ok(existsSync(path), `${name}: ${relative(ROOT, path)} exists`);
      mounts++;
    }
    if (s.build !== undefined) {
      const ctx = typeof s.build === 'string' ? s.build : s.build.context;
      const file = typeof s.build === 'string' ? 'Dockerfile' : (s.build.dockerfile ?? 'Dockerfile');
      t.ok(existsSync(join(isAbsolute(ctx) ? ctx : join(ROOT, ctx), file)), `${name}: builds from an existing ${file}`);
    }
  }
  t.ok(mounts >= 6, `${mounts} bind mounts checked`);
  // What the mounted directories must hold for the services to work.
  t.ok(readdirSync(join(ROOT, 'dashboards')).some((f) => f.endsWith('.json')), 'dashboards/ holds dashboards for Grafana');
  t.ok(readdirSync(join(ROOT, 'alerting-rules')).some((f) => f.endsWith('.yml')), 'alerting-rules/ holds rule files');
  const prom = parse(readFileSync(join(ROOT, 'deploy/prometheus.yml'), 'utf8')) as { rule_files: string[]; alerting: { alertmanagers: { static_configs: { targets: string[] }[] }[] }; scrape_configs: { static_configs: { targets: string[] }[]; metrics_path: string }[] };
  t.same(prom.rule_files, ['/etc/prometheus/rules/*.yml'], 'Prometheus loads the mounted alerting-rules/');
  t.same(prom.alerting.alertmanagers[0]!.static_configs[0]!.targets, ['alertmanager:9093'], 'and sends to Alertmanager');
  t.same([prom.scrape_configs[0]!.metrics_path, prom.scrape_configs[0]!.static_configs[0]!.targets], ['/metrics', ['tollgate:4000']], 'and scrapes the gateway');
  const dashboards = parse(readFileSync(join(ROOT, 'deploy/grafana/provisioning/dashboards/dashboards.yaml'), 'utf8')) as { providers: { options: { path: string } }[] };
  const grafanaMounts = (resolved.services.grafana!.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':')[1] : v.target));
  t.ok(grafanaMounts.includes(dashboards.providers[0]!.options.path), 'the provisioned dashboard path is the mounted dashboards/');
  const ds = readFileSync(join(ROOT, 'deploy/grafana/provisioning/datasources/datasources.yaml'), 'utf8');
  t.match(ds, /type: prometheus/);
  t.match(ds, /type: grafana-clickhouse-datasource/, 'both data sources are provisioned');
  const cfg = readFileSync(join(ROOT, 'deploy/tollgate.compose.yaml'), 'utf8');
  t.match(cfg, /clickhouse_url: http:\/\/clickhouse:8123/, 'the gateway uses the ClickHouse server');
  t.match(cfg, /otlp_endpoint: http:\/\/jaeger:4318/, 'and sends spans to the trace backend');
});

t.test('the image: multi-stage, non-root, without the embedded engine', async (t) => {
  const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  t.ok((docker.match(/^FROM /gm) ?? []).length >= 2, 'multi-stage');
  const user = /^USER (\S+)/m.exec(docker)?.[1];
  t.ok(user !== undefined && user !== 'root' && user !== '0', `runs as ${user}`);
  t.match(docker, /npm prune --omit=dev --omit=optional/, 'chdb (optional) is pruned');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; optionalDependencies?: Record<string, string> };
  t.ok(pkg.optionalDependencies?.chdb !== undefined && pkg.dependencies.chdb === undefined, 'chdb is an optional dependency');
  t.ok(statSync(join(ROOT, '.dockerignore')).isFile());
  // What the app reads beside dist/ at run time (store/archive.ts, api/status.ts): in the image's last stage.
  const last = docker.slice(docker.lastIndexOf('\nFROM '));
  for (const f of ['package.json', 'CHANGELOG.md']) t.match(last, new RegExp(`^COPY [^\\n]*\\b${f.replace('.', '\\.')}\\b`, 'm'), `the image has ${f}`);
  // `npm run build` runs scripts/*.mjs, and the console's bundle reads console/: the build stage has them
  const build = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { build: string } }).scripts.build;
  const dirs = new Set([...build.matchAll(/node (\w+)\//g)].map((m) => m[1]!).concat(['console']));
  t.ok(dirs.has('scripts'), `the build runs ${[...dirs].join(', ')}`);
  for (const d of dirs) t.match(docker, new RegExp(`^COPY ${d} \\./${d}$`, 'm'), `the build stage copies ${d}/`);
});

t.test('ports on loopback only; Grafana anonymous access off by default; .env.example names every required variable', async (t) => {
  for (const [name, s] of Object.entries(resolved.services)) {
    for (const p of s.ports ?? []) {
      const ip = typeof p === 'string' ? p.split(':')[0] : p.host_ip;
      t.equal(ip, '127.0.0.1', `${name}: published on loopback`);
    }
  }
  t.equal(String(resolved.services.grafana!.environment?.GF_AUTH_ANONYMOUS_ENABLED), 'false');
  const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
  const raw = readFileSync(COMPOSE, 'utf8');
  const vars = new Set([...raw.matchAll(/\$\{([A-Z_][A-Z0-9_]*)(:[?-][^}]*)?\}/g)].map((m) => m[1]!));
  for (const v of vars) t.match(example, new RegExp(`^${v}=`, 'm'), `.env.example sets ${v}`);
});
