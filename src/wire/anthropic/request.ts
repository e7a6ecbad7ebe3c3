// Anthropic Messages requests: a client body -> CanonicalRequest (inbound), CanonicalRequest -> upstream request
// (outbound).
//
// Parsing keeps: model, max_tokens, system (string or text blocks), messages, cache_control markers (system
// blocks, content blocks, custom tools), tools (custom tools, and the web_search_* server tool as the built-in web
// search; other server and Anthropic-defined tools such as bash_*, text_editor_*, code_execution_* have no
// canonical form and are listed as dropped, `tools.<type>`), tool_choice (any = required; disable_parallel_tool_use
// -> parallelToolCalls false; naming the web search tool forces the built-in search; naming another server tool is
// a 400), stop_sequences, temperature, top_p, top_k, metadata.user_id -> user, service_tier, stream, thinking
// (enabled -> budget, disabled -> none, adaptive -> the output_config.effort level or 'auto'), output_config.format
// (and the older beta output_format) -> a json_schema response format named 'output'. A message with role 'system'
// adds its text to the system parts. Listed as dropped (`unmapped`): every other top-level key (container,
// context_management, mcp_servers, inference_geo, ...), and the blocks and block fields content.ts cannot carry.
// (Only when translating: an Anthropic client to an Anthropic provider is passed through whole, same-format.ts.)
//
// Building follows the API's rules: roles alternate (consecutive same-role turns are merged, tool results first in
// a user turn), max_tokens is always sent, thinking is only sent to a model whose config has the `reasoning`
// capability, and sampling parameters thinking forbids are removed (see buildRequest).

import { endpointPath } from '../endpoint.js';
import { applyThinking, parseThinkingSuffix } from '../thinking.js';
import type { ModelConfig, ProviderConfig } from '../../config/types.js';
import { TollgateError } from '../../core/errors.js';
import type { BuiltinTool, CanonicalRequest, Message, Part, ThinkingLevel, ToolChoice, ToolDefinition } from '../canonical.js';
import { anyPart, BuildNotes, cacheControlJson, noteChoices, parseCacheControl, unknownKeys, withoutForeignFiles } from '../fields.js';
import type { BuiltRequest, Target } from '../codec.js';
import { buildBlock, parseBlocks, unsignedToolTurn, type AnthropicRole, type BlockContext } from './content.js';
import { invalid, isObj, str, type Json } from './json.js';
import { putSampling } from './sampling.js';

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

function parseSystem(raw: unknown, blocks: BlockContext): Part[] {
  if (raw === undefined || raw === null || raw === '') return [];
  return parseBlocks(raw, 'system', blocks).filter((p) => p.type === 'text');
}

/** The server tool Anthropic runs for web search (every dated version), and the one the gateway sends. */
const isWebSearch = (type: unknown): boolean => typeof type === 'string' && /^web_search_\d{8}$/.test(type);
export const WEB_SEARCH_TOOL = { type: 'web_search_20250305', name: 'web_search' } as const;

interface ParsedTools {
  readonly custom?: ToolDefinition[];
  readonly builtin: BuiltinTool[];
  /** The names of the server tools, by whether they are the web search. */
  readonly serverNames: ReadonlyMap<string, boolean>;
  readonly unmapped: string[];
}

function parseTools(raw: unknown): ParsedTools {
  const builtin: BuiltinTool[] = [];
  const serverNames = new Map<string, boolean>();
  const unmapped: string[] = [];
  if (raw === undefined || raw === null) return { builtin, serverNames, unmapped };
  if (!Array.isArray(raw)) invalid('tools must be an array', 'tools');
  const tools: ToolDefinition[] = [];
  raw.forEach((t, i) => {
    if (!isObj(t)) invalid(`tools[${i}] must be an object`, `tools[${i}]`);
    // A custom tool has an input_schema and no type (or type 'custom'); anything else is a server tool.
    if ((t.type !== undefined && t.type !== null && t.type !== 'custom') || !isObj(t.input_schema)) {
      const search = isWebSearch(t.type);
      if (typeof t.name === 'string') serverNames.set(t.name, search);
      if (search && builtin.length === 0) builtin.push({ type: 'web_search' });
      else if (!search) unmapped.push(`tools.${String(t.type)}`);
      return;
    }
    const name = str(t.name);
    if (name === undefined) invalid(`tools[${i}].name must be a string`, `tools[${i}].name`);
    const description = str(t.description);
    const cacheControl = parseCacheControl(t.cache_control, `tools[${i}].cache_control`);
    tools.push({
      name,
      ...(description === undefined ? {} : { description }),
      parameters: t.input_schema,
      ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}),
      ...(cacheControl === undefined ? {} : { cacheControl }),
    });
  });
  return { custom: tools, builtin, serverNames, unmapped };
}

