// The settings the console edits, written to the config file (admin keys only: the gate's ADMIN_PREFIXES):
//
//   GET /api/settings                    budgets, alert switches and thresholds, prices; which are fed by ${VAR}; ETag
//   PUT /api/settings/budgets            { daily_usd, monthly_usd, timezone, auto_switch: { enabled, to } }
//   PUT /api/settings/alerts             { kinds: { <kind>: bool }, channels: { dashboard, email: { enabled }, ... },
//                                          thresholds: { quota, daily, monthly, anomaly_multiple } }
//   PUT /api/settings/prices/:provider   { price: { input, output, cached, ... }, models: { <id>: { input, ... } } }
//
// A key left out is left as it is; null removes it (back to the default). The file is edited in place
// (config/edit.ts), validated by the loader, written, and applied as a live reload is (applyConfig); an invalid
// result is a 400 naming the field and the file is untouched. If-Match: the ETag from GET, else 412. A file on disk
// that cannot be edited (unreadable, not clean YAML, not a valid config) is a 409 that says why.
//
// The bodies are checked strictly: an unknown key or a value of the wrong type is a 400 naming the field (no
// coercion, no key dropped), by fastify's own validator compiler (@fastify/ajv-compiler) with those two options off,
// compiled by the first request that needs it, not at start (core/lazy-validator.ts). A client string may not hold
// `${`: the loader would expand it from the environment (an API key, the secret key) into the running settings.
// No message quotes a value the loader took from the environment.

import type { FastifyBaseLogger, FastifyPluginAsync, FastifyRequest, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { ALERT_KINDS } from '../alerts/types.js';
import {
  ConfigFileError, EditPathError, applyEdits, dottedPath, editProblem, envConflict, envFedPaths, readConfigFile, writeConfigFile, type SettingEdit, type SettingPath,
} from '../config/edit.js';
import { ConfigError, parseConfigText, type ConfigIssue } from '../config/load.js';
import { ALERT_THRESHOLDS_MAX_ITEMS, SETTING_STRING_MAX_LENGTH } from '../config/schema.js';
import type { Config } from '../config/types.js';
import { applyConfig, runningKeyIssues, type ConfigHolder } from '../config/watch.js';
import { TollgateError } from '../core/errors.js';
import { lazyCompilersFactory } from '../core/lazy-validator.js';
import { own } from '../core/own.js';

export interface SettingsOptions {
  readonly config: ConfigHolder;
  /** The file the app runs from; without one the settings can be read but not written. */
  readonly configFile?: string;
}

const PRICE_KEYS = ['input', 'output', 'cached', 'cache_write', 'cache_write_1h', 'reasoning', 'input_audio', 'output_audio', 'web_search_per_1k'] as const;
// null removes a key: every leaf allows it.
const numberOrNull = { type: ['number', 'null'] };
const booleanOrNull = { type: ['boolean', 'null'] };
// A service tier's prices (docs/recording.md, "Service tiers"); names and bounds are checked by the config's schema.
const tierPrices = { type: ['object', 'null'], additionalProperties: numberOrNull, maxProperties: 8 };
const priceBody = {
  type: ['object', 'null'], additionalProperties: false,
  properties: { ...Object.fromEntries(PRICE_KEYS.map((k) => [k, numberOrNull])), service_tiers: { type: ['object', 'null'], additionalProperties: tierPrices, maxProperties: 8 } },
};
// Bounded before anything else is read of it (the config schema's bound; docs/config.md): a long list is refused
// without being checked item by item, edited into the file or validated by the loader.
const percentList = { type: 'array', maxItems: ALERT_THRESHOLDS_MAX_ITEMS, items: { type: 'number' } };
const channelSwitch = { type: 'object', additionalProperties: false, properties: { enabled: booleanOrNull } };

const BODIES = {
  budgets: {
    type: 'object', additionalProperties: false,
    properties: {
      daily_usd: numberOrNull, monthly_usd: numberOrNull, timezone: { type: ['string', 'null'], maxLength: SETTING_STRING_MAX_LENGTH.timezone },
      auto_switch: { type: 'object', additionalProperties: false, properties: { enabled: booleanOrNull, to: { type: ['string', 'null'], maxLength: SETTING_STRING_MAX_LENGTH.to } } },
    },
  },
  alerts: {
    type: 'object', additionalProperties: false,
    properties: {
      kinds: { type: 'object', additionalProperties: false, properties: Object.fromEntries(ALERT_KINDS.map((k) => [k, booleanOrNull])) },
      channels: { type: 'object', additionalProperties: false, properties: { dashboard: booleanOrNull, email: channelSwitch, webhook: channelSwitch } },
      thresholds: {
        type: 'object', additionalProperties: false,
        properties: { quota: percentList, daily: percentList, monthly: percentList, anomaly_multiple: numberOrNull },
      },
    },
  },
  prices: {
    type: 'object', additionalProperties: false,
    properties: { price: priceBody, models: { type: 'object', additionalProperties: priceBody } },
  },
} as const;

type Validate = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };
/** Fastify's default Ajv options but for these: a wrong type is not coerced, an unknown key not removed. */
const STRICT = { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allowUnionTypes: true }, plugins: [] };
let strictCompiler: ((route: { schema: unknown }) => Validate) | null = null;

