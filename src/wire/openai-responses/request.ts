// Inbound: a client's `POST /v1/responses` body -> CanonicalRequest.
//
// Mapping (as the `openai` SDK v6 sends it):
// - `instructions` and `system` / `developer` messages -> `system`, in order (a mid-conversation developer message
//   loses its position: the canonical model has one system block).
// - `input` string -> one user message. Array items: messages (with or without `type: 'message'`), assistant
//   output messages, `function_call`, `function_call_output`, `reasoning`, and `custom_tool_call` /
//   `custom_tool_call_output` as a call (arguments `{"input": ...}`, marked custom) and its result. Consecutive
//   assistant-side items (reasoning, assistant messages, function calls) form one assistant message; consecutive function_call_output
//   items form one user message of tool results. Built-in tool items (web_search_call, ...) are skipped.
// - Stateful features cannot be honoured by a stateless gateway and are rejected with a clear message:
//   `previous_response_id`, `conversation`, and `item_reference` input items. `store` is dropped (the gateway
//   always sends `store: false` upstream).
// - `tools`: function tools, custom tools (as a function of one string `input`, src/wire/custom-tool.ts; a
//   `tool_choice` of type custom forces it), and web search (`web_search`, `web_search_preview` and their dated
//   forms) as the built-in web search; any other hosted tool (file_search, mcp, code_interpreter, ...) is listed as dropped
//   (`tools.<type>`). A tool whose `parameters` is null takes the empty object schema. `tool_choice` of
//   allowed_tools keeps only the named function tools (same effect, minus the prompt cache benefit); a hosted-tool
//   choice forcing web search forces the built-in web search; forcing another hosted tool is a 400 (the answer
//   would mean something else without it).
// - A `(level)` suffix on the model (spec item 8, src/wire/thinking.ts) is removed and becomes the thinking
//   level; it takes priority over `reasoning.effort`. `reasoning.effort` (none ... xhigh, max) -> thinking level;
//   `reasoning.summary` set -> includeReasoning.
// - Carried: prompt_cache_key, service_tier, top_logprobs with `include: ['message.output_text.logprobs']`
//   (logprobs), user / safety_identifier, metadata.
// - Listed as dropped (`unmapped`): every other top-level key (truncation, background, max_tool_calls, prompt,
//   ...), `store: true`, text.verbosity, and include values other than the logprobs and encrypted reasoning ones.
//   (Only when translating: a Responses client to a Responses provider is passed through whole, same-format.ts.)

import type { CanonicalRequest, Message, Part, ResponseFormat, ThinkingLevel, ToolChoice, ToolDefinition } from '../canonical.js';
import type { BuiltinTool } from '../canonical.js';
import { customCallPart, customTool, parseCustomFormat } from '../custom-tool.js';
import { unknownKeys } from '../fields.js';
import { parseThinkingSuffix } from '../thinking.js';
import { TollgateError } from '../../core/errors.js';
import { arr, invalid, isObj, type Json, reasoningPart, sourceFromUrl, str } from './shared.js';

/** The SDK's ReasoningEffort values. */
const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
type Effort = (typeof EFFORTS)[number];

interface MutableMessage {
  role: 'user' | 'assistant';
  content: Part[];
}

/** Collects messages, merging consecutive assistant-side items and consecutive tool results. */
class Conversation {
  readonly system: Part[] = [];
  readonly messages: MutableMessage[] = [];
  /** call_id -> function name, from the function_call items seen so far. */
  readonly callNames = new Map<string, string>();
  #merge: 'assistant' | 'tools' | null = null;

  user(parts: Part[]): void {
    this.#merge = null;
    if (parts.length > 0) this.messages.push({ role: 'user', content: parts });
  }