/** Every top-level key parseRequest reads; any other key the client sets is listed as dropped. */
const KNOWN_KEYS: ReadonlySet<string> = new Set([
  'model', 'max_tokens', 'messages', 'system', 'stream', 'tools', 'tool_choice', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'metadata',
  'thinking', 'output_config', 'output_format', 'service_tier',
]);

function parseToolChoice(raw: unknown, serverNames: ReadonlyMap<string, boolean>): { toolChoice?: ToolChoice; parallelToolCalls?: boolean } {
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
      const server = serverNames.get(name);
      if (server === true) return { toolChoice: { type: 'builtin', tool: 'web_search' }, ...parallel };
      if (server === false) {
        throw new TollgateError('TOLLGATE_ERR_NOT_SUPPORTED', `tool_choice forces the server tool '${name}', which cannot be carried to another provider format`, { param: 'tool_choice' });
      }
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

  const blocks: BlockContext = { names: new Map(), unmapped: new Set() };
  const system = parseSystem(body.system, blocks);
  const messages: Message[] = [];
  body.messages.forEach((m, i) => {
    if (!isObj(m)) invalid(`messages[${i}] must be an object`, `messages[${i}]`);
    const content = parseBlocks(m.content, `messages[${i}].content`, blocks);
    if (m.role === 'system') system.push(...content.filter((p) => p.type === 'text'));
    else if (m.role === 'user' || m.role === 'assistant') messages.push({ role: m.role, content });
    else invalid(`messages[${i}].role must be user or assistant`, `messages[${i}].role`);
  });

  const out: Mutable<CanonicalRequest> = { model, system, messages, maxTokens, stream: body.stream === true };
  const tools = parseTools(body.tools);
  if (tools.custom !== undefined) out.tools = tools.custom;
  if (tools.builtin.length > 0) out.builtinTools = tools.builtin;
  Object.assign(out, parseToolChoice(body.tool_choice, tools.serverNames));
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
  const serviceTier = str(body.service_tier);
  if (serviceTier !== undefined) out.serviceTier = serviceTier;
  const unmapped = [...unknownKeys(body, KNOWN_KEYS), ...tools.unmapped, ...blocks.unmapped];
  if (unmapped.length > 0) out.unmapped = unmapped;
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
export function anthropicThinking(
  level: ThinkingLevel, opts: { readonly maxTokens: number | undefined; readonly family: 'anthropic-budget' | 'anthropic-adaptive'; readonly model?: ModelConfig | null },
): { thinking: Json; effort?: string } | null {
  const p = applyThinking(opts.family, level, opts.model ?? null, opts.maxTokens);
  if (p.thinking === undefined) return null;
  const effort = 'output_config' in p ? p.output_config?.effort : undefined;
  return effort === undefined ? { thinking: { ...p.thinking } } : { thinking: { ...p.thinking }, effort };
}

/** The Anthropic thinking family a model is configured for (adaptive, or a token budget). */
export function anthropicFamily(model: ModelConfig): 'anthropic-budget' | 'anthropic-adaptive' {
  return model.thinking === 'anthropic-adaptive' ? 'anthropic-adaptive' : 'anthropic-budget';
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

/** System text as one string, or as text blocks when there are several or one carries a cache_control marker. */
function buildSystem(parts: readonly Part[]): string | Json[] | undefined {
  const texts = parts.flatMap((p) => (p.type === 'text' && p.text !== '' ? [p] : []));
  if (texts.length === 0) return undefined;
  if (texts.length === 1 && texts[0]!.cacheControl === undefined) return texts[0]!.text;
  return texts.map((p) => (p.cacheControl === undefined ? { type: 'text', text: p.text } : { type: 'text', text: p.text, cache_control: cacheControlJson(p.cacheControl) }));
}

/** The tool a response format travels as when the model has no structured output: its call is the answer. */
export const ANSWER_TOOL = 'json_response';

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
    case 'builtin':
      return { type: 'tool', name: WEB_SEARCH_TOOL.name, ...noParallel };
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
 * - max_tokens: the request's, else the model's max_output_tokens, else DEFAULT_MAX_TOKENS on top of the thinking
 *   budget sent (docs/thinking.md's budgets need no max_tokens); never above the model's max_output_tokens if set.
 * - thinking (see anthropicThinking) only when the model config lists `reasoning`, and not when tool_choice forces a
 *   tool (the API refuses thinking with forced tool use; the forced call is what the client's code depends on), nor
 *   when the last assistant turn calls a tool without a thinking block first (unsignedToolTurn). A level that is not
 *   sent (no `reasoning`, an unlisted model, a forced tool or such a turn, max_tokens leaving no room for the
 *   smallest budget) is listed as dropped. A temperature above 1 goes as 1 (Anthropic's range is 0..1); with thinking
 *   on, temperature (unless 1) and top_k are removed and top_p is kept only within [0.95, 1] (putSampling).
 * - response format: json_schema goes to output_config.format, and a tool's `strict` is sent, only when the model
 *   config lists `structured_output` (else a `strict: true` is listed as dropped). Otherwise a json_schema (with an
 *   object schema) or json_object format, on a request without tools of its own, becomes a forced tool
 *   `json_response` whose input schema is the format's schema; the call's arguments are the answer's text
 *   (`answerTool`). Any other format is dropped and listed.
 * - cache_control markers go on the system blocks, content blocks and tools that carried them.
 * - the built-in web search is the web_search_20250305 server tool (named web_search; forcing it names it).
 * - service_tier: `auto` and `standard_only` are sent; OpenAI's other tiers are dropped.
 * - Dropped and listed (BuildNotes): seed, presence/frequency penalties, logit_bias, logprobs, prediction,
 *   prompt_cache_key, metadata other than the user id (metadata.user_id), audio parts, an image's detail level (low
 *   or high), another family's file ids (withoutForeignFiles), stop sequences that are only whitespace (the API
 *   rejects them). n > 1 is refused: an Anthropic answer is one answer.
 */
export function buildRequest(asked: CanonicalRequest, target: Target): BuiltRequest {
  const notes = new BuildNotes();
  const req = withoutForeignFiles(asked, 'anthropic', notes);
  noteChoices(req, notes, 'an Anthropic', false);
  const model = target.model;
  const cap = model?.max_output_tokens;
  const maxTokens = Math.min(req.maxTokens ?? cap ?? DEFAULT_MAX_TOKENS, cap ?? Infinity);
  const structured = model?.capabilities.includes('structured_output') === true;

  const body: Json = { model: target.modelId, max_tokens: maxTokens };
  const system = buildSystem(req.system);
  if (system !== undefined) body.system = system;
  const messages = (body.messages = buildMessages(req.messages));
  if (anyPart(req, (p) => p.type === 'audio')) notes.drop('audio');
  // Anthropic has no detail level: low or high is lost (auto is what every image gets).
  if (anyPart(req, (p) => p.type === 'image' && (p.detail === 'low' || p.detail === 'high'))) notes.drop('imageDetail');

  const format = req.responseFormat;
  const tools = req.tools ?? [];
  const builtin = req.builtinTools ?? [];
  const formatSchema = format?.type === 'json_schema' ? format.schema : format?.type === 'json_object' ? { type: 'object' } : undefined;
  const answerTool = formatSchema !== undefined && !(structured && format?.type === 'json_schema') && tools.length === 0 && builtin.length === 0 && formatSchema.type === 'object';
  const toolBlocks: Json[] = tools.map((t) => ({
    name: t.name,
    ...(t.description === undefined ? {} : { description: t.description }),
    // Anthropic requires an object schema; a tool without parameters gets the empty one.
    input_schema: t.parameters.type === undefined ? { type: 'object', properties: {}, ...t.parameters } : t.parameters,
    ...(structured && t.strict !== undefined ? { strict: t.strict } : {}),
    ...(t.cacheControl === undefined ? {} : { cache_control: cacheControlJson(t.cacheControl) }),
  }));
  if (builtin.length > 0) toolBlocks.push({ ...WEB_SEARCH_TOOL });
  if (answerTool) {
    toolBlocks.push({ name: ANSWER_TOOL, description: 'Give the answer as the input of this tool, in the JSON form its schema describes.', input_schema: formatSchema });
    body.tool_choice = { type: 'tool', name: ANSWER_TOOL };
  } else if (toolBlocks.length > 0) {
    const choice = buildToolChoice(req);
    if (choice !== undefined) body.tool_choice = choice;
  }
  if (toolBlocks.length > 0) body.tools = toolBlocks;
  if (!structured && tools.some((t) => t.strict === true)) notes.drop('toolStrict');
  if (format !== undefined && format.type !== 'text' && !answerTool && !(structured && format.type === 'json_schema')) notes.drop('responseFormat');

  const stop = (req.stop ?? []).filter((s) => s.trim() !== '');
  if (stop.length > 0) body.stop_sequences = stop;
  if (stop.length < (req.stop ?? []).length) notes.drop('stop');

  const forced = answerTool || (toolBlocks.length > 0 && (req.toolChoice?.type === 'required' || req.toolChoice?.type === 'tool' || req.toolChoice?.type === 'builtin'));
  const reasoning = req.thinking !== undefined && model?.capabilities.includes('reasoning') === true;
  const open = req.maxTokens === undefined && cap === undefined; // no limit from the client or the model: the budget's own
  let think = reasoning && !forced && model !== null ? anthropicThinking(req.thinking!, { maxTokens: open ? undefined : maxTokens, family: anthropicFamily(model), model }) : null;
  if (think !== null && think.thinking.type !== 'disabled' && unsignedToolTurn(messages)) think = null;
  if (open && think?.thinking.type === 'enabled') body.max_tokens = (think.thinking.budget_tokens as number) + DEFAULT_MAX_TOKENS;
  // A level not sent (a model without `reasoning` or unlisted, a forced tool, no room for a budget) is listed.
  if (req.thinking !== undefined && think === null) notes.drop('thinking');
  // A temperature above 1 is sent as 1; with thinking on, what Anthropic refuses is removed (sampling.ts).
  putSampling(body, req, { thinking: think !== null && think.thinking.type !== 'disabled', notes });
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  if (req.metadata !== undefined && Object.keys(req.metadata).some((k) => k !== 'user_id')) notes.drop('metadata');
  if (think !== null) body.thinking = think.thinking;
  const outputConfig: Json = {};
  if (think?.effort !== undefined) outputConfig.effort = think.effort;
  if (structured && format?.type === 'json_schema') outputConfig.format = { type: 'json_schema', schema: format.schema };
  if (Object.keys(outputConfig).length > 0) body.output_config = outputConfig;
  if (req.serviceTier !== undefined) {
    if (req.serviceTier === 'auto' || req.serviceTier === 'standard_only') body.service_tier = req.serviceTier;
    else notes.drop('serviceTier');
  }
  const unsupported = ['seed', 'presencePenalty', 'frequencyPenalty', 'logitBias', 'prediction', 'promptCacheKey'] as const;
  for (const f of unsupported) if (req[f] !== undefined) notes.drop(f);
  if (req.logprobs === true) notes.drop('logprobs');
  if (req.topLogprobs !== undefined) notes.drop('topLogprobs');
  if (req.stream) body.stream = true;

  const refused = notes.refusal;
  // Anthropic's base_url has no /v1 (https://api.anthropic.com).
  return {
    path: endpointPath(target.provider, '/v1/messages'),
    headers: buildHeaders(target.provider, req.stream),
    body,
    dropped: notes.dropped,
    ...(refused === undefined ? {} : { refused }),
    ...(answerTool ? { answerTool: ANSWER_TOOL } : {}),
  };
}
