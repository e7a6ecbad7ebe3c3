// A fake Gemini API upstream (generativelanguage v1beta) on a real socket (127.0.0.1, port 0), speaking the REST
// wire format as Google serves it:
//
// - POST /v1beta/models/{model}:generateContent -> one GenerateContentResponse (JSON): candidates[0].content.parts,
//   finishReason, usageMetadata, modelVersion, responseId.
// - POST /v1beta/models/{model}:streamGenerateContent?alt=sse -> SSE, each frame `data: <GenerateContentResponse>`
//   followed by CRLF CRLF, no event names and no [DONE]. usageMetadata is cumulative and repeated on every chunk
//   (candidatesTokenCount grows, the prompt counts repeat); finishReason is on the last chunk only. Without
//   `alt=sse` the same chunks come as one JSON array, as the real API does.
// - generationConfig.candidateCount n (non-streamed): n candidates (index 0..n-1), each the same answer, as the API
//   returns n samples; responseLogprobs: each candidate has a logprobsResult, one chosen candidate per answer word
//   (logProbability -0.1 x its position from 1) with `logprobs` top candidates each (the chosen one first, then
//   `alt<k>` tokens a unit below).
// - POST /v1beta/models/{model}:countTokens -> `{totalTokens, promptTokensDetails}` (one token per word).
// - The key is the `x-goog-api-key` header (or `?key=`); a missing or wrong key is 401 with Gemini's error body
//   `{error: {code, message, status: 'UNAUTHENTICATED'}}`. Every error body has that shape.
// - Unknown fields in the request (top level, generationConfig, thinkingConfig, parts, function declarations) are
//   400 INVALID_ARGUMENT, as the real API rejects them ("Invalid JSON payload received. Unknown name ..."), so a
//   gateway that sends a field Gemini does not know fails here as it would in production. So is a thoughtSignature
//   in the history that this fake did not issue (the real API: "Thought signature is not valid"), which catches
//   another family's opaque reasoning data being sent to Gemini. For gemini-3* models, a functionCall in the current
//   turn's history without its thoughtSignature is also 400, as Gemini 3 validates it.
//
// Usage: Gemini counts cached tokens INSIDE promptTokenCount and thinking tokens OUTSIDE candidatesTokenCount, so
// totalTokenCount = promptTokenCount + candidatesTokenCount + thoughtsTokenCount. The default report is chosen so
// that every bucket has its own number (hand computation, docs/translation.md "Usage"):
//
//   promptTokenCount 30 (cachedContentTokenCount 12 of them), candidatesTokenCount 8, thoughtsTokenCount 6, total 44
//   -> input 30 - 12 = 18, cached 12, cache write null, output 8, reasoning 6; the buckets sum to 44.
//
// Streamed, the same final numbers arrive cumulatively: every chunk carries the prompt, cached and thoughts counts
// and the candidates count so far, floor(8 x (i + 1) / n) for chunk i of n (omitted while 0, as proto3 JSON omits
// zeros); only the last chunk has 8. With the 5 default words: 1, 3, 4, 6, 8. A gateway that added the reports up
// instead of keeping the last one would record several times these numbers.
//
// Tests script what it does next with `next(...)` (when the queue is empty: 'ok' with defaults); it records every
// request it receives (path, headers, parsed body).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { ChunkCounter, flushed, listenLoopback } from './loopback.js';

export interface GeminiUsage {
  promptTokenCount: number;
  candidatesTokenCount: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
}

/** 30 prompt (12 cached), 8 candidates, 6 thoughts: input 18, cached 12, output 8, reasoning 6, total 44. */
export const DEFAULT_USAGE: GeminiUsage = { promptTokenCount: 30, cachedContentTokenCount: 12, candidatesTokenCount: 8, thoughtsTokenCount: 6 };
export const DEFAULT_WORDS = ['Hello', ' from', ' the', ' fake', ' Gemini'];
export const DEFAULT_TEXT = DEFAULT_WORDS.join('');
export const DEFAULT_THOUGHT = '**Planning the answer**\n\nThe user said hi; I will greet them back.';
export const DEFAULT_SIGNATURE = 'CiQBVKhc7vB0fake+thought/signature==';
export const DEFAULT_ARGS: Record<string, unknown> = { city: 'Paris', unit: 'celsius' };

