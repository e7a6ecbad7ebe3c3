// Token estimates for the usage an upstream never reported (issue 13 item 6): the input from the request that was
// sent, the output from the text that was streamed or answered. OpenAI-family models are counted exactly with
// their own BPE encoding (`gpt-tokenizer`: o200k_base, or cl100k_base for gpt-3.5 / gpt-4); other families are an
// approximation: the o200k_base count scaled by a per-family factor. docs/recording.md gives the rules and their
// error. The encodings are loaded on first use (about 0.45 s and 65 MB for o200k_base), never at start-up, and
// only a request whose usage is missing ever gets here.

import type { WireFormat } from '../config/types.js';
import type { CanonicalRequest, Part } from './canonical.js';
import { knowsInput, knowsOutput, type Usage } from '../ledger/types.js';

export type Encoding = 'o200k_base' | 'cl100k_base';

/** How a model's tokens are counted: its encoding and the factor that scales that count to the family's own. */
export interface TokenFamily {
  readonly name: 'openai' | 'anthropic' | 'gemini' | 'other';
  readonly encoding: Encoding;
  /** 1 for OpenAI models (the count is theirs); an approximation otherwise (docs/recording.md). */
  readonly factor: number;
}

/** Claude's tokenizer gives about 15-25 % more tokens than o200k_base for the same English text or code. */
export const ANTHROPIC: TokenFamily = Object.freeze({ name: 'anthropic', encoding: 'o200k_base', factor: 1.2 });
/** Gemini's SentencePiece vocabulary (256k) is as large as o200k: counts agree within about 10 %. */
export const GEMINI: TokenFamily = Object.freeze({ name: 'gemini', encoding: 'o200k_base', factor: 1 });
export const OPENAI_O200K: TokenFamily = Object.freeze({ name: 'openai', encoding: 'o200k_base', factor: 1 });
export const OPENAI_CL100K: TokenFamily = Object.freeze({ name: 'openai', encoding: 'cl100k_base', factor: 1 });
/** Open models behind OpenAI-compatible vendors (Llama 3, Qwen, DeepSeek, Mistral): large BPE vocabularies too. */
export const OTHER: TokenFamily = Object.freeze({ name: 'other', encoding: 'o200k_base', factor: 1 });

/** OpenAI's own model ids (a vendor prefix such as `openai/` is ignored). */
const OPENAI_ID = /^(gpt-|chatgpt-|codex-|o\d(-|$)|text-embedding-|computer-use-)/;
/** gpt-3.5 and gpt-4 (not gpt-4o, gpt-4.1, gpt-4.5) use cl100k_base; every later model o200k_base. */
const CL100K_ID = /^(gpt-3\.5|gpt-4(-|$))/;

/** The family of a model: from its id when it names a known family, else from the provider's wire format. */
export function familyOf(format: WireFormat, modelId: string): TokenFamily {
  const id = modelId.toLowerCase().slice(modelId.lastIndexOf('/') + 1);
  if (id.includes('claude')) return ANTHROPIC;
  if (id.includes('gemini') || id.includes('gemma')) return GEMINI;
  if (OPENAI_ID.test(id)) return CL100K_ID.test(id) ? OPENAI_CL100K : OPENAI_O200K;
  if (format === 'anthropic') return ANTHROPIC;
  if (format === 'gemini') return GEMINI;
  return OTHER;
}

/**
 * OpenAI's documented chat overhead ("How to count tokens with tiktoken", OpenAI Cookbook): every message costs
 * 3 tokens besides its role and content, a message with a `name` 1 more, and every reply is primed with 3.
 */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const REPLY_PRIMING = 3;
/**
 * Media the gateway does not decode gets a fixed allowance per part: an image 765 tokens (OpenAI's count for a
 * 1024 x 1024 image at high detail: 85 + 4 tiles x 170), 85 at detail `low`; a file 1,500 (one page of a PDF at
 * the low end of Anthropic's 1,500-3,000 per page); audio 960 (30 seconds at Gemini's 32 tokens per second).
 */
export const MEDIA_ALLOWANCE = Object.freeze({ image: 765, imageLow: 85, file: 1500, audio: 960 });

/** Text is counted in pieces of at most this many characters, cut at a space where there is one (see `count`). */
const PIECE = 2000;
/** Past this many characters in one estimate, the rest is counted as characters / 4 (bounds the time spent). */
const EXACT_CHARS = 2_000_000;

interface Tokenizer {
  countTokens(text: string): number;
}

