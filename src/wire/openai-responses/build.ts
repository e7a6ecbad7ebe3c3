// Outbound: CanonicalRequest -> the upstream `POST <base_url path>/responses` request.
//
// - Always `store: false`: the gateway is stateless, nothing is left on the provider's side.
// - System parts -> `instructions` (text parts joined by a blank line).
// - Messages -> input items: user content as input_text / input_image / input_file; tool results as
//   function_call_output (a string when the result is one text part, else a content array); assistant text as an
//   output message; tool calls as function_call items. Custom tools (ToolDefinition.custom), their calls and
//   results go as custom tools, custom_tool_call and custom_tool_call_output items (src/wire/custom-tool.ts). Item
//   ids are never sent (with store: false the API would look them up and fail). Audio parts are dropped: Responses input content has no audio part.
// - Reasoning parts go back as reasoning items only when they carry this family's encrypted content and the target
//   model lists the `reasoning` capability; any other reasoning part is dropped.
// - Function tools always carry an explicit `strict`: omitted, the Responses API would normalise the schema into
//   strict mode (all properties required), which is not what a Chat / Anthropic / Gemini client asked for.
// - Carried besides the conversation: logprobs (`include: ['message.output_text.logprobs']` + top_logprobs),
//   prompt_cache_key, service_tier (OpenAI's values; Anthropic's standard_only is dropped), user, metadata, and the
//   built-in web search as a `web_search` tool (`web_search_preview` with tool_choice when forced).
// - Not supported by the Responses API, so removed and listed (spec item 9, BuildNotes): top_k, stop, seed,
//   presence/frequency penalty, logit_bias, prediction, cache_control markers, audio parts, a tool result's error
//   flag, another family's files, video and audio files (input_file takes documents, text and spreadsheets).
//   n > 1 is refused (a Responses answer is one answer).
// - max_output_tokens under 16 is raised to 16 (MIN_MAX_OUTPUT_TOKENS): the API refuses less with a 400.
//
// Thinking: the level goes through the shared `openai` family mapping (applyThinking in src/wire/thinking.ts,
// table in docs/thinking.md) and is sent as `reasoning.effort`: named levels pass through (auto: no effort), a
// budget becomes low / medium / high, a listed model without the `reasoning` capability gets nothing (the level is
// listed as dropped).
//   The request is treated as going to a reasoning model when the target lists `reasoning`, or, for an unlisted
//   model, when the request asks for reasoning (an effort or summaries). Only then: includeReasoning ->
//   reasoning.summary 'auto'; include: ['reasoning.encrypted_content'] (so reasoning can be carried to the next
//   turn without server-side storage; non-reasoning models reject it); reasoning items are sent back; and
//   temperature / top_p are removed unless the effort is 'none' (reasoning models reject them otherwise).

import type { CanonicalRequest, Message, Part, ToolDefinition } from '../canonical.js';
import { BuildNotes, hasCacheControl, noteChoices, withoutForeignFiles } from '../fields.js';
import { applyThinking, thinkingLost } from '../thinking.js';
import type { BuiltRequest, Target } from '../codec.js';
import { apiKeyHeaders, endpointPath } from '../endpoint.js';
import { customFormatJson, customInput } from '../custom-tool.js';
import { dataUrl, envelopeOf, type Json } from './shared.js';

/** A custom tool (ToolDefinition.custom) as the Responses API takes it. */
/** The smallest max_output_tokens the Responses API accepts ("Expected a value >= 16"). */
export const MIN_MAX_OUTPUT_TOKENS = 16;

const customToolJson = (t: ToolDefinition): Json =>
  ({ type: 'custom', name: t.name, ...(t.description === undefined ? {} : { description: t.description }), format: customFormatJson(t, 'responses') });

const isCustom = (req: CanonicalRequest, name: string): boolean => (req.tools ?? []).some((t) => t.name === name && t.custom !== undefined);

