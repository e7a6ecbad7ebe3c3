// YAML -> resolve ${ENV} -> validate against the closed schema (defaults applied) -> semantic checks -> freeze.
// Every problem is reported with the dotted path it belongs to and what was expected.

import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Ajv, type ErrorObject } from 'ajv';
import { parseDocument } from 'yaml';
import { CONFIG_SCHEMA } from './schema.js';
import type { Config } from './types.js';

export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
}

export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];
  constructor(source: string, issues: readonly ConfigIssue[]) {
    super(`invalid config ${source}:\n${issues.map((i) => `  - ${i.path || '(root)'}: ${i.message}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true, strict: true });
const validate = ajv.compile(CONFIG_SCHEMA);

type Env = Readonly<Record<string, string | undefined>>;

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replace `${VAR}` and `${VAR:-default}` in every string of the tree; an unset VAR without default is an issue. */
export function resolveEnv(node: unknown, env: Env, path: string, issues: ConfigIssue[]): unknown {
  if (typeof node === 'string') {
    return node.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      issues.push({ path, message: `environment variable ${name} is not set (use \${${name}:-default} for a default)` });
      return '';
    });
  }
  if (Array.isArray(node)) return node.map((v, i) => resolveEnv(v, env, `${path}[${i}]`, issues));
  if (node !== null && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = resolveEnv(v, env, path ? `${path}.${k}` : k, issues);
    return out;
  }
  return node;
}

function dotted(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`))
    .join('')
    .replace(/^\./, '');
}

function describe(e: ErrorObject): ConfigIssue {
  const at = dotted(e.instancePath);
  const join = (k: string) => (at ? `${at}.${k}` : k);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties':
      return { path: join(String(p.additionalProperty)), message: 'unknown key' };
    case 'required':
      return { path: join(String(p.missingProperty)), message: 'is required' };
    case 'enum':
      return { path: at, message: `expected one of: ${(p.allowedValues as unknown[]).join(', ')}` };
    case 'type':
      return { path: at, message: `expected ${String(p.type)}` };
    case 'propertyNames':
      return { path: join(String(p.propertyName)), message: 'is not an allowed key here' };
    default:
      return { path: at, message: `expected a value that ${e.message ?? 'matches the schema'}` };
  }
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || (isIP(host) === 4 && host.startsWith('127.'));
}

function semanticIssues(cfg: Config): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (!isLoopback(cfg.server.host) && cfg.server.api_keys.length === 0) {
    issues.push({
      path: 'server.api_keys',
      message: `at least one key is required when server.host (${cfg.server.host}) is not a loopback address`,
    });
  }
  const names = new Set<string>();
  cfg.server.api_keys.forEach((k, i) => {
    if (names.has(k.name)) issues.push({ path: `server.api_keys[${i}].name`, message: `duplicate key name '${k.name}'` });
    names.add(k.name);
  });
  for (const [id, p] of Object.entries(cfg.providers)) {
    if (p.format !== 'mock' && !p.base_url) issues.push({ path: `providers.${id}.base_url`, message: 'is required for this format' });
    if (p.auth.type === 'api_key' && !p.auth.key) issues.push({ path: `providers.${id}.auth.key`, message: 'is required when auth.type is api_key' });
  }
  return issues;
}

function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** Validate an already-parsed YAML tree. Throws ConfigError listing every issue. */
export function parseConfig(raw: unknown, env: Env = process.env, source = '(inline)'): Config {
  const issues: ConfigIssue[] = [];
  const tree = resolveEnv(raw ?? {}, env, '', issues) as Record<string, unknown>;
  if (!validate(tree)) issues.push(...(validate.errors ?? []).map(describe));
  if (issues.length > 0) throw new ConfigError(source, dedupe(issues));
  const cfg = tree as unknown as Config & { server: { port: number } };
  if (env.PORT !== undefined && env.PORT !== '') {
    const port = Number(env.PORT);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(source, [{ path: 'PORT', message: 'expected an integer from 0 to 65535' }]);
    cfg.server.port = port;
  }
  const limit = env.TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE;
  if (limit !== undefined && limit !== '') {
    const bytes = parseSize(limit);
    if (bytes === null) throw new ConfigError(source, [{ path: 'TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE', message: 'expected a size such as 134217728, 128m or 64k' }]);
    (cfg.server as { body_limit_bytes: number }).body_limit_bytes = bytes;
  }
  const semantic = semanticIssues(cfg);
  if (semantic.length > 0) throw new ConfigError(source, semantic);
  return deepFreeze(cfg);
}

export function parseSize(s: string): number | null {
  const m = /^\s*(\d+)\s*([kmg]?)b?\s*$/i.exec(s);
  if (!m) return null;
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  const n = Number(m[1]) * mult;
  return n > 0 ? n : null;
}

function dedupe(issues: ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const k = `${i.path}\0${i.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** Parse YAML text; syntax errors become issues with a line number. */
export function parseConfigText(text: string, env: Env = process.env, source = '(inline)'): Config {
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map((e) => ({ path: `line ${(e.linePos?.[0]?.line ?? 0)}`, message: `YAML syntax: ${e.message.split('\n')[0]}` })),
    );
  }
  return parseConfig(doc.toJS(), env, source);
}

export function loadConfigFile(file: string, env: Env = process.env): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [{ path: '(file)', message: `cannot read: ${(err as Error).message}` }]);
  }
  return parseConfigText(text, env, file);
}