interface Common {
  usage?: GeminiUsage;
  /** Leave usageMetadata out of every chunk (and of the JSON answer). */
  omitUsage?: boolean;
  /** Wait before the response starts. */
  delayMs?: number;
  /** Wait before each streamed chunk. */
  chunkDelayMs?: number;
}

export type GeminiBehaviour =
  /** A text answer, one word per streamed chunk. */
  | ({ kind: 'ok'; words?: string[] } & Common)
  /**
   * The model calls a tool from the request: one functionCall part (whole, never split, no id: the Gemini API does
   * not send one) with an args object, finishReason STOP. `name` defaults to the first declared function; the
   * request must declare it. Optional `text` comes first (its own chunk when streamed). `signature`: a
   * thoughtSignature on the functionCall part, as Gemini 3 sends on the first call of each step. `more`: the args of
   * further calls of the same function in the same chunk (parallel function calls), one part each.
   */
  | ({ kind: 'call'; name?: string; args?: Record<string, unknown>; text?: string; signature?: string; more?: Record<string, unknown>[] } & Common)
  /** Send `chunks` text chunks, then a `data: {"error": ...}` frame (`status`, default 503 UNAVAILABLE), then end. */
  | { kind: 'stream-error'; chunks: number; status?: number; message?: string }
  /** A thought part (`thought: true`) carrying a thoughtSignature, then the text answer. */
  | ({ kind: 'thought'; thought?: string; signature?: string; words?: string[] } & Common)
  /** An error status with Gemini's error body; `headers` are added (e.g. retry-after). */
  | { kind: 'error'; status: number; message?: string; googleStatus?: string; details?: unknown[]; headers?: Record<string, string> }
  /** Send `chunks` text chunks (streamed), or the first half of the JSON (not streamed), then nothing more. */
  | { kind: 'stall'; chunks: number }
  /** Send `chunks` text chunks (streamed), or the first half of the JSON (not streamed), then close the socket. */
  | { kind: 'cut'; chunks: number };