function contentPart(p: Part): Json | null {
  switch (p.type) {
    case 'text':
      return { type: 'input_text', text: p.text };
    case 'image': {
      const s = p.source;
      const ref = s.kind === 'file_id' ? { file_id: s.id } : { image_url: s.kind === 'url' ? s.url : dataUrl(s.mediaType, s.data) };
      return { type: 'input_image', ...ref, detail: p.detail ?? 'auto' };
    }
    case 'file': {
      const s = p.source;
      const ref = s.kind === 'file_id' ? { file_id: s.id } : s.kind === 'url' ? { file_url: s.url } : { file_data: dataUrl(s.mediaType, s.data) };
      return p.filename === undefined ? { type: 'input_file', ...ref } : { type: 'input_file', ...ref, filename: p.filename };
    }
    default:
      return null; // audio has no Responses input part; reasoning / tool parts are items, not content
  }
}

function toolOutput(content: readonly Part[], notes: BuildNotes): string | Json[] {
  if (content.length === 0) return '';
  if (content.length === 1 && content[0]!.type === 'text') return content[0]!.text;
  return content.flatMap((p): Json[] => {
    const c = contentPart(p);
    if (c === null && p.type === 'audio') notes.drop('audio');
    return c ? [c] : [];
  });
}

function userItems(m: Message, items: Json[], notes: BuildNotes, customCalls: ReadonlySet<string>): void {
  let buf: Json[] = [];
  const flush = (): void => {
    if (buf.length > 0) items.push({ role: 'user', content: buf });
    buf = [];
  };
  for (const p of m.content) {
    if (p.type === 'tool_result') {
      flush();
      items.push({ type: customCalls.has(p.callId) ? 'custom_tool_call_output' : 'function_call_output', call_id: p.callId, output: toolOutput(p.content, notes) });
      if (p.isError === true) notes.drop('toolError'); // function_call_output has no error flag
    } else {
      const c = contentPart(p);
      if (c) buf.push(c);
      else if (p.type === 'audio') notes.drop('audio');
    }
  }
  flush();
}

function assistantItems(m: Message, items: Json[], reasoningModel: boolean): void {
  let buf: Json[] = [];
  const flush = (): void => {
    if (buf.length > 0) items.push({ type: 'message', role: 'assistant', content: buf });
    buf = [];
  };
  for (const p of m.content) {
    if (p.type === 'text') buf.push({ type: 'output_text', text: p.text });
    else if (p.type === 'tool_call') {
      flush();
      items.push(p.custom === true ? { type: 'custom_tool_call', call_id: p.id, name: p.name, input: customInput(p.arguments) } : { type: 'function_call', call_id: p.id, name: p.name, arguments: p.arguments });
    } else if (p.type === 'reasoning') {
      const env = envelopeOf(p);
      if (!env || !reasoningModel) continue;
      flush();
      items.push({ type: 'reasoning', summary: p.text === '' ? [] : [{ type: 'summary_text', text: p.text }], encrypted_content: env.encryptedContent });
    }
  }
  flush();
}

