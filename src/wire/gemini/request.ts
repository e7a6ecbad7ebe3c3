// A client's Gemini generateContent body (as @google/genai sends it, or in the REST API's snake_case field names:
// spelling.ts) -> CanonicalRequest.
//
// The model and whether the answer streams are in the URL (`/models/<model>:generateContent` vs
// `:streamGenerateContent?alt=sse`), not in the body, so the result has model '' and stream false: the route fills
// both in.
//
// Carried besides the conversation: candidateCount (n), responseLogprobs / logprobs, googleSearch (and the older
// googleSearchRetrieval) as the built-in web search; allowedFunctionNames (ANY naming several, VALIDATED) keeps
// only the declarations it names. text/x.enum is a text answer. Listed as dropped (`unmapped`): other built-in tools
// (`tools.codeExecution`, `tools.urlContext`, ...), top-level keys not read here (safetySettings, cachedContent,
// ...), generationConfig keys not read here (responseModalities, speechConfig, mediaResolution, ...) and the
// schema of a text/x.enum answer.

import type { BuiltinTool, CanonicalRequest, Message, Part, ResponseFormat, ThinkingLevel, ToolChoice, ToolDefinition } from '../canonical.js';
import { unknownKeys } from '../fields.js';
import { fileDataSource, invalid, isObj, mediaPart, reasoningPart, syntheticCallId, toolCallPart, type Json } from './wire.js';
import { jsonSchemaFromGemini } from './schema.js';
import { camelCaseRequest, clientFieldNames, respell } from './spelling.js';
import { TollgateError } from '../../core/errors.js';

export function parseGeminiRequest(raw: unknown): CanonicalRequest {
  if (!isObj(raw)) throw invalid('request body must be a JSON object');
  // snake_case field names (system_instruction, inline_data, ...) read as their lowerCamelCase twins.
  const { body, spelled } = camelCaseRequest(raw);
  try {
    return parseCamelCase(body, spelled);
  } catch (err) {
    // a refusal names the fields as the client spelled them (`generation_config.temperature`, `inline_data`)
    if (spelled.size === 0 || !(err instanceof TollgateError)) throw err;
    const own = (text: string): string => text.replace(/[A-Za-z]+/g, (word) => spelled.get(word) ?? word);
    throw new TollgateError(err.code, own(err.message), err.param === undefined ? {} : { param: own(err.param) });
  }
}

