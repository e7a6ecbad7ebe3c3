// YAML -> resolve ${ENV} -> validate against the closed schema (defaults applied) -> semantic checks -> freeze.
// Every problem is reported with the dotted path it belongs to and what was expected.

import { readFileSync, statSync } from 'node:fs';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { LineCounter, parseDocument } from 'yaml';
import { KEYS_UNCHECKED, duplicateKeys, numbersAsWritten, unquoted } from './text-checks.js';
import { quotaConfigOf } from './quota-kinds.js';
import { parseTimeZone } from '../core/tz.js';
import validateCoerced from './generated/config-validator.js';
import validateAsWritten from './generated/config-types-validator.js';
import { applyCatalog } from './pricing.js';
import { CONFIG_SCHEMA } from './schema.js';
import type { Config } from './types.js';
import { channelUrlIssues, isObject, keyIssues, type ConfigIssue } from './cross-checks.js';
import { splitModelSpec } from './model-spec.js';

export type { ConfigIssue } from './cross-checks.js';
export { isLoopback, keyIssues, MIN_KEY_LENGTH, weakKeyReason } from './cross-checks.js';

export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];
  constructor(source: string, issues: readonly ConfigIssue[]) {
    super(`invalid config ${source}:\n${issues.map((i) => `  - ${i.path || '(root)'}: ${i.message}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

// The schema (schema.ts) compiled by Ajv at build time (scripts/build-generated.mjs): with defaults and coercion, and
// its shape and types alone without coercion (only its type errors are kept): coercion exists for values that come
// from ${ENV} (always strings) and for numbers where a string is expected; a boolean or null (`port: true`, `port:`)
// where a number is expected is an error.
const validate = validateCoerced as ValidateFunction;
const validateTypes = validateAsWritten as ValidateFunction;

function valueAt(tree: unknown, instancePath: string): unknown {
  let v = tree;
  for (const seg of instancePath.split('/').slice(1)) v = (v as Record<string, unknown>)?.[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  return v;
}

function uncoercibleTypes(tree: unknown): ConfigIssue[] {
  if (validateTypes(tree)) return [];
  return (validateTypes.errors ?? [])
    .filter((e) => {
      if (e.keyword !== 'type') return false;
      const v = valueAt(tree, e.instancePath);
      return typeof v !== 'string' && !(typeof v === 'number' && (e.params as { type?: unknown }).type === 'string');
    })
    .map(describe);
}

type Env = Readonly<Record<string, string | undefined>>;

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replace `${VAR}` and `${VAR:-default}` in every string of the tree; an unset VAR without default is an issue. */
export function resolveEnv(node: unknown, env: Env, path: string, issues: ConfigIssue[], substituted?: Map<string, string>): unknown {
  if (typeof node === 'string') {
    return node.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (value !== undefined && value !== '') {
        substituted?.set(value, name);
        return value;
      }
      if (fallback !== undefined) return fallback;
      issues.push({ path, message: `environment variable ${name} is not set (use \${${name}:-default} for a default)` });
      return '';
    });
  }
  if (Array.isArray(node)) return node.map((v, i) => resolveEnv(v, env, `${path}[${i}]`, issues, substituted));
  if (node !== null && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      // defineProperty, not assignment: a `__proto__` key stays an own (and so an unknown) key
      Object.defineProperty(out, k, { value: resolveEnv(v, env, path ? `${path}.${k}` : k, issues, substituted), enumerable: true, writable: true, configurable: true });
    }
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

const REMOTE_FORMATS = new Set(['openai', 'openai-responses', 'anthropic', 'gemini']);

/**
 * What is wrong with a ClickHouse server's URL, never quoting it (it may hold a password): not an http(s) URL, or a
 * path, which the client would take as the database (every statement then names a database that is not
 * storage.database, and the store never opens).
 */
function clickhouseUrlIssue(url: string): string | null {
  if (url === '') return null;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a URL: give the HTTP URL of a ClickHouse server (http://clickhouse:8123)';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must be an http:// or https:// URL (ClickHouse's HTTP interface), not ${u.protocol}//`;
  if (u.pathname !== '' && u.pathname !== '/') {
    return 'must not have a path: the database is storage.database; for a server behind a reverse proxy at a path, give the path as ?pathname=/the/path';
  }
  return null;
}

/** Checks that span keys. They run on the tree even when the schema found problems, so one run reports all. */
function semanticIssues(tree: Record<string, unknown>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const storage = isObject(tree.storage) ? tree.storage : {};
  if (storage.sharded === true && (storage.cluster === '' || storage.cluster === undefined || storage.clickhouse_url === '' || storage.clickhouse_url === undefined)) {
    issues.push({ path: 'storage.sharded', message: 'needs storage.cluster and storage.clickhouse_url: the sharded layout is for a ClickHouse cluster' });
  }
  const chUrl = typeof storage.clickhouse_url === 'string' ? clickhouseUrlIssue(storage.clickhouse_url) : null;
  if (chUrl !== null) issues.push({ path: 'storage.clickhouse_url', message: chUrl });
  const server = isObject(tree.server) ? tree.server : {};
  const keys = Array.isArray(server.api_keys) ? server.api_keys : [];
  issues.push(...keyIssues(server.host, keys));
  issues.push(...channelUrlIssues(tree));
  const names = new Set<string>();
  keys.forEach((k: unknown, i) => {
    if (!isObject(k) || typeof k.name !== 'string') return;
    if (names.has(k.name)) issues.push({ path: `server.api_keys[${i}].name`, message: `duplicate key name '${k.name}'` });
    names.add(k.name);
  });
  for (const [id, p] of Object.entries(isObject(tree.providers) ? tree.providers : {})) {
    if (!isObject(p)) continue;
    if (typeof p.format === 'string' && REMOTE_FORMATS.has(p.format) && !p.base_url) issues.push({ path: `providers.${id}.base_url`, message: 'is required for this format' });
    const auth = isObject(p.auth) ? p.auth : {};
    if (auth.type === 'api_key' && !auth.key && !auth.keys) issues.push({ path: `providers.${id}.auth.key`, message: 'is required when auth.type is api_key (or give auth.keys)' });
    if (auth.key && auth.keys) issues.push({ path: `providers.${id}.auth.keys`, message: 'give either auth.key or auth.keys, not both' });
    if (auth.type === 'oauth' && !auth.oauth) issues.push({ path: `providers.${id}.auth.oauth`, message: 'is required when auth.type is oauth' });
    if (auth.type !== 'oauth' && auth.oauth) issues.push({ path: `providers.${id}.auth.oauth`, message: 'is only used when auth.type is oauth' });
    if (isObject(auth.oauth)) issues.push(...oauthIssues(`providers.${id}.auth.oauth`, auth.oauth));
    if (Array.isArray(auth.keys)) {
      const seen = new Set<unknown>();
      auth.keys.forEach((k: unknown, i) => {
        if (!isObject(k)) return;
        if (seen.has(k.name)) issues.push({ path: `providers.${id}.auth.keys[${i}].name`, message: `duplicate connection name '${String(k.name)}'` });
        seen.add(k.name);
      });
    }
    if (isObject(p.quota)) {
      try {
        quotaConfigOf({ quota: p.quota });
      } catch (err) {
        const m = /^quota\.(\w+): (.*)$/.exec((err as Error).message);
        issues.push({ path: `providers.${id}.quota${m ? `.${m[1]}` : ''}`, message: m ? m[2]! : (err as Error).message });
      }
    }
    const ka = isObject(p.keepalive) ? p.keepalive : {};
    const models = isObject(p.models) ? p.models : {};
    if (typeof ka.model === 'string' && !Object.hasOwn(models, ka.model)) issues.push({ path: `providers.${id}.keepalive.model`, message: `'${ka.model}' is not one of this provider's models` });
    if (ka.enabled === true && ka.model === undefined && Object.keys(models).length === 0) issues.push({ path: `providers.${id}.keepalive.model`, message: 'is required when the provider lists no models' });
  }
  issues.push(...routingIssues(tree));
  return issues;
}

/** Each flow's own endpoint: device_code needs device_authorization_url, pkce an authorization_url. */
function oauthIssues(path: string, o: Record<string, unknown>): ConfigIssue[] {
  const pkce = o.flow === 'pkce';
  const need = pkce ? 'authorization_url' : 'device_authorization_url';
  const foreign = pkce ? ['device_authorization_url'] : ['authorization_url', 'redirect_uri', 'authorization_params'];
  const issues: ConfigIssue[] = [];
  if (o[need] === undefined) issues.push({ path: `${path}.${need}`, message: `is required when flow is ${pkce ? 'pkce' : 'device_code'}` });
  for (const k of foreign) {
    const v = o[k];
    if (v !== undefined && !(isObject(v) && Object.keys(v).length === 0)) issues.push({ path: `${path}.${k}`, message: `is only used when flow is ${pkce ? 'device_code' : 'pkce'}` });
  }
  return issues;
}

/** A combo member, a judge or an auto-switch target must name a configured model (a combo, where allowed). */
function routingIssues(tree: Record<string, unknown>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const providers = isObject(tree.providers) ? tree.providers : {};
  const combos = isObject(tree.combos) ? tree.combos : {};
  const modelExists = (spec: unknown): boolean => {
    if (typeof spec !== 'string') return false;
    const bare = spec.replace(/\([^()]*\)$/, '');
    const split = splitModelSpec(bare);
    const p = split === null ? undefined : providers[split.provider];
    if (split === null || !isObject(p)) return false;
    return p.allow_unlisted_models === true || (isObject(p.models) && Object.hasOwn(p.models, split.modelId));
  };
  for (const [name, c] of Object.entries(combos)) {
    if (!isObject(c)) continue;
    if (Array.isArray(c.models)) {
      c.models.forEach((m: unknown, i) => {
        if (!modelExists(m)) issues.push({ path: `combos.${name}.models[${i}]`, message: `'${String(m)}' is not a configured <provider>/<model>` });
      });
    }
    if (c.judge !== undefined && !modelExists(c.judge)) issues.push({ path: `combos.${name}.judge`, message: `'${String(c.judge)}' is not a configured <provider>/<model>` });
    if (c.strategy !== 'fusion') {
      for (const k of ['judge', 'quorum', 'grace_ms', 'timeout_ms']) if (c[k] !== undefined) issues.push({ path: `combos.${name}.${k}`, message: 'is only used by the fusion strategy' });
    }
    if (typeof c.quorum === 'number' && Array.isArray(c.models) && c.quorum > c.models.length) {
      issues.push({ path: `combos.${name}.quorum`, message: `is larger than the number of members (${c.models.length})` });
    }
  }
  const budgets = isObject(tree.budgets) ? tree.budgets : {};
  if (typeof budgets.timezone === 'string' && parseTimeZone(budgets.timezone) === null) {
    issues.push({ path: 'budgets.timezone', message: `'${budgets.timezone.slice(0, 64)}' is not an IANA time zone name (e.g. UTC, Europe/Paris)` });
  }
  const sw = isObject(budgets.auto_switch) ? budgets.auto_switch : {};
  if (sw.enabled === true && sw.to === undefined) issues.push({ path: 'budgets.auto_switch.to', message: 'is required when auto_switch is enabled' });
  return issues;
}

function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/**
 * Validate `tree` (its ${VAR}s resolved) against the schema, defaults applied, adding its issues to `issues`. An unset
 * ${VAR} already in `issues` is the one thing to say about its path (not also that the empty string it left is too short).
 */
function schemaIssues(tree: unknown, issues: ConfigIssue[]): void {
  issues.push(...uncoercibleTypes(tree));
  const valid = validate(tree);
  const unresolved = new Set(issues.map((i) => i.path));
  if (!valid) issues.push(...(validate.errors ?? []).map(describe).filter((i) => !unresolved.has(i.path)));
}

/** PORT, which overrides server.port: the port it gives, or undefined when it is unset or not a port (an issue). */
function portFromEnv(env: Env, issues: ConfigIssue[]): number | undefined {
  if (env.PORT === undefined || env.PORT === '') return undefined;
  const port = /^\d{1,5}$/.test(env.PORT) ? Number(env.PORT) : NaN;
  if (port <= 65535) return port;
  issues.push({ path: 'PORT', message: 'expected an integer from 0 to 65535' });
  return undefined;
}

/** Validate an already-parsed YAML tree. Throws ConfigError listing every issue. */
export function parseConfig(raw: unknown, env: Env = process.env, source = '(inline)'): Config {
  const issues: ConfigIssue[] = [];
  const substituted = new Map<string, string>();
  const tree = resolveEnv(raw ?? {}, env, '', issues, substituted) as Record<string, unknown>;
  schemaIssues(tree, issues);
  const server = (isObject(tree.server) ? tree.server : {}) as { port?: number; body_limit_bytes?: number };
  const port = portFromEnv(env, issues);
  if (port !== undefined) server.port = port;
  const limit = env.TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE;
  if (limit !== undefined && limit !== '') {
    const bytes = parseSize(limit);
    if (bytes === null) issues.push({ path: 'TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE', message: 'expected a size such as 134217728, 128m or 64k' });
    else server.body_limit_bytes = bytes;
  }
  const spool = (isObject(tree.storage) && isObject(tree.storage.spool) ? tree.storage.spool : {}) as { max_bytes?: unknown };
  if (typeof spool.max_bytes === 'string') {
    const bytes = parseSize(spool.max_bytes);
    if (bytes === null) issues.push({ path: 'storage.spool.max_bytes', message: 'expected bytes or a size such as 1GiB, 512MiB or 64m' });
    else spool.max_bytes = bytes;
  }
  const taken = new Set(issues.map((i) => i.path));
  issues.push(...semanticIssues(tree).filter((i) => !taken.has(i.path)));
  if (issues.length > 0) throw new ConfigError(source, dedupe(issues.map((i) => unquoted(i, substituted))));
  applyCatalog(tree);
  return deepFreeze(tree as unknown as Config);
}

export function parseSize(s: string): number | null {
  const m = /^\s*(\d+)\s*([kmg]?)(?:i?b)?\s*$/i.exec(s);
  if (!m) return null;
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  const n = Number(m[1]) * mult;
  // a whole number of bytes a server can hold: 400 nines is Infinity, which the HTTP server then refuses at start
  return n > 0 && Number.isSafeInteger(n) ? n : null;
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
  return parseConfig(yamlTree(text, source), env, source);
}

/** Where a config's gateway listens: what a client of it (`tollgate export`, `tollgate import`) reads of the file. */
export interface ServerAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * server.host and server.port of a config text (defaults and PORT applied, checked as a start checks them), with
 * only their own ${VAR}s resolved: of the rest, only the names of the top-level and server keys are checked, so a
 * variable it names elsewhere (a provider's key, the data directory) need not be set. An unset variable of the two is
 * a ConfigError naming it.
 */
export function parseServerAddress(text: string, env: Env = process.env, source = '(inline)'): ServerAddress {
  const tree = yamlTree(text, source) ?? {}; // a null document: the defaults, as for a start
  const server = isObject(tree) ? tree.server : undefined;
  const own = isObject(server) ? Object.fromEntries(['host', 'port'].filter((k) => Object.hasOwn(server, k)).map((k) => [k, server[k]])) : server;
  const issues: ConfigIssue[] = [];
  const substituted = new Map<string, string>();
  const part = resolveEnv(isObject(tree) ? (own === undefined ? {} : { server: own }) : tree, env, '', issues, substituted);
  schemaIssues(part, issues);
  // the keys' names, as a start checks them: a misspelt `server:` or `port:`, or a `<<:` merge key (not supported),
  // would leave the default address, and the commands would take the admin key to whatever listens there
  issues.push(...unknownKeys(tree, CONFIG_SCHEMA, ''), ...unknownKeys(server, CONFIG_SCHEMA.properties.server as { properties: object }, 'server'));
  const port = portFromEnv(env, issues);
  if (issues.length > 0) throw new ConfigError(source, dedupe(issues.map((i) => unquoted(i, substituted))));
  const address = (part as { server: ServerAddress }).server;
  return { host: address.host, port: port ?? address.port };
}

/** Each key of `node` that the closed object schema `schema` does not have: 'unknown key', as the schema check says. */
function unknownKeys(node: unknown, schema: { properties: object }, at: string): ConfigIssue[] {
  const names = isObject(node) ? Object.keys(node).filter((k) => !Object.hasOwn(schema.properties, k)) : [];
  return names.map((k) => ({ path: at ? `${at}.${k}` : k, message: 'unknown key' }));
}

/** The tree of a config's YAML text; syntax errors become issues with a line number. */
function yamlTree(text: string, source: string): unknown {
  if (text.length > MAX_CONFIG_CHARS) throw new ConfigError(source, [{ path: '(file)', message: `is larger than ${MAX_CONFIG_CHARS / 1024 ** 2} MiB; a config file is a few KiB` }]);
  const lines = new LineCounter();
  // yaml's own duplicate-key check compares each key with every earlier one of its mapping (a file of many keys took
  // seconds, on the event loop at a reload); duplicateKeys() does it with a set.
  const doc = parseDocument(text, { prettyErrors: false, lineCounter: lines, ...KEYS_UNCHECKED });
  const errors = [...doc.errors.map((e) => ({ pos: e.pos[0], message: e.message.split('\n')[0]! })), ...duplicateKeys(doc)];
  if (errors.length > 0) {
    throw new ConfigError(source, errors.map((e) => ({ path: `line ${lines.linePos(e.pos).line}`, message: `YAML syntax: ${e.message}` })));
  }
  // An empty document is almost always a file caught half-written (or truncated by mistake): never apply it.
  if (doc.contents === null) throw new ConfigError(source, [{ path: '(file)', message: 'is empty; expected a YAML mapping' }]);
  numbersAsWritten(doc);
  let tree: unknown;
  try {
    tree = doc.toJS(); // aliases expanded: yaml refuses a billion laughs here, with an error of its own
  } catch (err) {
    throw new ConfigError(source, [{ path: '(file)', message: `YAML: ${(err as Error).message.split('\n')[0]}` }]);
  }
  return tree;
}

/** The largest config file read (characters): bigger is a mistake (a log, /dev/zero), not a config. */
const MAX_CONFIG_CHARS = 4 * 1024 ** 2;

/** The text of a config file; a file that cannot be read (or is not a regular file: a FIFO, /dev/zero) is a ConfigError. */
export function readConfigText(file: string): string {
  let problem: string | null;
  try {
    const st = statSync(file);
    problem = !st.isFile() && !st.isDirectory() ? 'is not a regular file' : st.size > MAX_CONFIG_CHARS ? `is larger than ${MAX_CONFIG_CHARS / 1024 ** 2} MiB; a config file is a few KiB` : null;
    if (problem === null) return readFileSync(file, 'utf8');
  } catch (err) {
    problem = `cannot read: ${(err as Error).message}`;
  }
  throw new ConfigError(file, [{ path: '(file)', message: problem }]);
}

export function loadConfigFile(file: string, env: Env = process.env): Config {
  return parseConfigText(readConfigText(file), env, file);
}
