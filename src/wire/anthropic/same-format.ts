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
import { deleteNested, filterInPlace, isObj, objectAt, removeKeys, type Json, type SameFormat } from '../same-format.js';
import { errorBody } from './errors.js';
import { anthropicCodec } from './index.js';
import { ANTHROPIC_VERSION, anthropicFamily, anthropicThinking } from './request.js';
import { anthropicUsage } from './usage.js';

const MEDIA: Readonly<Record<string, string>> = { image: 'vision', document: 'pdf' };

/** Keeps the blocks `caps` allow; the type of each block removed goes to `removed`. */
function keepBlock(caps: ReadonlySet<string>, removed: string[]) {
  const keep = (b: unknown): boolean => {
    if (!isObj(b) || typeof b.type !== 'string') return true;
    const cap = MEDIA[b.type];
    if (cap !== undefined && !caps.has(cap)) {
      removed.push(b.type);
      return false;
    }
    if (b.type === 'tool_result' && Array.isArray(b.content)) filterInPlace(b.content, keep);
    return true;
  };
  return keep;
}

function applyThinking(body: Json, level: ThinkingLevel, model: ModelConfig | null): string[] {
  if (model === null || !model.capabilities.includes('reasoning')) return ['thinking'];
  const choice = body.tool_choice;
  // A forced tool and thinking do not go together: the level is left out (listed), the tool choice kept.
  if (Array.isArray(body.tools) && body.tools.length > 0 && isObj(choice) && (choice.type === 'any' || choice.type === 'tool')) return ['thinking'];
  const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : (model.max_output_tokens ?? 4096);
  const think = anthropicThinking(level, { maxTokens, family: anthropicFamily(model), model });
  if (think === null) return ['thinking'];
  body.thinking = think.thinking;
  if (think.effort !== undefined) objectAt(body, 'output_config').effort = think.effort;
  else deleteNested(body, 'output_config', 'effort');
  if (think.thinking.type === 'disabled') return [];
  // With thinking on, Anthropic refuses temperature other than 1, top_k, and top_p below 0.95.
  const removed: string[] = [];
  if (body.temperature !== undefined && body.temperature !== 1) removeKeys(body, ['temperature'], removed);
  removeKeys(body, ['top_k'], removed);
  if (typeof body.top_p === 'number' && body.top_p < 0.95) removeKeys(body, ['top_p'], removed);
  return removed;
}

function stripExcluded(body: Json, caps: ReadonlySet<string>): string[] {
  const removed: string[] = [];
  if (!caps.has('tools')) removeKeys(body, ['tools', 'tool_choice'], removed);
  if (!caps.has('reasoning')) {
    removeKeys(body, ['thinking'], removed);
    if (deleteNested(body, 'output_config', 'effort')) removed.push('output_config.effort');
  }
  if (!caps.has('structured_output')) {
    if (deleteNested(body, 'output_config', 'format')) removed.push('output_config.format');
    removeKeys(body, ['output_format'], removed);
  }
  if (caps.has('vision') && caps.has('pdf')) return removed;
  const keep = keepBlock(caps, removed);
  if (Array.isArray(body.system)) filterInPlace(body.system, keep);
  for (const m of Array.isArray(body.messages) ? body.messages : []) if (isObj(m) && Array.isArray(m.content)) filterInPlace(m.content, keep);
  return removed;
}

export const anthropicSameFormat: SameFormat = {
  codec: anthropicCodec,
  // Anthropic's base_url has no /v1 (https://api.anthropic.com).
  expectsEventStream: (call) => call.stream,
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