const loading = new Map<Encoding, Promise<Tokenizer>>();
/** The tokenizers imported so far: what `estimateInputNow` may count with without loading one. */
const loaded = new Map<Encoding, Tokenizer>();

/** The encoding's tokenizer, imported the first time it is needed. */
function tokenizer(encoding: Encoding): Promise<Tokenizer> {
  let t = loading.get(encoding);
  if (t === undefined) {
    t = encoding === 'o200k_base' ? import('gpt-tokenizer/encoding/o200k_base') : import('gpt-tokenizer/encoding/cl100k_base');
    loading.set(encoding, t);
    t.then((tok) => loaded.set(encoding, tok), () => undefined);
  }
  return t;
}

/**
 * Counts text with one tokenizer. BPE on one long run without spaces is quadratic in `gpt-tokenizer` (100 KB of
 * 'a' takes seconds), so text is cut into pieces of at most PIECE characters, at a space when there is one: the
 * tokenizer splits words at spaces anyway, so ordinary text counts exactly as a whole; only a long run is cut.
 * Without a tokenizer (null: not loaded, and not to be loaded for this count) every text is characters / 4.
 */
class Counter {
  #chars = 0;
  tokens = 0;
  constructor(private readonly tok: Tokenizer | null) {}

  text(s: string): void {
    if (s === '') return;
    if (this.tok === null || this.#chars + s.length > EXACT_CHARS) {
      this.tokens += Math.ceil(s.length / 4);
      return;
    }
    this.#chars += s.length;
    for (let i = 0; i < s.length; ) {
      let end = Math.min(s.length, i + PIECE);
      if (end < s.length) {
        const space = s.lastIndexOf(' ', end);
        if (space > i) end = space;
      }
      this.tokens += this.tok.countTokens(i === 0 && end === s.length ? s : s.slice(i, end));
      i = end;
    }
  }
}

/** A request as the gateway sent it: in the canonical model, or the OpenAI Chat body the fast path forwards. */
export type SentRequest = { readonly canonical: CanonicalRequest } | { readonly chat: Readonly<Record<string, unknown>> };

/** The input tokens of a request: its messages' text with OpenAI's chat overhead, tools, and media allowances. */
export async function estimateInput(req: SentRequest, family: TokenFamily): Promise<number> {
  return countInput(new Counter(await tokenizer(family.encoding)), req, family);
}

/**
 * `estimateInput` at once, for a reader that may not wait or load (the live monitor, GET /api/live): counted with the
 * family's tokenizer when an estimate has loaded it already, else every text at characters / 4 (the same walk: chat
 * overhead, tools, media allowances; the family's factor).
 */
export function estimateInputNow(req: SentRequest, family: TokenFamily): number {
  return countInput(new Counter(loaded.get(family.encoding) ?? null), req, family);
}

function countInput(c: Counter, req: SentRequest, family: TokenFamily): number {
  const media = 'canonical' in req ? countCanonical(c, req.canonical) : countChat(c, req.chat);
  return Math.round((c.tokens + REPLY_PRIMING) * family.factor) + media;
}

/** The output tokens of the text a model produced (content, reasoning or tool calls). */
export async function estimateOutput(text: string, family: TokenFamily): Promise<number> {
  if (text === '') return 0;
  const c = new Counter(await tokenizer(family.encoding));
  c.text(text);
  return Math.round(c.tokens * family.factor);
}

/** The media allowance of one part (0 for text). */
function mediaTokens(p: Part): number {
  if (p.type === 'image') return p.detail === 'low' ? MEDIA_ALLOWANCE.imageLow : MEDIA_ALLOWANCE.image;
  if (p.type === 'file') return MEDIA_ALLOWANCE.file;
  if (p.type === 'audio') return MEDIA_ALLOWANCE.audio;
  return 0;
}

/** Counts the parts' text into `c`; returns their media allowance. */
function countParts(c: Counter, parts: readonly Part[]): number {
  let media = 0;
  for (const p of parts) {
    switch (p.type) {
      case 'text':
      case 'reasoning':
        c.text(p.text);
        break;
      case 'tool_call':
        c.text(p.name);
        c.text(p.arguments);
        break;
      case 'tool_result':
        if (p.name !== undefined) c.text(p.name);
        media += countParts(c, p.content);
        break;
      default:
        media += mediaTokens(p);
    }
  }
  return media;
}

