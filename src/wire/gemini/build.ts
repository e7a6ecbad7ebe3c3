// CanonicalRequest -> the upstream request for a Gemini provider: path `<base_url path>/models/<id>:generateContent`
// (or `:streamGenerateContent?alt=sse`), the x-goog-api-key header and a body shaped as @google/genai sends it.
//
// Carried besides the conversation: n -> candidateCount (whole answers only), logprobs -> responseLogprobs +
// logprobs, the built-in web search -> a googleSearch tool, seed, stop sequences, penalties, top_k, a response
// format -> responseMimeType (+ responseJsonSchema). Dropped and listed (BuildNotes): logit_bias, prediction,
// prompt_cache_key, service_tier, user, metadata, cache_control markers, parallel_tool_calls false (Gemini has no
// switch for it), a tool's strict mode, an image's detail level (low / high), another family's files, a thinking
// level for a model not listed with `reasoning`; forcing the web search is refused (Gemini's tool config forces
// function calls only).

import type { BuiltRequest, Target } from '../codec.js';
import type { CanonicalRequest, Message, Part, ToolChoice } from '../canonical.js';
import { anyPart, BuildNotes, hasCacheControl, noteChoices, noteStopLimit, withoutForeignFiles } from '../fields.js';
import { applyThinking, thinkingLost } from '../thinking.js';
import { endpointPath } from '../endpoint.js';
import { answerToGemini, argsObject, isObj, mediaToGemini, modelPath, reasoningToGemini, type GeminiContent, type GeminiPart, type Json } from './wire.js';

function authHeaders(target: Target): Record<string, string> {
  const a = target.provider.auth;
  if (a.type === 'none' || !a.key) return {};
  const header = (a.header ?? 'x-goog-api-key').toLowerCase();
  return { [header]: header === 'authorization' ? `Bearer ${a.key}` : a.key };
}

/** The most stop sequences Gemini takes (`stopSequences`: "up to 5", the API reference). */
export const MAX_STOP_SEQUENCES = 5;

export function buildGeminiRequest(asked: CanonicalRequest, target: Target): BuiltRequest {
  const notes = new BuildNotes();
  const req = withoutForeignFiles(asked, 'gemini', notes);
  noteChoices(req, notes, 'a Gemini', true);
  const path = endpointPath(target.provider, `${modelPath(target.modelId)}${req.stream ? ':streamGenerateContent?alt=sse' : ':generateContent'}`, '/v1beta');

  // Gemini 3 (the gemini-level family) rejects a function call in history without its thought signature; a call
  // another family produced gets the placeholder Google documents for that case.
  const body: Json = { contents: buildContents(req.messages, target.model?.thinking === 'gemini-level') };
  const system = req.system.flatMap((p) => (p.type === 'text' && p.text !== '' ? [{ text: p.text }] : []));
  if (system.length > 0) body.systemInstruction = { parts: system };
  const tools: Json[] = [];
  if (req.tools !== undefined && req.tools.length > 0) {
    tools.push({
      functionDeclarations: req.tools.map((t) => (t.description === undefined ? { name: t.name, parametersJsonSchema: t.parameters } : { name: t.name, description: t.description, parametersJsonSchema: t.parameters })),
    });
    if (req.toolChoice !== undefined && req.toolChoice.type !== 'builtin') body.toolConfig = { functionCallingConfig: functionCallingConfig(req.toolChoice) };
    if (req.parallelToolCalls === false) notes.drop('parallelToolCalls');
    if (req.tools.some((t) => t.strict === true)) notes.drop('toolStrict');
  }
  if (req.builtinTools !== undefined && req.builtinTools.length > 0) tools.push({ googleSearch: {} });
  if (req.toolChoice?.type === 'builtin') notes.refuse('toolChoice', 'forces the built-in web search, which a Gemini provider cannot force (its tool config forces function calls only)');
  if (tools.length > 0) body.tools = tools;

  const g: Json = {};
  if (req.maxTokens !== undefined) g.maxOutputTokens = req.maxTokens;
  if (req.temperature !== undefined) g.temperature = req.temperature;
  if (req.topP !== undefined) g.topP = req.topP;
  if (req.topK !== undefined) g.topK = req.topK;
  if (req.stop !== undefined && req.stop.length > 0) g.stopSequences = [...req.stop];
  noteStopLimit(req, notes, { limit: MAX_STOP_SEQUENCES, format: 'a Gemini' });
  if (req.seed !== undefined) g.seed = req.seed;
  if (req.presencePenalty !== undefined) g.presencePenalty = req.presencePenalty;
  if (req.frequencyPenalty !== undefined) g.frequencyPenalty = req.frequencyPenalty;
  if (req.responseFormat !== undefined) {
    const f = req.responseFormat;
    g.responseMimeType = f.type === 'text' ? 'text/plain' : 'application/json';
    if (f.type === 'json_schema') g.responseJsonSchema = f.schema;
  }
  const thinking = buildThinkingConfig(req, target, notes);
  if (thinking !== undefined) g.thinkingConfig = thinking;
  if (req.n !== undefined && req.n > 1) g.candidateCount = req.n;
  if (req.logprobs === true) {
    g.responseLogprobs = true;
    if (req.topLogprobs !== undefined) g.logprobs = req.topLogprobs;
  }
  if (Object.keys(g).length > 0) body.generationConfig = g;
  const unsupported = ['logitBias', 'prediction', 'promptCacheKey', 'serviceTier', 'user', 'metadata'] as const;
  for (const f of unsupported) if (req[f] !== undefined) notes.drop(f);
  if (hasCacheControl(req)) notes.drop('cacheControl');
  if (anyPart(req, (p) => p.type === 'image' && (p.detail === 'low' || p.detail === 'high'))) notes.drop('imageDetail');

  const refused = notes.refusal;
  return {
    path,
    headers: { ...target.provider.headers, 'content-type': 'application/json', accept: req.stream ? 'text/event-stream' : 'application/json', ...authHeaders(target) },
    body,
    dropped: notes.dropped,
    ...(refused === undefined ? {} : { refused }),
  };
}