export interface GeminiReceived {
  /** The request path with its query, e.g. `/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`. */
  readonly path: string;
  readonly model: string;
  readonly action: 'generateContent' | 'streamGenerateContent' | 'countTokens';
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

export interface FakeGemini {
  /** base_url for the provider config (ends in /v1beta). */
  readonly baseUrl: string;
  /** The key the fake accepts. */
  readonly key: string;
  readonly received: GeminiReceived[];
  /** Queue behaviours for the next requests; when the queue is empty, 'ok' with defaults. */
  next(...b: GeminiBehaviour[]): void;
  /**
   * What to answer when the queue is empty (default: 'ok'), decided from the request: for a real client that sends
   * a varying number of requests (a CLI agent's tool round), where a fixed queue cannot stay in step.
   */
  answerWith(decide: (r: GeminiReceived) => GeminiBehaviour): void;
  /** Resolves once `n` streamed chunks have been written in total. */
  waitForChunks(n: number): Promise<void>;
  /** How many responses the gateway hung up on before they finished. */
  readonly aborted: number;
  /**
   * Headers sent on every later answer, whatever its behaviour (e.g. the provider's rate-limit headers, which
   * docs/quota.md lists); `{}` (the default) sends none.
   */
  setResponseHeaders(h: Record<string, string>): void;
  close(): Promise<void>;
}

// google.rpc status names by HTTP status, as Gemini puts them in error.status.
const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Gemini's error body. */
export function geminiError(code: number, message: string, status = GOOGLE_STATUS[code] ?? 'UNKNOWN', details?: unknown[]): Record<string, unknown> {
  return { error: { code, message, status, ...(details ? { details } : {}) } };
}

// The fields the v1beta API knows (GenerateContentRequest and the messages inside it). Anything else is a 400.
const KNOWN = {
  request: ['model', 'contents', 'tools', 'toolConfig', 'safetySettings', 'systemInstruction', 'generationConfig', 'cachedContent'],
  content: ['role', 'parts'],
  part: ['text', 'thought', 'thoughtSignature', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult', 'videoMetadata', 'partMetadata'],
  generationConfig: [
    'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', '_responseJsonSchema', 'responseModalities', 'candidateCount',
    'maxOutputTokens', 'temperature', 'topP', 'topK', 'seed', 'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs',
    'enableEnhancedCivicAnswers', 'speechConfig', 'thinkingConfig', 'imageConfig', 'mediaResolution',
  ],
  thinkingConfig: ['includeThoughts', 'thinkingBudget', 'thinkingLevel'],
  tool: ['functionDeclarations', 'googleSearch', 'googleSearchRetrieval', 'codeExecution', 'urlContext', 'computerUse', 'fileSearch', 'googleMaps'],
  functionDeclaration: ['name', 'description', 'behavior', 'parameters', 'parametersJsonSchema', 'response', 'responseJsonSchema'],
};

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

class BadRequest extends Error {}

function unknownIn(o: unknown, known: readonly string[], at: string): void {
  if (!isObj(o)) throw new BadRequest(`Invalid value at '${at}': expected an object`);
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw new BadRequest(`Invalid JSON payload received. Unknown name "${k}" at '${at}': Cannot find field.`);
  }
}

/**
 * What the real API rejects before generating: unknown fields, empty contents or parts, a bad thinking budget, a
 * thought signature it did not issue.
 */
function validate(body: Json, issued: ReadonlySet<string>, model: string): void {
  unknownIn(body, KNOWN.request, 'request');
  if (!Array.isArray(body.contents) || body.contents.length === 0) throw new BadRequest('* GenerateContentRequest.contents: contents is not specified');
  body.contents.forEach((c, i) => {
    unknownIn(c, KNOWN.content, `contents[${i}]`);
    const parts = (c as Json).parts;
    if (!Array.isArray(parts) || parts.length === 0) throw new BadRequest(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`);
    parts.forEach((p, j) => {
      unknownIn(p, KNOWN.part, `contents[${i}].parts[${j}]`);
      const sig = (p as Json).thoughtSignature;
      if (sig !== undefined && (typeof sig !== 'string' || !issued.has(sig))) {
        throw new BadRequest(`Unable to submit request because Thought signature is not valid (contents[${i}].parts[${j}]).`);
      }
    });
  });
  if (model.startsWith('gemini-3')) currentTurnSignatures(body.contents as Json[]);
  if (body.systemInstruction !== undefined) {
    unknownIn(body.systemInstruction, KNOWN.content, 'system_instruction');
    const parts = (body.systemInstruction as Json).parts;
    if (Array.isArray(parts)) parts.forEach((p, j) => unknownIn(p, KNOWN.part, `system_instruction.parts[${j}]`));
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) throw new BadRequest("Invalid value at 'tools': expected a list");
    body.tools.forEach((tool, i) => {
      unknownIn(tool, KNOWN.tool, `tools[${i}]`);
      const decls = (tool as Json).functionDeclarations;
      if (decls === undefined) return;
      if (!Array.isArray(decls)) throw new BadRequest(`Invalid value at 'tools[${i}].function_declarations': expected a list`);
      decls.forEach((d, j) => {
        unknownIn(d, KNOWN.functionDeclaration, `tools[${i}].function_declarations[${j}]`);
        const fd = d as Json;
        if (typeof fd.name !== 'string' || fd.name === '') throw new BadRequest(`* GenerateContentRequest.tools[${i}].function_declarations[${j}].name: Name cannot be empty.`);
        if (fd.parameters !== undefined && fd.parametersJsonSchema !== undefined) {
          throw new BadRequest(`* GenerateContentRequest.tools[${i}].function_declarations[${j}]: parameters and parameters_json_schema are mutually exclusive.`);
        }
      });
    });
  }
  if (body.generationConfig !== undefined) {
    unknownIn(body.generationConfig, KNOWN.generationConfig, 'generation_config');
    const tc = (body.generationConfig as Json).thinkingConfig;
    if (tc !== undefined) {
      unknownIn(tc, KNOWN.thinkingConfig, 'generation_config.thinking_config');
      const b = (tc as Json).thinkingBudget;
      if (b !== undefined && (typeof b !== 'number' || !Number.isInteger(b) || b < -1 || b > 32768)) {
        throw new BadRequest('The thinking budget is invalid. Please specify a budget between -1 and 32768.');
      }
      if ((tc as Json).thinkingLevel !== undefined && b !== undefined) throw new BadRequest('thinking_budget and thinking_level are not supported together.');
    }
  }
}

/**
 * Gemini 3's strict validation: in the current turn (every content after the last user content with text), the
 * first functionCall part of each model step must carry its thoughtSignature, else 400. Earlier turns are not checked.
 */
function currentTurnSignatures(contents: Json[]): void {
  let start = 0;
  contents.forEach((c, i) => {
    if (c.role !== 'model' && (c.parts as Json[]).some((p) => typeof p.text === 'string')) start = i + 1;
  });
  for (let i = start; i < contents.length; i++) {
    const c = contents[i]!;
    if (c.role !== 'model') continue;
    const first = (c.parts as Json[]).find((p) => p.functionCall !== undefined);
    if (first && first.thoughtSignature === undefined) {
      throw new BadRequest(`Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${String((first.functionCall as Json).name)}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`);
    }
  }
}

/** The function names the request declares, in order. */
function declared(body: Json): string[] {
  const out: string[] = [];
  if (!Array.isArray(body.tools)) return out;
  for (const t of body.tools) {
    if (isObj(t) && Array.isArray(t.functionDeclarations)) for (const d of t.functionDeclarations) if (isObj(d) && typeof d.name === 'string') out.push(d.name);
  }
  return out;
}

/** usageMetadata with `candidates` output tokens so far (omitted while 0, as Gemini's proto3 JSON omits zeros). */
function usageJson(u: GeminiUsage, candidates: number): Json {
  const out: Json = { promptTokenCount: u.promptTokenCount };
  if (candidates > 0) out.candidatesTokenCount = candidates;
  out.totalTokenCount = u.promptTokenCount + candidates + (u.thoughtsTokenCount ?? 0);
  if (u.cachedContentTokenCount) out.cachedContentTokenCount = u.cachedContentTokenCount;
  out.promptTokensDetails = [{ modality: 'TEXT', tokenCount: u.promptTokenCount }];
  if (u.cachedContentTokenCount) out.cacheTokensDetails = [{ modality: 'TEXT', tokenCount: u.cachedContentTokenCount }];
  if (u.thoughtsTokenCount) out.thoughtsTokenCount = u.thoughtsTokenCount;
  return out;
}

type GPart = Json;


/** The chunks of one answer: the parts of each chunk, in order (the whole answer is their concatenation). */
function answerChunks(b: GeminiBehaviour, body: Json): GPart[][] {
  switch (b.kind) {
    case 'ok':
      return (b.words ?? DEFAULT_WORDS).map((w) => [{ text: w }]);
    case 'thought':
      return [[{ text: b.thought ?? DEFAULT_THOUGHT, thought: true, thoughtSignature: b.signature ?? DEFAULT_SIGNATURE }], ...(b.words ?? DEFAULT_WORDS).map((w) => [{ text: w }])];
    case 'call': {
      const names = declared(body);
      const name = b.name ?? names[0];
      if (name === undefined || !names.includes(name)) throw new BadRequest(`the fake was told to call ${name ?? 'a tool'}, but the request declares ${JSON.stringify(names)}`);
      const call: GPart[] = [
        { functionCall: { name, args: b.args ?? DEFAULT_ARGS }, ...(b.signature === undefined ? {} : { thoughtSignature: b.signature }) },
        ...(b.more ?? []).map((args) => ({ functionCall: { name, args } })),
      ];
      return b.text === undefined ? [call] : [[{ text: b.text }], call];
    }
    default:
      return DEFAULT_WORDS.map((w) => [{ text: w }]);
  }
}

/** A logprobsResult for an answer: one chosen candidate per text chunk, `top` candidates at each position. */
function logprobsResult(chunks: GPart[][], top: number): Json {
  const words = chunks.flat().flatMap((p) => (typeof p.text === 'string' && !p.thought ? [p.text] : []));
  const chosen = words.map((token, i) => ({ token, logProbability: -0.1 * (i + 1) }));
  return {
    topCandidates: chosen.map((c) => ({ candidates: Array.from({ length: top }, (_, k) => (k === 0 ? c : { token: `alt${k}`, logProbability: c.logProbability - k })) })),
    chosenCandidates: chosen,
    logProbabilitySum: chosen.reduce((sum, c) => sum + c.logProbability, 0),
  };
}

/** Merge the chunks into the parts of a whole answer (consecutive plain text parts joined, as the API returns them). */
function mergeParts(chunks: GPart[][]): GPart[] {
  const out: GPart[] = [];
  for (const p of chunks.flat()) {
    const last = out.at(-1);
    if (last && typeof last.text === 'string' && typeof p.text === 'string' && !last.thought && !p.thought && !last.thoughtSignature) last.text = last.text + p.text;
    else out.push({ ...p });
  }
  return out;
}

export async function startFakeGemini(t: { teardown(fn: () => unknown): void }, opts: { key?: string } = {}): Promise<FakeGemini> {
  let responseHeaders: Record<string, string> = {};
  const key = opts.key ?? 'AIzaSy-fake-upstream-key-0123456789';
  const queue: GeminiBehaviour[] = [];
  let decide: ((r: GeminiReceived) => GeminiBehaviour) | undefined;
  const received: GeminiReceived[] = [];
  // The signatures this fake issued, plus the two documented placeholders that skip the check.
  const issued = new Set<string>(['context_engineering_is_the_way_to_go', 'skip_thought_signature_validator']);
  let aborted = 0;
  let responses = 0;
  const sentChunks = new ChunkCounter();


  const sendError = (res: ServerResponse, code: number, message: string, status?: string, headers: Record<string, string> = {}, details?: unknown[]) => {
    res.writeHead(code, { 'content-type': 'application/json; charset=UTF-8', vary: 'Origin, X-Origin, Referer', ...headers });
    res.end(JSON.stringify(geminiError(code, message, status, details), null, 2));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    const m = /^\/v1beta\/models\/([^/:]+(?:\/[^/:]+)*):(generateContent|streamGenerateContent|countTokens)$/.exec(url.pathname);
    if (req.method !== 'POST' || !m) {
      sendError(res, 404, `Requested entity was not found: ${req.method} ${url.pathname}`);
      return;
    }
    let body: Json;
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(parts).toString('utf8'));
      if (!isObj(parsed)) throw new Error('not an object');
      body = parsed;
    } catch {
      sendError(res, 400, 'Invalid JSON payload received. Unexpected token.');
      return;
    }
    const model = decodeURIComponent(m[1]!);
    const action = m[2] as GeminiReceived['action'];
    received.push({ path: req.url ?? '', model, action, headers: req.headers, body });
    for (const [k, v] of Object.entries(responseHeaders)) res.setHeader(k, v);
    res.on('close', () => {
      if (!res.writableFinished) aborted++;
    });

    // Every request that reaches a model route takes the next behaviour, even one rejected below (401, 400), so
    // the queue stays in step with the requests.
    const b: GeminiBehaviour = queue.shift() ?? decide?.(received.at(-1)!) ?? { kind: 'ok' };
    const given = req.headers['x-goog-api-key'] ?? url.searchParams.get('key') ?? undefined;
    if (given !== key) {
      sendError(res, 401, given === undefined ? 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.' : 'API key not valid. Please pass a valid API key.');
      return;
    }
    if (b.kind === 'error') {
      sendError(res, b.status, b.message ?? `fake error ${b.status}`, b.googleStatus, b.headers, b.details);
      return;
    }
    if (action === 'countTokens') {
      // One token per word of the contents' text, as a stand-in for Gemini's counter.
      const words = JSON.stringify(body.contents ?? body.generateContentRequest ?? '').split(/\s+/).length;
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(JSON.stringify({ totalTokens: words, promptTokensDetails: [{ modality: 'TEXT', tokenCount: words }] }));
      return;
    }
    let chunks: GPart[][];
    try {
      validate(body, issued, model);
      chunks = answerChunks(b, body);
      for (const p of chunks.flat()) if (typeof p.thoughtSignature === 'string') issued.add(p.thoughtSignature);
    } catch (err) {
      if (!(err instanceof BadRequest)) throw err;
      sendError(res, 400, err.message);
      return;
    }
    const common: Common = b.kind === 'stall' || b.kind === 'cut' || b.kind === 'stream-error' ? {} : b;
    const usage = common.usage ?? DEFAULT_USAGE;
    if (common.delayMs) await new Promise((r) => setTimeout(r, common.delayMs));
    if (res.destroyed) return;
    responses++;
    const responseId = `fakeResp${String(responses).padStart(4, '0')}xYz`;
    const wrap = (o: Json): Json => ({ ...o, modelVersion: model, responseId });
    const candidate = (p: GPart[], finish: boolean): Json => ({ content: { parts: p, role: 'model' }, ...(finish ? { finishReason: 'STOP' } : {}), index: 0 });

    if (action === 'generateContent') {
      const gen = isObj(body.generationConfig) ? body.generationConfig : {};
      const count = typeof gen.candidateCount === 'number' ? gen.candidateCount : 1;
      const logprobs = gen.responseLogprobs === true ? logprobsResult(chunks, typeof gen.logprobs === 'number' ? gen.logprobs : 0) : undefined;
      const candidates = Array.from({ length: count }, (_, i) => ({ ...candidate(mergeParts(chunks), true), index: i, ...(logprobs === undefined ? {} : { logprobsResult: logprobs }) }));
      const whole = wrap({ candidates, ...(common.omitUsage ? {} : { usageMetadata: usageJson(usage, usage.candidatesTokenCount) }) });
      const text = JSON.stringify(whole, null, 2);
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8', vary: 'Origin, X-Origin, Referer', 'server-timing': 'gfet4t7; dur=412' });
      if (b.kind === 'stall' || b.kind === 'cut' || b.kind === 'stream-error') {
        await flushed(res, text.slice(0, Math.floor(text.length / 2)));
        if (b.kind === 'cut') res.socket?.destroy();
        return;
      }
      res.end(text);
      return;
    }

    // Streamed. The cumulative candidates count of chunk i grows to the total on the last chunk.
    const limit = b.kind === 'stall' || b.kind === 'cut' || b.kind === 'stream-error' ? b.chunks : chunks.length;
    const frames: Json[] = [];
    for (let i = 0; i < limit; i++) {
      const last = i === chunks.length - 1;
      const candidates = last ? usage.candidatesTokenCount : Math.floor((usage.candidatesTokenCount * (i + 1)) / chunks.length);
      frames.push(wrap({ candidates: [candidate(chunks[i % chunks.length]!, last && limit === chunks.length)], ...(common.omitUsage ? {} : { usageMetadata: usageJson(usage, candidates) }) }));
    }
    if (url.searchParams.get('alt') !== 'sse') {
      // Without alt=sse the API streams one JSON array of the same chunks.
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(`[${frames.map((f) => JSON.stringify(f)).join(',\r\n')}]`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-disposition': 'attachment', vary: 'Origin, X-Origin, Referer', 'transfer-encoding': 'chunked' });
    for (const f of frames) {
      if (common.chunkDelayMs) await new Promise((r) => setTimeout(r, common.chunkDelayMs));
      if (res.destroyed) return;
      // Flushed before the next step, so that a cut comes after the chunks have really left.
      await flushed(res, `data: ${JSON.stringify(f)}\r\n\r\n`);
      sentChunks.sent();
    }
    if (b.kind === 'stall') return; // the socket stays open, silent
    if (b.kind === 'cut') {
      res.socket?.destroy();
      return;
    }
    if (b.kind === 'stream-error') {
      const code = b.status ?? 503;
      res.end(`data: ${JSON.stringify(geminiError(code, b.message ?? 'The model is overloaded. Please try again later.'))}\r\n\r\n`);
      return;
    }
    res.end();
  };

  const { port, close } = await listenLoopback(t, handle, (err, res) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(JSON.stringify(geminiError(500, `fake-gemini: ${(err as Error).message}`)));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}/v1beta`,
    key,
    received,
    next: (...b) => queue.push(...b),
    answerWith: (fn) => {
      decide = fn;
    },
    waitForChunks: (n) => sentChunks.waitFor(n),
    get aborted() {
      return aborted;
    },
    setResponseHeaders: (h) => {
      responseHeaders = { ...h };
    },
    close,
  };
}

/** Prices of `geminiProvider` (USD per 1M tokens); reasoning has no price of its own, so it is billed as output. */
export const GEMINI_PRICE = { input: 2, output: 12, cached: 0.5 };

/**
 * A provider config row for the fake: format gemini, the fake's key as api_key, a 1 s stall timeout. Models:
 * gemini-2.5-flash (thinking: gemini-budget), gemini-3-pro-preview (thinking: gemini-level), both with
 * [tools, vision, reasoning]; gemini-2.0-flash with [tools, vision] only (no thinking parameter ever reaches it).
 */
export function geminiProvider(fake: Pick<FakeGemini, 'baseUrl' | 'key'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Fake Gemini',
    group: 'paid',
    format: 'gemini',
    base_url: fake.baseUrl,
    auth: { type: 'api_key', key: fake.key },
    price: GEMINI_PRICE,
    timeouts: { connect_s: 2, stall_s: 1 },
    models: {
      'gemini-2.5-flash': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'gemini-budget' },
      'gemini-3-pro-preview': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'gemini-level' },
      'gemini-2.0-flash': { kind: 'llm', capabilities: ['tools', 'vision'] },
    },
    ...extra,
  };
}
