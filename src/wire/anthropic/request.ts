// Anthropic Messages requests: a client body -> CanonicalRequest (inbound), CanonicalRequest -> upstream request
// (outbound).
//
// Parsing keeps: model, max_tokens, system (string or text blocks), messages, tools (custom tools only: server and
// Anthropic-defined tools such as web_search_*, bash_*, text_editor_* have no canonical form and are skipped without
// error), tool_choice (any = required; disable_parallel_tool_use -> parallelToolCalls false), stop_sequences,
// temperature, top_p, top_k, metadata.user_id -> user, stream, thinking (enabled -> budget, disabled -> none,
// adaptive -> the output_config.effort level or 'auto'), output_config.format (and the older beta output_format)
// -> a json_schema response format named 'output'. A message with role 'system' adds its text to the system parts.
// Dropped: cache_control everywhere, service_tier, container, context_management, mcp_servers, inference_geo.
// (Only when translating: an Anthropic client to an Anthropic provider is passed through whole, same-format.ts.)
//
// Building follows the API's rules: roles alternate (consecutive same-role turns are merged, tool results first in
// a user turn), max_tokens is always sent, thinking is only sent to a model whose config has the `reasoning`
// capability, and sampling parameters thinking forbids are removed (see buildRequest).

import { endpointPath } from '../endpoint.js';
import { applyThinking, parseThinkingSuffix } from '../thinking.js';
import type { ModelConfig, ProviderConfig } from '../../config/types.js';
import type { CanonicalRequest, Message, Part, ThinkingLevel, ToolChoice, ToolDefinition } from '../canonical.js';
import type { Target } from '../codec.js';
import type { UpstreamRequest } from '../types.js';
import { buildBlock, parseBlocks, type AnthropicRole, type ToolNames } from './content.js';
import { invalid, isObj, str, type Json } from './json.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export const ANTHROPIC_VERSION = '2023-06-01';

// ---------------------------------------------------------------------------------------------------- parse

const EFFORTS = new Set(['low', 'medium', 'high', 'xhigh', 'max']);

function optNumber(body: Json, key: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) invalid(`${key} must be a number`, key);
  return v;
}

function parseSystem(raw: unknown, names: ToolNames): Part[] {
  if (raw === undefined || raw === null || raw === '') return [];
  return parseBlocks(raw, 'system', names).filter((p) => p.type === 'text');
}

function parseTools(raw: unknown): ToolDefinition[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) invalid('tools must be an array', 'tools');
  const tools: ToolDefinition[] = [];
  raw.forEach((t, i) => {
    if (!isObj(t)) invalid(`tools[${i}] must be an object`, `tools[${i}]`);
    // A custom tool has an input_schema and no type (or type 'custom'); anything else is a server tool.
    if ((t.type !== undefined && t.type !== null && t.type !== 'custom') || !isObj(t.input_schema)) return;
    const name = str(t.name);
    if (name === undefined) invalid(`tools[${i}].name must be a string`, `tools[${i}].name`);
    const description = str(t.description);
    tools.push({
      name,
      ...(description === undefined ? {} : { description }),
      parameters: t.input_schema,
      ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}),
    });
  });
  return tools;
}

function parseToolChoice(raw: unknown): { toolChoice?: ToolChoice; parallelToolCalls?: boolean } {
  if (raw === undefined || raw === null) return {};
  if (!isObj(raw)) invalid('tool_choice must be an object', 'tool_choice');
  const parallel = raw.disable_parallel_tool_use === true ? { parallelToolCalls: false } : {};
  switch (raw.type) {
    case 'auto':
      return { toolChoice: { type: 'auto' }, ...parallel };
    case 'any':
      return { toolChoice: { type: 'required' }, ...parallel };
    case 'none':
      return { toolChoice: { type: 'none' } };
    case 'tool': {
      const name = str(raw.name);
      if (name === undefined) invalid('tool_choice.name must be a string when tool_choice.type is tool', 'tool_choice.name');
      return { toolChoice: { type: 'tool', name }, ...parallel };
    }
    default:
      return invalid('tool_choice.type must be one of auto, any, tool, none', 'tool_choice.type');
  }
}

function parseThinking(raw: unknown, effort: unknown): { thinking?: ThinkingLevel; includeReasoning?: boolean } {
  const level = typeof effort === 'string' && EFFORTS.has(effort) ? (effort as 'low' | 'medium' | 'high' | 'xhigh' | 'max') : undefined;
  if (isObj(raw)) {
    const shown = raw.display === 'omitted' ? {} : { includeReasoning: true };
    if (raw.type === 'disabled') return { thinking: { kind: 'level', level: 'none' } };
    if (raw.type === 'enabled') {
      const b = raw.budget_tokens;
      if (typeof b !== 'number' || !Number.isInteger(b) || b < 1) invalid('thinking.budget_tokens must be a positive integer', 'thinking.budget_tokens');
      return { thinking: { kind: 'budget', tokens: b }, ...shown };
    }
    if (raw.type === 'adaptive') return { thinking: { kind: 'level', level: level ?? 'auto' }, ...shown };
  } else if (raw !== undefined && raw !== null) {
    invalid('thinking must be an object', 'thinking');
  }
  // output_config.effort alone still says how hard the model should work.
  return level === undefined ? {} : { thinking: { kind: 'level', level } };
}