/** A route's body schema compiled by its first request, by fastify's Ajv compiler with the STRICT options. */
const compileStrictOnFirstUse: FastifySchemaCompiler<unknown> = (route) => {
  let validate: Validate | null = null;
  const lazy: Validate = (data) => {
    strictCompiler ??= (lazyCompilersFactory.buildValidator as (ext: unknown, o: unknown) => typeof strictCompiler)({}, STRICT);
    validate ??= strictCompiler!(route);
    const ok = validate(data);
    lazy.errors = validate.errors ?? null;
    return ok;
  };
  return lazy;
};

/** The 400 for a body the schema refuses: the first error, at the config path it was for (`at` maps the body's). */
function bodyError(errors: readonly FastifySchemaValidationError[], at: (segs: string[]) => SettingPath): TollgateError {
  const e = errors[0]!;
  const segs = e.instancePath.split('/').slice(1).map((x) => x.replace(/~1/g, '/').replace(/~0/g, '~'));
  const p = e.params as { additionalProperty?: string; type?: string | string[] };
  let message = e.message ?? 'is not valid';
  if (e.keyword === 'additionalProperties') {
    segs.push(String(p.additionalProperty));
    message = 'unknown key';
  } else if (e.keyword === 'type') {
    message = `expected ${([] as string[]).concat(p.type ?? []).join(' or ')}`;
  }
  const path = dottedPath(at(segs).map((x) => (/^\d+$/.test(String(x)) ? Number(x) : x)));
  return new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `${path}: ${message.slice(0, 200)}`, { param: path });
}

/** Refuses a string holding `${`, anywhere in an edit's value: the loader would expand it from the environment. */
function refuseEnvReferences(edits: readonly SettingEdit[]): void {
  const holds = (v: unknown): boolean => (typeof v === 'string' ? v.includes('${') : Array.isArray(v) && v.some(holds));
  const e = edits.find((x) => holds(x.value));
  if (e === undefined) return;
  const path = dottedPath(e.path);
  throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `${path}: may not contain "\${": the config file would read it as an environment variable reference (set one by editing the file)`, { param: path });
}