  assistant(parts: Part[]): void {
    if (parts.length === 0) return;
    if (this.#merge === 'assistant') this.messages.at(-1)!.content.push(...parts);
    else this.messages.push({ role: 'assistant', content: parts });
    this.#merge = 'assistant';
  }

  toolResult(part: Part): void {
    if (this.#merge === 'tools') this.messages.at(-1)!.content.push(part);
    else this.messages.push({ role: 'user', content: [part] });
    this.#merge = 'tools';
  }
}

function optNumber(body: Json, key: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) invalid(`\`${key}\` must be a number`, key);
  return v;
}

function imagePart(c: Json, path: string): Part {
  const detail = c.detail === 'low' || c.detail === 'high' || c.detail === 'auto' ? c.detail : undefined;
  const url = str(c.image_url);
  const fileId = str(c.file_id);
  const source = url !== undefined ? sourceFromUrl(url) : fileId !== undefined ? ({ kind: 'file_id', id: fileId, origin: 'openai-responses' } as const) : invalid('input_image needs `image_url` or `file_id`', path);
  return detail === undefined ? { type: 'image', source } : { type: 'image', source, detail };
}

function filePart(c: Json, path: string): Part {
  const filename = str(c.filename);
  const data = str(c.file_data);
  const url = str(c.file_url);
  const fileId = str(c.file_id);
  let source;
  if (data !== undefined) {
    const s = sourceFromUrl(data);
    // Bare base64 (no data: prefix): the media type comes from the file name, PDF being what the API reads.
    source = s.kind === 'base64' ? s : { kind: 'base64' as const, mediaType: filename?.toLowerCase().endsWith('.pdf') ? 'application/pdf' : 'application/octet-stream', data };
  } else if (url !== undefined) source = { kind: 'url' as const, url };
  else if (fileId !== undefined) source = { kind: 'file_id' as const, id: fileId, origin: 'openai-responses' as const };
  else invalid('input_file needs `file_data`, `file_url` or `file_id`', path);
  return filename === undefined ? { type: 'file', source } : { type: 'file', source, filename };
}

/** Message content or function_call_output output: a string or an array of content parts. */
function parseContent(content: unknown, path: string): Part[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) invalid('content must be a string or an array of content parts', path);
  const parts: Part[] = [];
  content.forEach((c: unknown, j) => {
    const p = `${path}[${j}]`;
    if (!isObj(c) || typeof c.type !== 'string') invalid('a content part must be an object with a `type`', p);
    switch (c.type) {
      case 'input_text':
      case 'output_text':
        if (typeof c.text !== 'string') invalid(`${c.type} needs a string \`text\``, `${p}.text`);
        parts.push({ type: 'text', text: c.text });
        break;
      case 'refusal':
        if (typeof c.refusal !== 'string') invalid('refusal needs a string `refusal`', `${p}.refusal`);
        parts.push({ type: 'text', text: c.refusal });
        break;
      case 'input_image':
        parts.push(imagePart(c, p));
        break;
      case 'input_file':
        parts.push(filePart(c, p));
        break;
      default:
        break; // a part type the canonical model has no place for
    }
  });
  return parts;
}

