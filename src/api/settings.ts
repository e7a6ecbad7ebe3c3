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
// result is a 400 naming the field and the file is untouched. If-Match: the ETag from GET, else 412. The bodies'
// schemas are compiled by the first request that needs them, not at start (core/lazy-validator.ts).

import type { FastifyBaseLogger, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ALERT_KINDS } from '../alerts/types.js';
import { applyEdits, dottedPath, envConflict, envFedPaths, readConfigFile, writeConfigFile, type SettingEdit } from '../config/edit.js';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/types.js';
import { applyConfig, type ConfigHolder } from '../config/watch.js';
import { TollgateError } from '../core/errors.js';
import { compileOnFirstUse } from '../core/lazy-validator.js';
import { own } from '../core/own.js';

export interface SettingsOptions {
  readonly config: ConfigHolder;
  /** The file the app runs from; without one the settings can be read but not written. */
  readonly configFile?: string;
}

const PRICE_KEYS = ['input', 'output', 'cached', 'cache_write', 'reasoning'] as const;
// null removes a key: every leaf allows it (else fastify's coercion would turn a null into false or 0).
const numberOrNull = { type: ['number', 'null'] };
const booleanOrNull = { type: ['boolean', 'null'] };
const priceBody = { type: 'object', additionalProperties: false, properties: Object.fromEntries(PRICE_KEYS.map((k) => [k, numberOrNull])) };
const percentList = { type: 'array', items: { type: 'number' } };
const channelSwitch = { type: 'object', additionalProperties: false, properties: { enabled: booleanOrNull } };

const BODIES = {
  budgets: {
    type: 'object', additionalProperties: false,
    properties: {
      daily_usd: numberOrNull, monthly_usd: numberOrNull, timezone: { type: ['string', 'null'] },
      auto_switch: { type: 'object', additionalProperties: false, properties: { enabled: booleanOrNull, to: { type: ['string', 'null'] } } },
    },
  },
  alerts: {
    type: 'object', additionalProperties: false,
    properties: {
      kinds: { type: 'object', additionalProperties: booleanOrNull },
      channels: { type: 'object', additionalProperties: false, properties: { dashboard: booleanOrNull, email: channelSwitch, webhook: channelSwitch } },
      thresholds: {
        type: 'object', additionalProperties: false,
        properties: { quota: percentList, daily: percentList, monthly: percentList, anomaly_multiple: numberOrNull },
      },
    },
  },
  prices: {
    type: 'object', additionalProperties: false,
    properties: { price: { anyOf: [priceBody, { type: 'null' }] }, models: { type: 'object', additionalProperties: { anyOf: [priceBody, { type: 'null' }] } } },
  },
} as const;

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
    const file = configFile === undefined ? null : readConfigFile(configFile);
    if (file !== null) reply.header('etag', file.etag);
    return {
      file: configFile ?? null,
      writable: file !== null,
      etag: file?.etag ?? null,
      env_fed: file === null ? [] : envFedPaths(file.text).filter(isSettingPath),
      ...settingsView(config.current),
    };
  });

  /** Apply `edits` to the file (see the header); answers the new settings. */
  const write = (req: FastifyRequest, edits: readonly SettingEdit[], log: FastifyBaseLogger) => {
    if (configFile === undefined) {
      throw new TollgateError('TOLLGATE_ERR_CONFIG_CONFLICT', 'this gateway runs without a config file (started by code, not `tollgate --config FILE`): its settings cannot be written');
    }
    const current = readConfigFile(configFile);
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && ifMatch !== '*' && !ifMatch.split(',').map((s) => s.trim()).includes(current.etag)) {
      throw new TollgateError('TOLLGATE_ERR_PRECONDITION_FAILED', `the config file changed since it was read (its ETag is ${current.etag}, not ${ifMatch}); read GET /api/settings again`);
    }
    const fed = envConflict(current.text, edits);
    if (fed !== null) {
      throw new TollgateError('TOLLGATE_ERR_CONFIG_CONFLICT', `${fed} is set from an environment variable in the config file; change the variable instead`, { param: fed });
    }
    const text = applyEdits(current.text, edits);
    let written;
    try {
      written = writeConfigFile(configFile, text);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const edited = new Set(edits.map((e) => dottedPath(e.path)));
      // The issue of a field this request set comes first; any other would be the file's own.
      const issue = err.issues.find((i) => edited.has(i.path) || [...edited].some((p) => i.path.startsWith(`${p}.`) || i.path.startsWith(`${p}[`))) ?? err.issues[0]!;
      throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `${issue.path}: ${issue.message}`, { param: issue.path });
    }
    applyConfig(config, written.config, { file: configFile, text, log });
    return { etag: written.etag, ...settingsView(written.config) };
  };

  app.put('/api/settings/budgets', { schema: { body: BODIES.budgets }, validatorCompiler: compileOnFirstUse }, async (req, reply) => {
    const r = write(req, editsOf(['budgets'], req.body as Record<string, unknown>), req.log);
    return reply.header('etag', r.etag).send(r);
  });

  app.put('/api/settings/alerts', { schema: { body: BODIES.alerts }, validatorCompiler: compileOnFirstUse }, async (req, reply) => {
    const body = req.body as { kinds?: Record<string, boolean>; channels?: Record<string, unknown>; thresholds?: Record<string, unknown> };
    const edits: SettingEdit[] = [
      ...editsOf(['alerts', 'kinds'], body.kinds ?? {}),
      ...editsOf(['alerts', 'channels'], body.channels ?? {}),
      // A list is one value: replaced whole.
      ...Object.entries(body.thresholds ?? {}).map(([k, v]) => ({ path: ['alerts', 'thresholds', k], value: v === null ? undefined : v })),
    ];
    const r = write(req, edits, req.log);
    return reply.header('etag', r.etag).send(r);
  });

  app.put('/api/settings/prices/:provider', { schema: { body: BODIES.prices }, validatorCompiler: compileOnFirstUse }, async (req, reply) => {
    const id = (req.params as { provider: string }).provider;
    const provider = own(config.current.providers, id);
    if (provider === undefined) throw new TollgateError('TOLLGATE_ERR_NOT_FOUND', `no provider '${id.slice(0, 100)}' in the config`, { param: 'provider' });
    const body = req.body as { price?: Record<string, unknown> | null; models?: Record<string, Record<string, unknown> | null> };
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
