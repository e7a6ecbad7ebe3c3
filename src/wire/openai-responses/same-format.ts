// OpenAI Responses to an `openai-responses` provider, passed through (src/wire/same-format.ts). Everything the
// client sent reaches the upstream (prompt_cache_key, include, store, built-in and custom tools, fields added
// later); only these change:
// - model: the provider's model id; max_output_tokens: lowered to the model's max_output_tokens when configured;
// - a `(level)` suffix: `reasoning.effort` through the shared `openai` family mapping;
// - capabilities the model's config excludes: tools, tool_choice and parallel_tool_calls; input_image / input_file /
//   input_audio parts; `reasoning` and the `reasoning.encrypted_content` include; a json_schema text format
//   becomes json_object.

import { formatFrame } from '../sse.js';
import { applyThinking } from '../thinking.js';
import { apiKeyHeaders, endpointPath } from '../endpoint.js';
import { filterInPlace, isObj, objectAt, removeKeys, type Json, type SameFormat } from '../same-format.js';
import { responsesCodec } from './index.js';
import { responseObject } from './response.js';
import { responsesUsage } from './usage.js';

const MEDIA: Readonly<Record<string, string>> = { input_image: 'vision', input_file: 'pdf', input_audio: 'audio' };

/** Keeps the parts `caps` allow; the type of each part removed goes to `removed`. */
function keepPart(caps: ReadonlySet<string>, removed: string[]) {
  return (p: unknown): boolean => {
    const cap = isObj(p) && typeof p.type === 'string' ? MEDIA[p.type] : undefined;
    if (cap === undefined || caps.has(cap)) return true;
    removed.push((p as Json).type as string);
    return false;
  };
}

function stripExcluded(body: Json, caps: ReadonlySet<string>): string[] {
  const removed: string[] = [];
  if (!caps.has('tools')) removeKeys(body, ['tools', 'tool_choice', 'parallel_tool_calls'], removed);
  if (!caps.has('reasoning')) {
    removeKeys(body, ['reasoning'], removed);
    if (Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content')) {
      filterInPlace(body.include, (v) => v !== 'reasoning.encrypted_content');
      if (body.include.length === 0) delete body.include;
      removed.push('include.reasoning.encrypted_content');
    }
  }
  if (!caps.has('structured_output') && isObj(body.text) && isObj(body.text.format) && body.text.format.type === 'json_schema') {
    body.text.format = { type: 'json_object' };
    removed.push('text.format');
  }
  if (caps.has('vision') && caps.has('pdf') && caps.has('audio')) return removed;
  const keep = keepPart(caps, removed);
  for (const item of Array.isArray(body.input) ? body.input : []) {
    if (!isObj(item)) continue;
    if (Array.isArray(item.content)) filterInPlace(item.content, keep);
    if (item.type === 'function_call_output' && Array.isArray(item.output)) filterInPlace(item.output, keep);
  }
  return removed;
}

export const responsesSameFormat: SameFormat = {
  codec: responsesCodec,
  expectsEventStream: (call) => call.stream,
  upstreamPath: (p) => endpointPath(p, '/responses', '/v1'),
  defaultHeaders: {},
  authHeaders: apiKeyHeaders,
  setModel(body, modelId) {
    body.model = modelId;
  },
  getMaxTokens: (body) => (typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined),
  setMaxTokens(body, n) {
    body.max_output_tokens = n;
  },
  applyThinking(body, level, model) {
    const maxTokens = typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined;
    const effort = applyThinking('openai', level, model, maxTokens).effort;
    if (effort === undefined) return ['reasoning.effort'];
    objectAt(body, 'reasoning').effort = effort;
    return [];
  },
  stripExcluded,
  usageOf: (json) => (isObj(json) ? responsesUsage(json.usage, json.output, json.service_tier) : null),
  // As the translated path ends a Responses stream that cannot finish: response.failed (numbered after the events
  // that went by), then one data: [DONE].
  terminalError(code, message, seen) {
    const response = responseObject({ id: seen.id ?? '', model: seen.model ?? '', status: 'failed', output: [], usage: null, error: { code, message } });
    return `${formatFrame(JSON.stringify({ type: 'response.failed', sequence_number: seen.events, response }), 'response.failed')}data: [DONE]\n\n`;
  },
};
