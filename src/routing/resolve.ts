// Model resolution: `<provider_prefix>/<model_id>`, split on the first '/', so model ids may contain '/'.

import type { Config, ModelConfig, ProviderConfig } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import type { Connection } from '../config/connections.js';
import { own } from '../core/own.js';
import { splitModelSpec } from '../config/model-spec.js';

export interface Route {
  /** Provider prefix. */
  readonly providerId: string;
  readonly provider: ProviderConfig;
  /** The id sent upstream. */
  readonly modelId: string;
  /** `<prefix>/<model_id>` as routed. */
  readonly model: string;
  /** The model's config when it is listed; null for an unlisted model on a provider that allows them. */
  readonly modelConfig: ModelConfig | null;
  /** The connection a call goes out on, once chosen (`provider` is then that connection's row). */
  readonly connection?: Connection;
}

export function resolveModel(cfg: Config, requested: string): Route {
  const spec = splitModelSpec(requested);
  const providerId = spec?.provider ?? '';
  const modelId = spec?.modelId ?? '';
  const provider = providerId ? own(cfg.providers, providerId) : undefined;
  const notFound = () =>
    new TollgateError('TOLLGATE_ERR_MODEL_NOT_FOUND', `model '${requested.slice(0, 200)}' is not configured; GET /v1/models lists the models`, { param: 'model' });
  if (!provider || !modelId) throw notFound();
  const modelConfig = own(provider.models, modelId) ?? null;
  if (!modelConfig && !provider.allow_unlisted_models) throw notFound();
  return { providerId, provider, modelId, model: `${providerId}/${modelId}`, modelConfig };
}

/** Every configured `<prefix>/<model_id>`, in config order. */
export function listModels(cfg: Config): { id: string; provider: string; config: ModelConfig }[] {
  const out: { id: string; provider: string; config: ModelConfig }[] = [];
  for (const [pid, p] of Object.entries(cfg.providers)) {
    for (const [mid, m] of Object.entries(p.models)) out.push({ id: `${pid}/${mid}`, provider: pid, config: m });
  }
  return out;
}