/** The request read from `body` in lowerCamelCase; `spelled`, the client's own spelling of each name renamed. */
function parseCamelCase(body: Json, spelled: ReadonlyMap<string, string>): CanonicalRequest {
  if (!Array.isArray(body.contents)) throw invalid('contents must be an array', 'contents');

  const messages = parseContents(body.contents);
  const system = parseSystem(body.systemInstruction);
  const { functions: declared, builtin, unmapped } = parseTools(body.tools);
  const { choice: toolChoice, tools } = parseToolChoice(body.toolConfig, declared);
  const gen = body.generationConfig;
  if (gen !== undefined && gen !== null && !isObj(gen)) throw invalid('generationConfig must be an object', 'generationConfig');
  const g = (gen ?? {}) as Json;

  const req: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = { model: '', system, messages, stream: false };
  if (tools !== undefined) req.tools = tools;
  if (builtin.length > 0) req.builtinTools = builtin;
  if (toolChoice !== undefined) req.toolChoice = toolChoice;
  const maxTokens = num(g, 'maxOutputTokens');
  if (maxTokens !== undefined) req.maxTokens = maxTokens;
  const temperature = num(g, 'temperature');
  if (temperature !== undefined) req.temperature = temperature;
  const topP = num(g, 'topP');
  if (topP !== undefined) req.topP = topP;
  const topK = num(g, 'topK');
  if (topK !== undefined) req.topK = topK;
  const seed = num(g, 'seed');
  if (seed !== undefined) req.seed = seed;
  const presencePenalty = num(g, 'presencePenalty');
  if (presencePenalty !== undefined) req.presencePenalty = presencePenalty;
  const frequencyPenalty = num(g, 'frequencyPenalty');
  if (frequencyPenalty !== undefined) req.frequencyPenalty = frequencyPenalty;
  if (g.stopSequences !== undefined) {
    if (!Array.isArray(g.stopSequences) || !g.stopSequences.every((s) => typeof s === 'string')) throw invalid('stopSequences must be an array of strings', 'generationConfig.stopSequences');
    req.stop = g.stopSequences as string[];
  }
  const format = parseResponseFormat(g);
  if (format.format !== undefined) req.responseFormat = format.format;
  // The codec lists a dropped format as generationConfig.responseJsonSchema (GEMINI_PARAM_NAMES); another key the client's own.
  const fieldNames: Record<string, string> = clientFieldNames(spelled);
  if (format.key !== undefined && format.key !== 'responseJsonSchema') fieldNames.responseFormat = respell(`generationConfig.${format.key}`, spelled);
  if (Object.keys(fieldNames).length > 0) req.fieldNames = fieldNames;
  if (format.ignored !== undefined) unmapped.push(`generationConfig.${format.ignored}`);
  if (g.thinkingConfig !== undefined && g.thinkingConfig !== null) {
    if (!isObj(g.thinkingConfig)) throw invalid('thinkingConfig must be an object', 'generationConfig.thinkingConfig');
    const thinking = parseThinking(g.thinkingConfig);
    if (thinking !== undefined) req.thinking = thinking;
    if (typeof g.thinkingConfig.includeThoughts === 'boolean') req.includeReasoning = g.thinkingConfig.includeThoughts;
  }
  const candidates = num(g, 'candidateCount');
  if (candidates !== undefined && (!Number.isInteger(candidates) || candidates < 1)) throw invalid('candidateCount must be an integer >= 1', 'generationConfig.candidateCount');
  if (candidates !== undefined && candidates > 1) req.n = candidates;
  if (g.responseLogprobs !== undefined && g.responseLogprobs !== null && typeof g.responseLogprobs !== 'boolean') throw invalid('responseLogprobs must be a boolean', 'generationConfig.responseLogprobs');
  if (g.responseLogprobs === true) {
    req.logprobs = true;
    const top = num(g, 'logprobs');
    if (top !== undefined && (!Number.isInteger(top) || top < 0 || top > 20)) throw invalid('logprobs must be an integer between 0 and 20', 'generationConfig.logprobs');
    if (top !== undefined) req.topLogprobs = top;
  }
  const dropped = [...unknownKeys(body, KNOWN_KEYS), ...unmapped, ...unknownKeys(g, KNOWN_GENERATION_KEYS).map((k) => `generationConfig.${k}`)];
  if (dropped.length > 0) req.unmapped = dropped.map((name) => respell(name, spelled));
  return req;
}

/** Every top-level key parseGeminiRequest reads; any other key the client sets is listed as dropped. */
const KNOWN_KEYS: ReadonlySet<string> = new Set(['model', 'contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig']);
const KNOWN_GENERATION_KEYS: ReadonlySet<string> = new Set([
  'maxOutputTokens', 'temperature', 'topP', 'topK', 'seed', 'presencePenalty', 'frequencyPenalty', 'stopSequences', 'responseMimeType',
  'responseSchema', 'responseJsonSchema', 'thinkingConfig', 'candidateCount', 'responseLogprobs', 'logprobs',
]);

function num(g: Json, key: string): number | undefined {
  const v = g[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`${key} must be a number`, `generationConfig.${key}`);
  return v;
}

function parseSystem(raw: unknown): Part[] {
  if (raw === undefined || raw === null) return [];
  if (typeof raw === 'string') return raw === '' ? [] : [{ type: 'text', text: raw }];
  if (!isObj(raw) || !Array.isArray(raw.parts)) throw invalid('systemInstruction must be a Content with parts', 'systemInstruction');
  const out: Part[] = [];
  raw.parts.forEach((p, j) => {
    if (!isObj(p)) throw invalid('a part must be an object', `systemInstruction.parts[${j}]`);
    if (typeof p.text === 'string' && p.text !== '') out.push({ type: 'text', text: p.text });
  });
  return out;
}

