// Anthropic Messages to an Anthropic-format provider, passed through (src/wire/same-format.ts). Everything the
// client sent reaches the upstream (cache_control at every level, context_management, output_config, server tools,
// fields added later); only these change:
// - model: the provider's model id; max_tokens: lowered to the model's max_output_tokens when configured;
// - a `(level)` suffix: `thinking` (+ output_config.effort) as buildRequest makes it, for a model listed with the
//   `reasoning` capability and no forced tool, with the sampling parameters thinking forbids removed;
// - capabilities the model's config excludes: tools and tool_choice, image / document blocks, thinking and effort,
//   output_config.format (and the beta output_format).

import { formatFrame } from '../sse.js';
import type { ModelConfig, ProviderConfig } from '../../config/types.js';
import type { ThinkingLevel } from '../canonical.js';
import { endpointPath } from '../endpoint.js';
import { deleteNested, filterInPlace, isObj, objectAt, type Json, type SameFormat } from '../same-format.js';
import { errorBody } from './errors.js';
import { anthropicCodec } from './index.js';
import { ANTHROPIC_VERSION, anthropicFamily, anthropicThinking } from './request.js';
import { anthropicUsage } from './usage.js';

const MEDIA: Readonly<Record<string, string>> = { image: 'vision', document: 'pdf' };

function keepBlock(caps: ReadonlySet<string>) {
  return (b: unknown): boolean => {
    if (!isObj(b) || typeof b.type !== 'string') return true;
    const cap = MEDIA[b.type];
    if (cap !== undefined && !caps.has(cap)) return false;
    if (b.type === 'tool_result' && Array.isArray(b.content)) filterInPlace(b.content, keepBlock(caps));
    return true;
  };
}

function applyThinking(body: Json, level: ThinkingLevel, model: ModelConfig | null): void {
  if (model === null || !model.capabilities.includes('reasoning')) return;
  const choice = body.tool_choice;
  if (Array.isArray(body.tools) && body.tools.length > 0 && isObj(choice) && (choice.type === 'any' || choice.type === 'tool')) return;
  const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : (model.max_output_tokens ?? 4096);
  const think = anthropicThinking(level, { maxTokens, family: anthropicFamily(model), model });
  if (think === null) return;
  body.thinking = think.thinking;
  if (think.effort !== undefined) objectAt(body, 'output_config').effort = think.effort;
  else deleteNested(body, 'output_config', 'effort');
  if (think.thinking.type === 'disabled') return;
  // With thinking on, Anthropic refuses temperature other than 1, top_k, and top_p below 0.95.
  if (body.temperature !== undefined && body.temperature !== 1) delete body.temperature;
  delete body.top_k;
  if (typeof body.top_p === 'number' && body.top_p < 0.95) delete body.top_p;
}

function stripExcluded(body: Json, caps: ReadonlySet<string>): void {
  if (!caps.has('tools')) {
    delete body.tools;
    delete body.tool_choice;
  }
  if (!caps.has('reasoning')) {
    delete body.thinking;
    deleteNested(body, 'output_config', 'effort');
  }
  if (!caps.has('structured_output')) {
    deleteNested(body, 'output_config', 'format');
    delete body.output_format;
  }
  if (caps.has('vision') && caps.has('pdf')) return;
  const keep = keepBlock(caps);
  if (Array.isArray(body.system)) filterInPlace(body.system, keep);
  for (const m of Array.isArray(body.messages) ? body.messages : []) if (isObj(m) && Array.isArray(m.content)) filterInPlace(m.content, keep);
}

export const anthropicSameFormat: SameFormat = {
  codec: anthropicCodec,
  // Anthropic's base_url has no /v1 (https://api.anthropic.com).
  upstreamPath: (p) => endpointPath(p, '/v1/messages'),
  defaultHeaders: { 'anthropic-version': ANTHROPIC_VERSION },
  authHeaders(p: ProviderConfig) {
    if (p.auth.type === 'none' || !p.auth.key) return {};
    const header = (p.auth.header ?? 'x-api-key').toLowerCase();
    return { [header]: header === 'authorization' ? `Bearer ${p.auth.key}` : p.auth.key };
  },
  setModel(body, modelId) {
    body.model = modelId;
  },
  getMaxTokens: (body) => (typeof body.max_tokens === 'number' ? body.max_tokens : undefined),
  setMaxTokens(body, n) {
    body.max_tokens = n;
  },
  applyThinking,
  stripExcluded,
  usageOf: (json) => (isObj(json) ? anthropicUsage(json.usage) : null),
  terminalError: (code, message) => formatFrame(JSON.stringify(errorBody(code, message)), 'error'),
};