export function buildRequest(asked: CanonicalRequest, target: Target): BuiltRequest {
  const notes = new BuildNotes();
  const req = withoutForeignFiles(asked, 'openai-responses', notes);
  noteChoices(req, notes, 'an OpenAI Responses', false);
  const effort = req.thinking === undefined ? undefined : applyThinking('openai', req.thinking, target.model, req.maxTokens).effort;
  const reasons = target.model === null || target.model.capabilities.includes('reasoning');
  if (thinkingLost(req.thinking, effort === undefined ? {} : { effort }, { reasons })) notes.drop('thinking');
  const reasoningModel = target.model !== null ? target.model.capabilities.includes('reasoning') : effort !== undefined || req.includeReasoning === true;
  const input: Json[] = [];
  const customCalls = new Set(req.messages.flatMap((m) => m.content.flatMap((p) => (p.type === 'tool_call' && p.custom === true ? [p.id] : []))));
  for (const m of req.messages) {
    if (m.role === 'user') userItems(m, input, notes, customCalls);
    else assistantItems(m, input, reasoningModel);
  }

  const out: Json = { model: target.modelId };
  const instructions = req.system.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n\n');
  if (instructions !== '') out.instructions = instructions;
  out.input = input;

  const c = req.toolChoice;
  // Forcing web search takes the preview tool: the hosted-tool choice names only `web_search_preview`.
  const search = (req.builtinTools ?? []).map(() => ({ type: c?.type === 'builtin' ? 'web_search_preview' : 'web_search' }));
  const functions = (req.tools ?? []).map((t) => t.custom !== undefined ? customToolJson(t) : ({
    type: 'function',
    name: t.name,
    ...(t.description === undefined ? {} : { description: t.description }),
    parameters: t.parameters,
    strict: t.strict ?? false,
  }));
  if (functions.length + search.length > 0) {
    out.tools = [...functions, ...search];
    if (c !== undefined) out.tool_choice = c.type === 'tool' ? { type: isCustom(req, c.name) ? 'custom' : 'function', name: c.name } : c.type === 'builtin' ? { type: 'web_search_preview' } : c.type;
    if (req.parallelToolCalls !== undefined) out.parallel_tool_calls = req.parallelToolCalls;
  }
  // The Responses API refuses a max_output_tokens under 16 (Claude Code and Claude Desktop probe with max_tokens 1).
  if (req.maxTokens !== undefined) out.max_output_tokens = Math.max(req.maxTokens, MIN_MAX_OUTPUT_TOKENS);

  const samplingAllowed = !reasoningModel || effort === 'none';
  if (req.temperature !== undefined) {
    if (samplingAllowed) out.temperature = req.temperature;
    else notes.drop('temperature');
  }
  if (req.topP !== undefined) {
    if (samplingAllowed) out.top_p = req.topP;
    else notes.drop('topP');
  }

  const f = req.responseFormat;
  if (f !== undefined) {
    out.text = {
      format: f.type === 'json_schema' ? { type: 'json_schema', name: f.name, schema: f.schema, ...(f.strict === undefined ? {} : { strict: f.strict }) } : { type: f.type },
    };
  }
  if (reasoningModel) {
    const reasoning: Json = {};
    if (effort !== undefined) reasoning.effort = effort;
    if (req.includeReasoning === true) reasoning.summary = 'auto';
    if (Object.keys(reasoning).length > 0) out.reasoning = reasoning;
    out.include = ['reasoning.encrypted_content'];
  }
  if (req.logprobs === true) {
    out.include = [...((out.include as string[] | undefined) ?? []), 'message.output_text.logprobs'];
    if (req.topLogprobs !== undefined) out.top_logprobs = req.topLogprobs;
  }
  out.stream = req.stream;
  out.store = false;
  if (req.user !== undefined) out.user = req.user;
  if (req.metadata !== undefined) out.metadata = req.metadata;
  if (req.promptCacheKey !== undefined) out.prompt_cache_key = req.promptCacheKey;
  if (req.serviceTier !== undefined) {
    if (req.serviceTier === 'standard_only') notes.drop('serviceTier');
    else out.service_tier = req.serviceTier;
  }
  const unsupported = ['topK', 'seed', 'presencePenalty', 'frequencyPenalty', 'logitBias', 'prediction'] as const;
  for (const f of unsupported) if (req[f] !== undefined) notes.drop(f);
  if (req.stop !== undefined && req.stop.length > 0) notes.drop('stop');
  if (hasCacheControl(req)) notes.drop('cacheControl');

  const p = target.provider;
  const refused = notes.refusal;
  return {
    path: endpointPath(p, '/responses', '/v1'),
    headers: { ...p.headers, 'content-type': 'application/json', accept: req.stream ? 'text/event-stream' : 'application/json', ...apiKeyHeaders(p) },
    body: out,
    dropped: notes.dropped,
    ...(refused === undefined ? {} : { refused }),
  };
}