/** `issue` as a message, withheld where it would show a value the loader took from the environment. */
function issueMessage(issue: ConfigIssue, text: string): string {
  const names = new Set([...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
  // A prefix is enough to be found: messages shorten long values from the start (`'${value.slice(0, 64)}'`).
  const leaks = [...names].some((n) => { const v = process.env[n]; return v !== undefined && v !== '' && issue.message.includes(v.slice(0, 12)); });
  return `${issue.path}: ${leaks ? 'is not valid (the reason would show a value from an environment variable)' : issue.message}`;
}

const fileConflict = (reason: string): TollgateError =>
  new TollgateError('TOLLGATE_ERR_CONFIG_CONFLICT', `the config file on disk cannot be edited: ${reason}; fix it by hand (the running settings are unchanged)`);

/** The edits of a body: every key given, at `prefix` + its path; null removes. */
function editsOf(prefix: readonly string[], body: Record<string, unknown>): SettingEdit[] {
  const out: SettingEdit[] = [];
  for (const [k, v] of Object.entries(body)) {
    const path = [...prefix, k];
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(...editsOf(path, v as Record<string, unknown>));
    else out.push({ path, value: v === null ? undefined : v });
  }
  return out;
}

/** The settings as they run, in the shape the PUT bodies take. */
function settingsView(cfg: Config) {
  const b = cfg.budgets;
  const ch = cfg.alerts.channels;
  return {
    budgets: {
      daily_usd: b.daily_usd ?? null, monthly_usd: b.monthly_usd ?? null, timezone: b.timezone ?? null,
      auto_switch: { enabled: b.auto_switch.enabled, to: b.auto_switch.to ?? null },
    },
    alerts: {
      kinds: Object.fromEntries(ALERT_KINDS.map((k) => [k, cfg.alerts.kinds[k] !== false])),
      channels: {
        dashboard: ch.dashboard,
        email: ch.email === undefined ? null : { enabled: ch.email.enabled },
        webhook: ch.webhook === undefined ? null : { enabled: ch.webhook.enabled },
      },
      thresholds: cfg.alerts.thresholds,
    },
    prices: Object.fromEntries(Object.entries(cfg.providers).map(([id, p]) => [id, {
      name: p.name ?? id, group: p.group, price: p.price ?? null,
      models: Object.fromEntries(Object.entries(p.models).map(([m, mc]) => [m, mc.price ?? null])),
    }])),
    switch_targets: [
      ...Object.entries(cfg.providers).flatMap(([id, p]) => Object.keys(p.models).map((m) => `${id}/${m}`)),
      ...Object.keys(cfg.combos),
    ],
  };
}

/** Only the settings' own paths: a `${VAR}` elsewhere (a provider key) is not the console's business. */
const isSettingPath = (p: string): boolean => /^(budgets|alerts)\.|^providers\.[^.]+\.(price|models\.[^.]+\.price)\b/.test(p);

export const settingsRoutes: FastifyPluginAsync<SettingsOptions> = async (app, opts) => {
  const { config, configFile } = opts;

  app.get('/api/settings', async (_req, reply) => {
    let file = null;
    let problem: string | null = configFile === undefined ? 'no config file' : null;
    if (configFile !== undefined) {
      try {
        file = readConfigFile(configFile);
        problem = editProblem(file.text);
      } catch (err) {
        if (!(err instanceof ConfigFileError)) throw err;
        problem = err.message;
      }
    }
    if (file !== null) reply.header('etag', file.etag);
    return {
      file: configFile ?? null,
      writable: file !== null && problem === null,
      // Why a file that is there cannot be edited now (a PUT is a 409 saying the same), else null.
      file_error: configFile === undefined ? null : problem,
      etag: file?.etag ?? null,
      env_fed: file === null || problem !== null ? [] : envFedPaths(file.text).filter(isSettingPath),
      ...settingsView(config.current),
    };
  });

  /** Apply `edits` to the file (see the header); answers the new settings. */
  const write = (req: FastifyRequest, edits: readonly SettingEdit[], log: FastifyBaseLogger) => {
    if (configFile === undefined) {
      throw new TollgateError('TOLLGATE_ERR_CONFIG_CONFLICT', 'this gateway runs without a config file (started by code, not `tollgate --config FILE`): its settings cannot be written');
    }
    refuseEnvReferences(edits);
    try {
      return writeFile(configFile, req, edits, log);
    } catch (err) {
      throw err instanceof ConfigFileError ? fileConflict(err.message) : err;
    }
  };

  const writeFile = (file: string, req: FastifyRequest, edits: readonly SettingEdit[], log: FastifyBaseLogger) => {
    const current = readConfigFile(file);
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && ifMatch !== '*' && !ifMatch.split(',').map((s) => s.trim()).includes(current.etag)) {
      throw new TollgateError('TOLLGATE_ERR_PRECONDITION_FAILED', `the config file changed since it was read (its ETag is ${current.etag}, not ${ifMatch}); read GET /api/settings again`);
    }
    const problem = editProblem(current.text);
    if (problem !== null) throw fileConflict(problem);
    const fed = envConflict(current.text, edits);
    if (fed !== null) {
      throw new TollgateError('TOLLGATE_ERR_CONFIG_CONFLICT', `${fed} is set from an environment variable in the config file; change the variable instead`, { param: fed });
    }
    let text: string;
    try {
      text = applyEdits(current.text, edits);
    } catch (err) {
      if (err instanceof EditPathError) throw fileConflict(err.message);
      throw err;
    }
    let written;
    try {
      written = writeConfigFile(file, text, { refuse: (next) => runningKeyIssues(config, next) });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const edited = new Set(edits.map((e) => dottedPath(e.path)));
      // The issue of a field this request set comes first; another is the edit's (a cross-key check) unless the
      // file on disk does not load as it is.
      const issue = err.issues.find((i) => edited.has(i.path) || [...edited].some((p) => i.path.startsWith(`${p}.`) || i.path.startsWith(`${p}[`)));
      if (issue === undefined) {
        try {
          parseConfigText(current.text, process.env, file);
        } catch (fileErr) {
          if (fileErr instanceof ConfigError) throw fileConflict(`it is not a valid config (${issueMessage(fileErr.issues[0]!, current.text)})`);
          throw fileErr;
        }
      }
      const at = issue ?? err.issues[0]!;
      throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', issueMessage(at, text), { param: at.path });
    }
    applyConfig(config, written.config, { file, text, log });
    return { etag: written.etag, ...settingsView(written.config) };
  };

  const route = { validatorCompiler: compileStrictOnFirstUse, attachValidation: true } as const;
  /** The request's body, once the schema passed it (else the 400 naming the field, at its config path). */
  const bodyOf = <T>(req: FastifyRequest, at: (segs: string[]) => SettingPath): T => {
    if (req.validationError !== undefined) throw bodyError(req.validationError.validation as FastifySchemaValidationError[], at);
    return req.body as T;
  };

  app.put('/api/settings/budgets', { schema: { body: BODIES.budgets }, ...route }, async (req, reply) => {
    const body = bodyOf<Record<string, unknown>>(req, (segs) => ['budgets', ...segs]);
    const r = write(req, editsOf(['budgets'], body), req.log);
    return reply.header('etag', r.etag).send(r);
  });

  app.put('/api/settings/alerts', { schema: { body: BODIES.alerts }, ...route }, async (req, reply) => {
    const body = bodyOf<{ kinds?: Record<string, boolean>; channels?: Record<string, unknown>; thresholds?: Record<string, unknown> }>(req, (segs) => ['alerts', ...segs]);
    const edits: SettingEdit[] = [
      ...editsOf(['alerts', 'kinds'], body.kinds ?? {}),
      ...editsOf(['alerts', 'channels'], body.channels ?? {}),
      // A list is one value: replaced whole.
      ...Object.entries(body.thresholds ?? {}).map(([k, v]) => ({ path: ['alerts', 'thresholds', k], value: v === null ? undefined : v })),
    ];
    const r = write(req, edits, req.log);
    return reply.header('etag', r.etag).send(r);
  });

  app.put('/api/settings/prices/:provider', { schema: { body: BODIES.prices }, ...route }, async (req, reply) => {
    const id = (req.params as { provider: string }).provider;
    const body = bodyOf<{ price?: Record<string, unknown> | null; models?: Record<string, Record<string, unknown> | null> }>(req, (segs) =>
      segs[0] === 'models' && segs.length > 1 ? ['providers', id, 'models', segs[1]!, 'price', ...segs.slice(2)] : ['providers', id, ...segs]);
    const provider = own(config.current.providers, id);
    if (provider === undefined) throw new TollgateError('TOLLGATE_ERR_NOT_FOUND', `no provider '${id.slice(0, 100)}' in the config`, { param: 'provider' });
    const edits: SettingEdit[] = [];
    if (body.price === null) edits.push({ path: ['providers', id, 'price'], value: undefined });
    else if (body.price !== undefined) edits.push(...editsOf(['providers', id, 'price'], body.price));
    for (const [model, price] of Object.entries(body.models ?? {})) {
      if (own(provider.models, model) === undefined) {
        throw new TollgateError('TOLLGATE_ERR_NOT_FOUND', `provider '${id}' lists no model '${model.slice(0, 100)}'`, { param: `models.${model.slice(0, 100)}` });
      }
      if (price === null) edits.push({ path: ['providers', id, 'models', model, 'price'], value: undefined });
      else edits.push(...editsOf(['providers', id, 'models', model, 'price'], price));
    }
    const r = write(req, edits, req.log);
    return reply.header('etag', r.etag).send(r);
  });
};