function parseInput(input: unknown, conv: Conversation): void {
  if (typeof input === 'string') {
    conv.user([{ type: 'text', text: input }]);
    return;
  }
  if (!Array.isArray(input)) invalid('`input` must be a string or an array of input items', 'input');
  input.forEach((item: unknown, i) => {
    const path = `input[${i}]`;
    if (!isObj(item)) invalid('an input item must be an object', path);
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = item.role;
        if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') invalid('`role` must be user, assistant, system or developer', `${path}.role`);
        const parts = parseContent(item.content, `${path}.content`);
        if (role === 'user') conv.user(parts);
        else if (role === 'assistant') conv.assistant(parts);
        else conv.system.push(...parts);
        break;
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string') invalid('function_call needs a string `call_id`', `${path}.call_id`);
        if (typeof item.name !== 'string') invalid('function_call needs a string `name`', `${path}.name`);
        const args = item.arguments ?? '';
        if (typeof args !== 'string') invalid('function_call `arguments` must be a JSON string', `${path}.arguments`);
        conv.assistant([{ type: 'tool_call', id: item.call_id, name: item.name, arguments: args }]);
        conv.callNames.set(item.call_id, item.name);
        break;
      }
      case 'custom_tool_call': {
        if (typeof item.call_id !== 'string') invalid('custom_tool_call needs a string `call_id`', `${path}.call_id`);
        if (typeof item.name !== 'string') invalid('custom_tool_call needs a string `name`', `${path}.name`);
        if (typeof item.input !== 'string') invalid('custom_tool_call needs a string `input`', `${path}.input`);
        conv.assistant([customCallPart(item.call_id, item.name, item.input)]);
        conv.callNames.set(item.call_id, item.name);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        if (typeof item.call_id !== 'string') invalid(`${String(type)} needs a string \`call_id\``, `${path}.call_id`);
        // function_call_output carries no name; the call it answers does (Gemini needs it on the result).
        const name = conv.callNames.get(item.call_id);
        const content = parseContent(item.output, `${path}.output`);
        conv.toolResult(name === undefined ? { type: 'tool_result', callId: item.call_id, content } : { type: 'tool_result', callId: item.call_id, name, content });
        break;
      }
      case 'reasoning': {
        const part = reasoningPart(item);
        if (part) conv.assistant([part]);
        break;
      }
      case 'item_reference':
        return invalid('item_reference points at an item stored by OpenAI; this gateway is stateless (it sends store: false upstream), so send the item itself', path);
      default:
        break; // built-in tool calls and outputs: no canonical place, skipped
    }
  });
}

/** The hosted tool types that are web search (the GA and preview names, dated or not). */
const isWebSearch = (type: unknown): boolean => typeof type === 'string' && /^web_search(_preview)?(_\d{4}_\d{2}_\d{2})?$/.test(type);

interface ParsedTools {
  readonly functions?: ToolDefinition[];
  readonly builtin: BuiltinTool[];
  /** Hosted tools with no canonical form, as `tools.<type>`. */
  readonly unmapped: string[];
}

function parseTools(body: Json): ParsedTools {
  const builtin: BuiltinTool[] = [];
  const unmapped: string[] = [];
  if (body.tools === undefined || body.tools === null) return { builtin, unmapped };
  if (!Array.isArray(body.tools)) invalid('`tools` must be an array', 'tools');
  const tools: ToolDefinition[] = [];
  body.tools.forEach((t: unknown, i) => {
    if (!isObj(t)) invalid('a tool must be an object', `tools[${i}]`);
    if (isWebSearch(t.type)) {
      if (builtin.length === 0) builtin.push({ type: 'web_search' });
      return;
    }
    if (t.type === 'custom') {
      if (typeof t.name !== 'string' || t.name === '') invalid('a custom tool needs a `name`', `tools[${i}].name`);
      tools.push(customTool(t.name, str(t.description), parseCustomFormat(t.format, `tools[${i}].format`, invalid)));
      return;
    }
    if (t.type !== 'function') {
      unmapped.push(`tools.${String(t.type)}`);
      return;
    }
    if (typeof t.name !== 'string' || t.name === '') invalid('a function tool needs a `name`', `tools[${i}].name`);
    if (t.parameters !== undefined && t.parameters !== null && !isObj(t.parameters)) invalid('`parameters` must be a JSON Schema object', `tools[${i}].parameters`);
    const tool: { -readonly [K in keyof ToolDefinition]: ToolDefinition[K] } = { name: t.name, parameters: isObj(t.parameters) ? t.parameters : { type: 'object', properties: {} } };
    if (typeof t.description === 'string') tool.description = t.description;
    if (typeof t.strict === 'boolean') tool.strict = t.strict;
    tools.push(tool);
  });
  return { functions: tools, builtin, unmapped };
}