/**
 * Contents -> messages. Function calls without an id get `call_<n>` (n counting the calls of the whole request
 * from 0); a functionResponse without an id is paired with an unanswered call of the same name (parseFunctionResponse).
 */
function parseContents(contents: unknown[]): Message[] {
  const messages: Message[] = [];
  let calls = 0;
  const unanswered: Pending[] = [];
  contents.forEach((c, i) => {
    const at = `contents[${i}]`;
    if (!isObj(c)) throw invalid('a content must be an object', at);
    if (c.role !== undefined && c.role !== 'user' && c.role !== 'model') throw invalid("role must be 'user' or 'model'", `${at}.role`);
    if (!Array.isArray(c.parts)) throw invalid('parts must be an array', `${at}.parts`);
    const role = c.role === 'model' ? 'assistant' : 'user';
    const parts: Part[] = [];
    c.parts.forEach((p, j) => {
      const pat = `${at}.parts[${j}]`;
      if (!isObj(p)) throw invalid('a part must be an object', pat);
      if (typeof p.text === 'string') {
        const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined;
        if (p.thought === true) {
          if (p.text !== '' || sig !== undefined) parts.push(reasoningPart(p.text, sig));
        } else if (p.text !== '') {
          parts.push({ type: 'text', text: p.text });
        }
      } else if (p.inlineData !== undefined) {
        const d = p.inlineData;
        if (!isObj(d) || typeof d.mimeType !== 'string' || typeof d.data !== 'string') throw invalid('inlineData needs mimeType and data strings', `${pat}.inlineData`);
        parts.push(mediaPart(d.mimeType, { kind: 'base64', mediaType: d.mimeType, data: d.data }));
      } else if (p.fileData !== undefined) {
        const d = p.fileData;
        if (!isObj(d) || typeof d.fileUri !== 'string') throw invalid('fileData needs a fileUri string', `${pat}.fileData`);
        const mime = typeof d.mimeType === 'string' ? d.mimeType : undefined;
        parts.push(mediaPart(mime ?? '', fileDataSource(d.fileUri, mime)));
      } else if (p.functionCall !== undefined) {
        const fc = p.functionCall;
        if (!isObj(fc) || typeof fc.name !== 'string' || fc.name === '') throw invalid('functionCall needs a name', `${pat}.functionCall.name`);
        if (fc.args !== undefined && fc.args !== null && !isObj(fc.args)) throw invalid('functionCall.args must be an object', `${pat}.functionCall.args`);
        const own = typeof fc.id === 'string' && fc.id !== '';
        const id = own ? (fc.id as string) : syntheticCallId(calls);
        calls++;
        unanswered.push({ id, name: fc.name, synthetic: !own });
        const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined;
        parts.push(toolCallPart(id, fc.name, JSON.stringify(fc.args ?? {}), sig));
      } else if (p.functionResponse !== undefined) {
        parts.push(parseFunctionResponse(p.functionResponse, `${pat}.functionResponse`, unanswered));
      }
      // executableCode, codeExecutionResult, videoMetadata-only and unknown parts have no canonical form.
    });
    if (parts.length > 0) messages.push({ role, content: parts });
  });
  return messages;
}

/** A function call of the request not answered yet; `synthetic`: its id was made up here. */
interface Pending {
  readonly id: string;
  readonly name: string;
  readonly synthetic: boolean;
}

/**
 * A functionResponse with an id answers that call; one without answers the oldest unanswered call of the same name
 * whose id was made up here (else of any id; else its callId is its name).
 * functionResponse.response is an object. The conventional `{output: x}` / `{error: x}` shapes (Gemini docs) become
 * the text x (isError for `error`); any other object becomes its JSON text.
 */