function countCanonical(c: Counter, r: CanonicalRequest): number {
  let media = 0;
  if (r.system.length > 0) {
    c.tokens += TOKENS_PER_MESSAGE;
    c.text('system');
    media += countParts(c, r.system);
  }
  for (const m of r.messages) {
    c.tokens += TOKENS_PER_MESSAGE;
    c.text(m.role);
    media += countParts(c, m.content);
  }
  for (const t of r.tools ?? []) c.text(JSON.stringify(t));
  if (r.responseFormat?.type === 'json_schema') c.text(JSON.stringify(r.responseFormat.schema));
  return media;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** An OpenAI Chat content value (a string or an array of parts); returns its media allowance. */
function countChatContent(c: Counter, content: unknown): number {
  if (typeof content === 'string') {
    c.text(content);
    return 0;
  }
  if (!Array.isArray(content)) return 0;
  let media = 0;
  for (const p of content) {
    if (!isObj(p)) continue;
    if (p.type === 'text') c.text(str(p.text));
    else if (p.type === 'refusal') c.text(str(p.refusal));
    else if (p.type === 'image_url') media += isObj(p.image_url) && p.image_url.detail === 'low' ? MEDIA_ALLOWANCE.imageLow : MEDIA_ALLOWANCE.image;
    else if (p.type === 'file') media += MEDIA_ALLOWANCE.file;
    else if (p.type === 'input_audio') media += MEDIA_ALLOWANCE.audio;
  }
  return media;
}

function countChat(c: Counter, body: Readonly<Record<string, unknown>>): number {
  let media = 0;
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    if (!isObj(m)) continue;
    c.tokens += TOKENS_PER_MESSAGE;
    c.text(str(m.role));
    if (typeof m.name === 'string') {
      c.tokens += TOKENS_PER_NAME;
      c.text(m.name);
    }
    media += countChatContent(c, m.content);
    for (const call of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
      const fn = isObj(call) && isObj(call.function) ? call.function : {};
      c.text(str(fn.name));
      c.text(str(fn.arguments));
    }
    if (isObj(m.function_call)) {
      c.text(str(m.function_call.name));
      c.text(str(m.function_call.arguments));
    }
  }
  for (const key of ['tools', 'functions'] as const) {
    const list = body[key];
    if (Array.isArray(list)) for (const t of list) c.text(JSON.stringify(t));
  }
  const format = body.response_format;
  if (isObj(format) && format.type === 'json_schema' && isObj(format.json_schema)) c.text(JSON.stringify(format.json_schema));
  return media;
}

/**
 * What an answer said, gathered as it passes: references to the delta strings the codecs already parsed (no copy of
 * the body), joined only when an estimate is needed. Reasoning is kept apart: it has its own bucket and price.
 */
export class AnswerText {
  readonly #output: string[] = [];
  readonly #reasoning: string[] = [];

  output(s: string): void {
    if (s !== '') this.#output.push(s);
  }

  reasoning(s: string): void {
    if (s !== '') this.#reasoning.push(s);
  }

  /** Some text was produced. */
  get seen(): boolean {
    return this.#output.length > 0 || this.#reasoning.length > 0;
  }

  get outputText(): string {
    return this.#output.join('');
  }

  get reasoningText(): string {
    return this.#reasoning.join('');
  }
}

/** The text of a whole answer's parts (text, reasoning, tool calls). */
export function answerOf(content: readonly Part[]): AnswerText {
  const answer = new AnswerText();
  for (const p of content) {
    if (p.type === 'text') answer.output(p.text);
    else if (p.type === 'reasoning') answer.reasoning(p.text);
    else if (p.type === 'tool_call') answer.output(p.name + p.arguments);
  }
  return answer;
}

/**
 * The usage with every side the upstream did not report filled with an estimate, or null when both sides were
 * reported. A reported bucket is never replaced: a side (input: input, cached, cache write; output: output,
 * reasoning) with any reported bucket is kept whole.
 */
export async function estimateMissing(u: Usage, req: SentRequest, answer: AnswerText, family: TokenFamily): Promise<Usage | null> {
  const needInput = !knowsInput(u);
  const needOutput = !knowsOutput(u);
  if (!needInput && !needOutput) return null;
  const input = needInput ? await estimateInput(req, family) : u.input;
  if (!needOutput) return { ...u, input };
  const reasoning = answer.reasoningText;
  return {
    ...u,
    input,
    output: await estimateOutput(answer.outputText, family),
    reasoning: reasoning === '' ? null : await estimateOutput(reasoning, family),
  };
}