function parseToolChoice(raw: unknown, tools: ToolDefinition[] | undefined): { choice?: ToolChoice; tools?: ToolDefinition[] } {
  if (raw === undefined || raw === null) return { tools };
  if (raw === 'auto' || raw === 'none' || raw === 'required') return { choice: { type: raw }, tools };
  if (!isObj(raw)) invalid('`tool_choice` must be auto, none, required or an object', 'tool_choice');
  if (raw.type === 'function' || raw.type === 'custom') {
    if (typeof raw.name !== 'string') invalid(`a ${raw.type} tool_choice needs a \`name\``, 'tool_choice.name');
    return { choice: { type: 'tool', name: raw.name }, tools };
  }
  if (raw.type === 'allowed_tools') {
    const names = new Set(arr(raw.tools).flatMap((t) => (isObj(t) && (t.type === 'function' || t.type === 'custom') && typeof t.name === 'string' ? [t.name] : [])));
    return { choice: { type: raw.mode === 'required' ? 'required' : 'auto' }, tools: tools?.filter((t) => names.has(t.name)) };
  }
  if (isWebSearch(raw.type)) return { choice: { type: 'builtin', tool: 'web_search' }, tools };
  // Forcing another hosted tool (file_search, mcp, ...): without it the answer would be another answer.
  throw new TollgateError('TOLLGATE_ERR_NOT_SUPPORTED', `tool_choice forces the hosted tool ${JSON.stringify(raw.type)}, which cannot be carried to another provider format`, { param: 'tool_choice' });
}

/** Every top-level key parseRequest reads (or deliberately ignores: store, stream_options); others are listed as dropped. */
const KNOWN_KEYS: ReadonlySet<string> = new Set([
  'model', 'input', 'instructions', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_output_tokens', 'temperature', 'top_p', 'text', 'reasoning',
  'user', 'safety_identifier', 'metadata', 'stream', 'stream_options', 'store', 'previous_response_id', 'conversation', 'include', 'top_logprobs',
  'prompt_cache_key', 'service_tier',
]);

/** include values the codec honours: logprobs (carried) and encrypted reasoning (asked for whenever it applies). */
const HONOURED_INCLUDES: ReadonlySet<string> = new Set(['message.output_text.logprobs', 'reasoning.encrypted_content']);

function parseFormat(text: unknown): ResponseFormat | undefined {
  if (!isObj(text) || !isObj(text.format)) return undefined;
  const f = text.format;
  switch (f.type) {
    case 'text':
      return { type: 'text' };
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      if (typeof f.name !== 'string') invalid('text.format json_schema needs a `name`', 'text.format.name');
      if (!isObj(f.schema)) invalid('text.format json_schema needs a `schema` object', 'text.format.schema');
      return typeof f.strict === 'boolean' ? { type: 'json_schema', name: f.name, schema: f.schema, strict: f.strict } : { type: 'json_schema', name: f.name, schema: f.schema };
    }
    default:
      return invalid('`text.format.type` must be text, json_object or json_schema', 'text.format.type');
  }
}

function parseReasoning(raw: unknown): { thinking?: ThinkingLevel; includeReasoning?: boolean } {
  if (raw === undefined || raw === null) return {};
  if (!isObj(raw)) invalid('`reasoning` must be an object', 'reasoning');
  const out: { thinking?: ThinkingLevel; includeReasoning?: boolean } = {};
  if (raw.effort !== undefined && raw.effort !== null) {
    if (!EFFORTS.includes(raw.effort as Effort)) invalid(`\`reasoning.effort\` must be one of ${EFFORTS.join(', ')}`, 'reasoning.effort');
    out.thinking = { kind: 'level', level: raw.effort as Effort };
  }
  // `generate_summary` is the deprecated spelling of `summary`.
  const summary = raw.summary ?? raw.generate_summary;
  if (typeof summary === 'string') out.includeReasoning = true;
  return out;
}

function parseMetadata(raw: unknown): Record<string, string> | undefined {
  if (!isObj(raw)) return undefined;
  const entries = Object.entries(raw).filter((e): e is [string, string] => typeof e[1] === 'string');
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}