function parseFunctionResponse(fr: unknown, at: string, unanswered: Pending[]): Part {
  if (!isObj(fr) || typeof fr.name !== 'string' || fr.name === '') throw invalid('functionResponse needs a name', `${at}.name`);
  if (fr.response !== undefined && fr.response !== null && !isObj(fr.response)) throw invalid('functionResponse.response must be an object', `${at}.response`);
  const name = fr.name;
  let callId: string;
  if (typeof fr.id === 'string' && fr.id !== '') {
    callId = fr.id;
    const k = unanswered.findIndex((c) => c.id === callId);
    if (k !== -1) unanswered.splice(k, 1);
  } else {
    let k = unanswered.findIndex((c) => c.name === name && c.synthetic);
    if (k === -1) k = unanswered.findIndex((c) => c.name === name);
    callId = k === -1 ? name : unanswered.splice(k, 1)[0]!.id;
  }
  const response = (fr.response ?? {}) as Json;
  const keys = Object.keys(response);
  let text: string;
  let isError = false;
  if (keys.length === 1 && (keys[0] === 'output' || keys[0] === 'error')) {
    const v = response[keys[0]];
    text = typeof v === 'string' ? v : JSON.stringify(v);
    isError = keys[0] === 'error';
  } else {
    text = JSON.stringify(response);
  }
  const content: Part[] = [{ type: 'text', text }];
  return isError ? { type: 'tool_result', callId, name, content, isError } : { type: 'tool_result', callId, name, content };
}

/** The built-in tools that are web search. */
const WEB_SEARCH_TOOLS = new Set(['googleSearch', 'googleSearchRetrieval']);

/**
 * functionDeclarations -> tools; googleSearch / googleSearchRetrieval -> the built-in web search; any other built-in
 * tool (codeExecution, urlContext, ...) -> `tools.<name>` in `unmapped`.
 */
function parseTools(raw: unknown): { functions?: ToolDefinition[]; builtin: BuiltinTool[]; unmapped: string[] } {
  const builtin: BuiltinTool[] = [];
  const unmapped: string[] = [];
  if (raw === undefined || raw === null) return { builtin, unmapped };
  if (!Array.isArray(raw)) throw invalid('tools must be an array', 'tools');
  const out: ToolDefinition[] = [];
  raw.forEach((t, i) => {
    if (!isObj(t)) throw invalid('a tool must be an object', `tools[${i}]`);
    for (const key of Object.keys(t)) {
      if (key === 'functionDeclarations' || t[key] === undefined || t[key] === null) continue;
      if (!WEB_SEARCH_TOOLS.has(key)) unmapped.push(`tools.${key}`);
      else if (builtin.length === 0) builtin.push({ type: 'web_search' });
    }
    if (t.functionDeclarations === undefined) return;
    if (!Array.isArray(t.functionDeclarations)) throw invalid('functionDeclarations must be an array', `tools[${i}].functionDeclarations`);
    t.functionDeclarations.forEach((f, j) => {
      const at = `tools[${i}].functionDeclarations[${j}]`;
      if (!isObj(f) || typeof f.name !== 'string' || f.name === '') throw invalid('a function declaration needs a name', `${at}.name`);
      let parameters: Json = { type: 'object', properties: {} };
      if (isObj(f.parametersJsonSchema)) parameters = f.parametersJsonSchema;
      else if (isObj(f.parameters)) parameters = jsonSchemaFromGemini(f.parameters);
      out.push(typeof f.description === 'string' ? { name: f.name, description: f.description, parameters } : { name: f.name, parameters });
    });
  });
  return out.length > 0 ? { functions: out, builtin, unmapped } : { builtin, unmapped };
}

/**
 * AUTO -> auto, NONE -> none, ANY -> required, or the one tool when allowedFunctionNames names exactly one. With
 * VALIDATED, or ANY naming several, allowedFunctionNames keeps only the declarations it names (as a Responses
 * allowed_tools does): ANY over [a, b] of a, b, c is required over a and b.
 */