function functionCallingConfig(c: Exclude<ToolChoice, { type: 'builtin' }>): Json {
  switch (c.type) {
    case 'auto':
      return { mode: 'AUTO' };
    case 'none':
      return { mode: 'NONE' };
    case 'required':
      return { mode: 'ANY' };
    case 'tool':
      return { mode: 'ANY', allowedFunctionNames: [c.name] };
  }
}

/**
 * Messages -> contents (assistant -> 'model'). A message left without parts (only parts Gemini cannot take) is
 * dropped: Gemini rejects an empty parts array.
 */
export function buildContents(messages: readonly Message[], signCalls = false): GeminiContent[] {
  const out: GeminiContent[] = [];
  messages.forEach((m, i) => {
    const parts = m.role === 'assistant' ? answerToGemini(m.content) : userParts(m.content, messages, i);
    if (signCalls && m.role === 'assistant') withCallSignature(parts);
    if (parts.length > 0) out.push({ role: m.role === 'assistant' ? 'model' : 'user', parts });
  });
  return out;
}

/** The placeholder signature Gemini accepts on a function call it did not produce. */
export const FOREIGN_CALL_SIGNATURE = 'skip_thought_signature_validator';

/** The first function call of a model turn must carry a signature: a call without one gets the placeholder. */
function withCallSignature(parts: GeminiPart[]): void {
  const first = parts.find((p) => p.functionCall !== undefined);
  if (first && first.thoughtSignature === undefined) first.thoughtSignature = FOREIGN_CALL_SIGNATURE;
}

function userParts(content: readonly Part[], messages: readonly Message[], at: number): GeminiPart[] {
  const out: GeminiPart[] = [];
  for (const p of content) {
    switch (p.type) {
      case 'text':
        if (p.text !== '') out.push({ text: p.text });
        break;
      case 'image':
      case 'file':
      case 'audio':
        out.push(mediaToGemini(p.source, p.type));
        break;
      case 'reasoning': {
        const r = reasoningToGemini(p);
        if (r) out.push(r);
        break;
      }
      case 'tool_call':
        out.push({ functionCall: { id: p.id, name: p.name, args: argsObject(p.arguments) } });
        break;
      case 'tool_result':
        out.push({ functionResponse: { id: p.callId, name: p.name ?? callName(p.callId, messages, at), response: toolResponse(p) } });
        // The result's images and files (a screenshot, a PDF) follow it in the same turn, as inline parts.
        for (const c of p.content) if (c.type === 'image' || c.type === 'file' || c.type === 'audio') out.push(mediaToGemini(c.source, c.type));
        break;
    }
  }
  return out;
}

/** The name of the call `callId` answers: the latest tool_call with that id before message `at`; else the id itself. */
function callName(callId: string, messages: readonly Message[], at: number): string {
  for (let i = at; i >= 0; i--) {
    const m = messages[i]!;
    for (let j = m.content.length - 1; j >= 0; j--) {
      const p = m.content[j]!;
      if (p.type === 'tool_call' && p.id === callId) return p.name;
    }
  }
  return callId;
}

/**
 * A tool result -> functionResponse.response (an object). The text parts are joined; text that is a JSON object is
 * sent as that object, any other text as {output: text}, an error as {error: text}. Media parts are not part of it:
 * userParts sends them as inline parts right after the functionResponse.
 */
function toolResponse(p: Extract<Part, { type: 'tool_result' }>): Json {
  const text = p.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');
  if (p.isError === true) return { error: text };
  try {
    const v: unknown = JSON.parse(text);
    if (isObj(v)) return v;
  } catch {
    // not JSON: plain output text
  }
  return { output: text };
}

/**
 * thinkingConfig for the target, or undefined. Only models listed with the `reasoning` capability get one; another
 * model's level is listed as dropped. The level maps through the shared table (applyThinking: `gemini-level` models
 * get thinkingLevel, others thinkingBudget, see docs/thinking.md); includeThoughts when the client asked for
 * reasoning in the answer.
 */
export function buildThinkingConfig(req: CanonicalRequest, target: Target, notes: BuildNotes): Json | undefined {
  const m = target.model;
  const reasons = m !== null && m.capabilities.includes('reasoning');
  // One mapping for every family (src/wire/thinking.ts, docs/thinking.md).
  const level = req.thinking === undefined || m === null || !reasons ? {} : applyThinking(m.thinking === 'gemini-level' ? 'gemini-level' : 'gemini-budget', req.thinking, m, req.maxTokens);
  if (thinkingLost(req.thinking, level, { reasons })) notes.drop('thinking');
  if (!reasons) return undefined;
  const out: Json = { ...level };
  if (req.includeReasoning === true) out.includeThoughts = true;
  return Object.keys(out).length > 0 ? out : undefined;
}