export function parseRequest(body: unknown): CanonicalRequest {
  if (!isObj(body)) invalid('request body must be a JSON object', 'body');
  const named = str(body.model);
  if (named === undefined || named === '') invalid('model must be a non-empty string', 'model');
  // The `(level)` suffix is removed here, like every codec does, and wins over the body's own thinking settings.
  const { model, thinking: suffix } = parseThinkingSuffix(named);
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) invalid('max_tokens is required and must be an integer >= 1', 'max_tokens');
  if (!Array.isArray(body.messages)) invalid('messages is required and must be an array', 'messages');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') invalid('stream must be a boolean', 'stream');

  const names: ToolNames = new Map();
  const system = parseSystem(body.system, names);
  const messages: Message[] = [];
  body.messages.forEach((m, i) => {
    if (!isObj(m)) invalid(`messages[${i}] must be an object`, `messages[${i}]`);
    const content = parseBlocks(m.content, `messages[${i}].content`, names);
    if (m.role === 'system') system.push(...content.filter((p) => p.type === 'text'));
    else if (m.role === 'user' || m.role === 'assistant') messages.push({ role: m.role, content });
    else invalid(`messages[${i}].role must be user or assistant`, `messages[${i}].role`);
  });

  const out: Mutable<CanonicalRequest> = { model, system, messages, maxTokens, stream: body.stream === true };
  const tools = parseTools(body.tools);
  if (tools !== undefined) out.tools = tools;
  Object.assign(out, parseToolChoice(body.tool_choice));
  const temperature = optNumber(body, 'temperature');
  if (temperature !== undefined) out.temperature = temperature;
  const topP = optNumber(body, 'top_p');
  if (topP !== undefined) out.topP = topP;
  const topK = optNumber(body, 'top_k');
  if (topK !== undefined) out.topK = topK;
  if (body.stop_sequences !== undefined && body.stop_sequences !== null) {
    if (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every((s) => typeof s === 'string')) invalid('stop_sequences must be an array of strings', 'stop_sequences');
    out.stop = body.stop_sequences as string[];
  }
  if (isObj(body.metadata) && typeof body.metadata.user_id === 'string') out.user = body.metadata.user_id;
  const outputConfig = isObj(body.output_config) ? body.output_config : {};
  Object.assign(out, parseThinking(body.thinking, outputConfig.effort));
  if (suffix !== undefined) out.thinking = suffix;
  const format = isObj(outputConfig.format) ? outputConfig.format : isObj(body.output_format) ? body.output_format : undefined;
  if (format?.type === 'json_schema' && isObj(format.schema)) out.responseFormat = { type: 'json_schema', name: 'output', schema: format.schema };
  return out;
}

// ---------------------------------------------------------------------------------------------------- build

/** max_tokens when the canonical request has none (Anthropic requires it): the model's configured
 * max_output_tokens if set, else 4096 — enough for a normal answer, and accepted by every current Claude model. */
export const DEFAULT_MAX_TOKENS = 4096;

/** Anthropic's smallest thinking budget. */
export const MIN_THINKING_BUDGET = 1024;

/**
 * The `thinking` field (and output_config.effort) for a level, or null for none: the shared ten-family table
 * (applyThinking, docs/thinking.md) for `anthropic-budget`, or `anthropic-adaptive` for a model configured so.
 */
export function anthropicThinking(level: ThinkingLevel, maxTokens: number, adaptive: boolean, model: ModelConfig | null = null): { thinking: Json; effort?: string } | null {
  const p = adaptive ? applyThinking('anthropic-adaptive', level, model, maxTokens) : applyThinking('anthropic-budget', level, model, maxTokens);
  if (p.thinking === undefined) return null;
  const effort = 'output_config' in p ? p.output_config?.effort : undefined;
  return effort === undefined ? { thinking: { ...p.thinking } } : { thinking: { ...p.thinking }, effort };
}

/** Canonical messages as alternating Anthropic turns: parts placed by role, empty turns dropped, same-role turns merged. */
export function buildMessages(messages: readonly Message[]): Json[] {
  const turns: { role: AnthropicRole; blocks: Json[] }[] = [];
  for (const m of messages) {
    for (const p of m.content) {
      const b = buildBlock(p, m.role);
      if (b === null) continue;
      const last = turns.at(-1);
      if (last && last.role === b.role) last.blocks.push(b.block);
      else turns.push({ role: b.role, blocks: [b.block] });
    }
  }
  return turns.map((t) => ({
    role: t.role,
    // In a user turn, tool_result blocks must come before anything else.
    content: t.role === 'user' ? [...t.blocks.filter((b) => b.type === 'tool_result'), ...t.blocks.filter((b) => b.type !== 'tool_result')] : t.blocks,
  }));
}