function parseToolChoice(raw: unknown, declared: ToolDefinition[] | undefined): { choice?: ToolChoice; tools?: ToolDefinition[] } {
  if (raw === undefined || raw === null) return { tools: declared };
  if (!isObj(raw)) throw invalid('toolConfig must be an object', 'toolConfig');
  const fcc = raw.functionCallingConfig;
  if (fcc === undefined || fcc === null) return { tools: declared };
  if (!isObj(fcc)) throw invalid('functionCallingConfig must be an object', 'toolConfig.functionCallingConfig');
  const names = Array.isArray(fcc.allowedFunctionNames) ? fcc.allowedFunctionNames.filter((n): n is string => typeof n === 'string') : [];
  const allowed = declared?.filter((t) => names.includes(t.name));
  // Names that match no declaration leave the declarations as they are (the provider says what it makes of them).
  const tools = allowed !== undefined && allowed.length > 0 ? allowed : declared;
  switch (fcc.mode) {
    case undefined:
    case 'MODE_UNSPECIFIED':
    case 'AUTO':
      return fcc.mode === undefined ? { tools: declared } : { choice: { type: 'auto' }, tools: declared };
    case 'VALIDATED':
      return { choice: { type: 'auto' }, tools };
    case 'NONE':
      return { choice: { type: 'none' }, tools: declared };
    case 'ANY':
      // One name is a forced tool: the other declarations stay (they cannot be called).
      return names.length === 1 ? { choice: { type: 'tool', name: names[0]! }, tools: declared } : { choice: { type: 'required' }, tools };
    default:
      throw invalid('functionCallingConfig.mode must be AUTO, ANY, NONE or VALIDATED', 'toolConfig.functionCallingConfig.mode');
  }
}

/**
 * responseJsonSchema / responseSchema -> json_schema (named 'response': Gemini has no name); application/json ->
 * json_object; text/plain and text/x.enum -> text (an enum's schema has no place in another format's text answer:
 * listed as `ignored`). `key`: the generationConfig key the format is listed under when dropped, the one the client set.
 */
function parseResponseFormat(g: Json): { format?: ResponseFormat; key?: string; ignored?: string } {
  const schemaKey = isObj(g.responseJsonSchema) ? 'responseJsonSchema' : isObj(g.responseSchema) ? 'responseSchema' : undefined;
  if (g.responseMimeType === 'text/x.enum') return { format: { type: 'text' }, key: 'responseMimeType', ...(schemaKey === undefined ? {} : { ignored: schemaKey }) };
  if (isObj(g.responseJsonSchema)) return { format: { type: 'json_schema', name: 'response', schema: g.responseJsonSchema }, key: 'responseJsonSchema' };
  if (isObj(g.responseSchema)) return { format: { type: 'json_schema', name: 'response', schema: jsonSchemaFromGemini(g.responseSchema) }, key: 'responseSchema' };
  if (g.responseMimeType === 'application/json') return { format: { type: 'json_object' }, key: 'responseMimeType' };
  if (g.responseMimeType === 'text/plain') return { format: { type: 'text' }, key: 'responseMimeType' };
  return {};
}

const LEVELS = new Set(['minimal', 'low', 'medium', 'high']);

/** thinkingLevel (any case) -> that level; thinkingBudget -1 -> auto, 0 -> none, n -> a budget of n tokens. */
function parseThinking(tc: Json): ThinkingLevel | undefined {
  if (typeof tc.thinkingLevel === 'string') {
    const l = tc.thinkingLevel.toLowerCase();
    if (LEVELS.has(l)) return { kind: 'level', level: l as 'minimal' | 'low' | 'medium' | 'high' };
    if (l !== 'thinking_level_unspecified') throw invalid('thinkingLevel must be MINIMAL, LOW, MEDIUM or HIGH', 'generationConfig.thinkingConfig.thinkingLevel');
  }
  const b = tc.thinkingBudget;
  if (b === undefined || b === null) return undefined;
  if (typeof b !== 'number' || !Number.isInteger(b) || b < -1) throw invalid('thinkingBudget must be an integer >= -1', 'generationConfig.thinkingConfig.thinkingBudget');
  if (b === -1) return { kind: 'level', level: 'auto' };
  if (b === 0) return { kind: 'level', level: 'none' };
  return { kind: 'budget', tokens: b };
}