export function parseRequest(body: unknown): CanonicalRequest {
  if (!isObj(body)) invalid('the request body must be a JSON object');
  if (typeof body.model !== 'string' || body.model === '') invalid('`model` must be a non-empty string', 'model');
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    invalid('previous_response_id is not supported: this gateway is stateless (it sends store: false upstream), so send the whole conversation in `input`', 'previous_response_id');
  }
  if (body.conversation !== undefined && body.conversation !== null) {
    invalid('conversation is not supported: this gateway is stateless, so send the whole conversation in `input`', 'conversation');
  }
  if (typeof body.input !== 'string' && !Array.isArray(body.input)) invalid('`input` must be a string or an array of input items', 'input');

  const conv = new Conversation();
  if (typeof body.instructions === 'string' && body.instructions !== '') conv.system.push({ type: 'text', text: body.instructions });
  parseInput(body.input, conv);

  const { model, thinking: suffix } = parseThinkingSuffix(body.model);
  const parsedTools = parseTools(body);
  const { choice, tools } = parseToolChoice(body.tool_choice, parsedTools.functions);
  const req: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = {
    model,
    system: conv.system,
    messages: conv.messages as Message[],
    stream: body.stream === true,
  };
  if (tools !== undefined && tools.length > 0) req.tools = tools;
  if (parsedTools.builtin.length > 0) req.builtinTools = parsedTools.builtin;
  if (choice !== undefined && (choice.type === 'builtin' ? parsedTools.builtin.length > 0 : req.tools !== undefined)) req.toolChoice = choice;
  if (typeof body.parallel_tool_calls === 'boolean') req.parallelToolCalls = body.parallel_tool_calls;
  const maxTokens = optNumber(body, 'max_output_tokens');
  if (maxTokens !== undefined) req.maxTokens = maxTokens;
  const temperature = optNumber(body, 'temperature');
  if (temperature !== undefined) req.temperature = temperature;
  const topP = optNumber(body, 'top_p');
  if (topP !== undefined) req.topP = topP;
  const format = parseFormat(body.text);
  if (format !== undefined) req.responseFormat = format;
  const { thinking, includeReasoning } = parseReasoning(body.reasoning);
  if (suffix !== undefined || thinking !== undefined) req.thinking = suffix ?? thinking;
  if (includeReasoning !== undefined) req.includeReasoning = includeReasoning;
  // `safety_identifier` replaces the deprecated `user`; either names the end user.
  const user = str(body.user) ?? str(body.safety_identifier);
  if (user !== undefined) req.user = user;
  const metadata = parseMetadata(body.metadata);
  if (metadata !== undefined) req.metadata = metadata;

  const include = arr(body.include).filter((v): v is string => typeof v === 'string');
  if (include.includes('message.output_text.logprobs')) req.logprobs = true;
  const topLogprobs = optNumber(body, 'top_logprobs');
  if (topLogprobs !== undefined && (!Number.isInteger(topLogprobs) || topLogprobs < 0 || topLogprobs > 20)) invalid('`top_logprobs` must be an integer between 0 and 20', 'top_logprobs');
  if (topLogprobs !== undefined) {
    req.logprobs = true;
    req.topLogprobs = topLogprobs;
  }
  const promptCacheKey = str(body.prompt_cache_key);
  if (promptCacheKey !== undefined) req.promptCacheKey = promptCacheKey;
  const serviceTier = str(body.service_tier);
  if (serviceTier !== undefined) req.serviceTier = serviceTier;

  const unmapped = [...unknownKeys(body, KNOWN_KEYS), ...parsedTools.unmapped, ...include.filter((v) => !HONOURED_INCLUDES.has(v)).map((v) => `include.${v}`)];
  if (body.store === true) unmapped.push('store');
  if (isObj(body.text) && body.text.verbosity !== undefined && body.text.verbosity !== null) unmapped.push('text.verbosity');
  if (unmapped.length > 0) req.unmapped = unmapped;
  return req;
}