function buildSystem(parts: readonly Part[]): string | Json[] | undefined {
  const texts = parts.flatMap((p) => (p.type === 'text' && p.text !== '' ? [p.text] : []));
  if (texts.length === 0) return undefined;
  return texts.length === 1 ? texts[0] : texts.map((text) => ({ type: 'text', text }));
}

function buildToolChoice(req: CanonicalRequest): Json | undefined {
  const noParallel = req.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  switch (req.toolChoice?.type) {
    case undefined:
      return req.parallelToolCalls === false ? { type: 'auto', ...noParallel } : undefined;
    case 'auto':
      return { type: 'auto', ...noParallel };
    case 'required':
      return { type: 'any', ...noParallel };
    case 'none':
      return { type: 'none' };
    case 'tool':
      return { type: 'tool', name: req.toolChoice.name, ...noParallel };
  }
}

function buildHeaders(p: ProviderConfig, stream: boolean): Record<string, string> {
  // Header names are lower-cased so a configured `Anthropic-Version` or `anthropic-beta` replaces, never duplicates.
  const h: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
  for (const [k, v] of Object.entries(p.headers)) h[k.toLowerCase()] = v;
  h['content-type'] = 'application/json';
  h.accept = stream ? 'text/event-stream' : 'application/json';
  if (p.auth.type !== 'none' && p.auth.key) {
    const header = (p.auth.header ?? 'x-api-key').toLowerCase();
    h[header] = header === 'authorization' ? `Bearer ${p.auth.key}` : p.auth.key;
  }
  return h;
}

/**
 * The upstream request. Decisions:
 * - max_tokens: the request's, else the model's max_output_tokens, else DEFAULT_MAX_TOKENS; never above the model's
 *   max_output_tokens when that is configured.
 * - thinking (see anthropicThinking) only when the model config lists `reasoning`, and not when tool_choice forces a
 *   tool (the API refuses thinking with forced tool use; the forced call is what the client's code depends on).
 *   With thinking on, temperature (unless 1) and top_k are removed and top_p is kept only within [0.95, 1], as the
 *   API requires.
 * - response format: json_schema goes to output_config.format, and a tool's `strict` is sent, only when the model
 *   config lists `structured_output`; otherwise (and always for json_object) it is dropped.
 * - seed, presence/frequency penalties and metadata other than the user id have no Anthropic field and are dropped;
 *   stop sequences that are only whitespace are dropped (the API rejects them).
 */
export function buildRequest(req: CanonicalRequest, target: Target): UpstreamRequest {
  const model = target.model;
  const cap = model?.max_output_tokens;
  const maxTokens = Math.min(req.maxTokens ?? cap ?? DEFAULT_MAX_TOKENS, cap ?? Infinity);
  const structured = model?.capabilities.includes('structured_output') === true;

  const body: Json = { model: target.modelId, max_tokens: maxTokens };
  const system = buildSystem(req.system);
  if (system !== undefined) body.system = system;
  body.messages = buildMessages(req.messages);
  const tools = req.tools ?? [];
  if (tools.length > 0) {
    body.tools = tools.map((t) => ({
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      // Anthropic requires an object schema; a tool without parameters gets the empty one.
      input_schema: t.parameters.type === undefined ? { type: 'object', properties: {}, ...t.parameters } : t.parameters,
      ...(structured && t.strict !== undefined ? { strict: t.strict } : {}),
    }));
    const choice = buildToolChoice(req);
    if (choice !== undefined) body.tool_choice = choice;
  }
  const stop = (req.stop ?? []).filter((s) => s.trim() !== '');
  if (stop.length > 0) body.stop_sequences = stop;

  const forced = tools.length > 0 && (req.toolChoice?.type === 'required' || req.toolChoice?.type === 'tool');
  const think =
    req.thinking !== undefined && model?.capabilities.includes('reasoning') && !forced
      ? anthropicThinking(req.thinking, maxTokens, model.thinking === 'anthropic-adaptive', model)
      : null;
  // With thinking on, Anthropic refuses temperature other than 1, top_k, and top_p below 0.95.
  const on = think !== null && think.thinking.type !== 'disabled';
  if (req.temperature !== undefined && (!on || req.temperature === 1)) body.temperature = req.temperature;
  if (req.topP !== undefined && (!on || req.topP >= 0.95)) body.top_p = req.topP;
  if (req.topK !== undefined && !on) body.top_k = req.topK;
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  if (think !== null) body.thinking = think.thinking;
  const outputConfig: Json = {};
  if (think?.effort !== undefined) outputConfig.effort = think.effort;
  if (structured && req.responseFormat?.type === 'json_schema') outputConfig.format = { type: 'json_schema', schema: req.responseFormat.schema };
  if (Object.keys(outputConfig).length > 0) body.output_config = outputConfig;
  if (req.stream) body.stream = true;

  // Anthropic's base_url has no /v1 (https://api.anthropic.com).
  return { path: endpointPath(target.provider, '/v1/messages'), headers: buildHeaders(target.provider, req.stream), body };
}
