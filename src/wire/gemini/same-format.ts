// Gemini to a Gemini-format provider, passed through (src/wire/same-format.ts). Everything the client sent
// reaches the upstream (cachedContent, safetySettings, built-in tools, fields added later); only these change:
// - the model: it is in the URL, `<base_url path>/models/<provider model id>:<action>` with the client's `alt`;
// - generationConfig.maxOutputTokens: lowered to the model's max_output_tokens when configured;
// - a `(level)` suffix: generationConfig.thinkingConfig (thinkingLevel for `gemini-level` models, else
//   thinkingBudget) for a model listed with the `reasoning` capability;
// - capabilities the model's config excludes: tools and toolConfig; inline / file parts whose MIME type needs
//   vision, pdf or audio; thinkingConfig; a response schema (the JSON MIME type stays).

import { applyThinking } from '../thinking.js';
import { endpointPath } from '../endpoint.js';
import { capabilityOfMime, deleteNested, filterInPlace, isObj, objectAt, removeKeys, type Json, type SameFormat } from '../same-format.js';
import { geminiCodec } from './index.js';
import { GeminiStreamRenderer } from './stream.js';
import { GroundingQueries, geminiUsage, withGrounding } from './usage.js';
import { modelPath } from './wire.js';

/** The name a removed media part is listed under, as the codec lists it: `inlineData.image`, `fileData.file`... */
const LISTED: Readonly<Record<string, string>> = { vision: 'image', pdf: 'file', audio: 'audio' };

/** Keeps the parts `caps` allow; the name of each part removed goes to `removed`. */
function keepPart(caps: ReadonlySet<string>, removed: string[]) {
  return (p: unknown): boolean => {
    if (!isObj(p)) return true;
    const key = isObj(p.inlineData) ? 'inlineData' : isObj(p.fileData) ? 'fileData' : null;
    const cap = key === null ? null : capabilityOfMime((p[key] as Json).mimeType);
    if (cap === null || caps.has(cap)) return true;
    removed.push(`${key}.${LISTED[cap]}`);
    return false;
  };
}

function stripExcluded(body: Json, caps: ReadonlySet<string>): string[] {
  const removed: string[] = [];
  if (!caps.has('tools')) removeKeys(body, ['tools', 'toolConfig'], removed);
  if (!caps.has('reasoning') && deleteNested(body, 'generationConfig', 'thinkingConfig')) removed.push('generationConfig.thinkingConfig');
  if (!caps.has('structured_output') && isObj(body.generationConfig)) {
    const g = body.generationConfig;
    const gone: string[] = [];
    removeKeys(g, ['responseSchema', 'responseJsonSchema'], gone);
    for (const k of gone) removed.push(`generationConfig.${k}`);
    if (Object.keys(g).length === 0) delete body.generationConfig;
  }
  if (caps.has('vision') && caps.has('pdf') && caps.has('audio')) return removed;
  const keep = keepPart(caps, removed);
  const contents = [...(Array.isArray(body.contents) ? body.contents : []), body.systemInstruction];
  for (const c of contents) if (isObj(c) && Array.isArray(c.parts)) filterInPlace(c.parts, keep);
  return removed;
}

export const geminiSameFormat: SameFormat = {
  codec: geminiCodec,
  // streamGenerateContent without alt=sse answers one JSON array of chunks (read whole, usageOf below).
  expectsEventStream: (call) => call.stream && call.alt === 'sse',
  upstreamPath(p, modelId, call) {
    const query = call.alt === '' ? '' : `?alt=${encodeURIComponent(call.alt)}`;
    return endpointPath(p, `${modelPath(modelId)}:${call.action}${query}`, '/v1beta');
  },
  defaultHeaders: {},
  authHeaders(p) {
    if (p.auth.type === 'none' || !p.auth.key) return {};
    const header = (p.auth.header ?? 'x-goog-api-key').toLowerCase();
    return { [header]: header === 'authorization' ? `Bearer ${p.auth.key}` : p.auth.key };
  },
  setModel() {
    // in the URL
  },
  getMaxTokens(body) {
    const g = body.generationConfig;
    return isObj(g) && typeof g.maxOutputTokens === 'number' ? g.maxOutputTokens : undefined;
  },
  setMaxTokens(body, n) {
    objectAt(body, 'generationConfig').maxOutputTokens = n;
  },
  applyThinking(body, level, model) {
    if (model === null || !model.capabilities.includes('reasoning')) return ['generationConfig.thinkingConfig'];
    const g = isObj(body.generationConfig) ? body.generationConfig : undefined;
    const maxTokens = typeof g?.maxOutputTokens === 'number' ? g.maxOutputTokens : undefined;
    const params = applyThinking(model.thinking === 'gemini-level' ? 'gemini-level' : 'gemini-budget', level, model, maxTokens);
    if (Object.keys(params).length === 0) return ['generationConfig.thinkingConfig'];
    const tc = objectAt(objectAt(body, 'generationConfig'), 'thinkingConfig');
    delete tc.thinkingBudget;
    delete tc.thinkingLevel;
    Object.assign(tc, params);
    return [];
  },
  stripExcluded,
  usageOf(json) {
    // streamGenerateContent without alt=sse answers a JSON array of chunks; the last report is the answer's.
    const chunks = Array.isArray(json) ? json : [json];
    // The grounding's queries may come on other chunks than the last report: the distinct ones over them all.
    const grounding = new GroundingQueries();
    for (const c of chunks) grounding.add(c);
    for (let i = chunks.length - 1; i >= 0; i--) {
      const c: unknown = chunks[i];
      const u = isObj(c) ? geminiUsage(c.usageMetadata) : null;
      if (u !== null) return withGrounding(u, grounding.count);
    }
    return null;
  },
  terminalError: (code, message) => new GeminiStreamRenderer('').error(code, message),
};
