// Anthropic content blocks <-> canonical parts, for requests (client history) and answers.
//
// Thinking signatures and redacted thinking are tagged origin 'anthropic'; only untagged or Anthropic-tagged opaque
// data is ever sent back to Anthropic (or shown to an Anthropic client): another family's is dropped.
//
// Parsing keeps what the canonical model can hold, cache_control markers included (on text, image, document,
// tool_use and tool_result blocks). A search_result block is carried as text: its title and source on a first line,
// then its text. What the canonical model cannot hold is dropped without error and listed (BlockContext.unmapped),
// under its path without indexes: `citations` turned on for a document or search result and a document's `context`
// (`messages.content.citations`, `messages.content.context`), and every other block type, by its type
// (`messages.content.container_upload`, `messages.content.server_tool_use`, ...). A document's title becomes the
// file part's filename. A plain-text document (source type 'text') becomes a file part with base64 UTF-8 data and
// media type text/plain, which building turns back into a text source; a 'content' document source contributes its
// text and image blocks as parts. A file id is tagged as Anthropic's (origin), so no other family is sent it.
//
// Building skips what Anthropic cannot take in that place: empty text blocks (rejected by the API), audio,
// images/files in an assistant turn, reasoning in a user turn and reasoning without a signature (another family's).
// A file part becomes a document only as a PDF or text (an image file becomes an image block): the build removed
// and listed files of any other stated type beforehand (withoutForeignFiles, src/wire/fields.ts).
// Tool calls always go to an assistant turn and tool results to a user turn. Tool ids are kept, with characters
// outside Anthropic's id pattern [a-zA-Z0-9_-] replaced by '_' (the same way for the call and its result, so they
// still pair).

import type { CacheControl, MediaSource, Part } from '../canonical.js';
import { cacheControlJson, parseCacheControl } from '../fields.js';
import { argumentsObject, invalid, isObj, str, type Json } from './json.js';

// ---------------------------------------------------------------------------------------------------- parse side

function source(raw: unknown, param: string): MediaSource | { kind: 'text'; text: string } | { kind: 'content'; content: unknown } {
  if (!isObj(raw)) invalid(`${param} must be an object`, param);
  switch (raw.type) {
    case 'base64': {
      const data = str(raw.data);
      const mediaType = str(raw.media_type);
      if (data === undefined || mediaType === undefined) invalid(`${param} of type base64 needs string media_type and data`, param);
      return { kind: 'base64', mediaType, data };
    }
    case 'url': {
      const url = str(raw.url);
      if (url === undefined) invalid(`${param}.url must be a string`, `${param}.url`);
      return { kind: 'url', url };
    }
    case 'file': {
      const id = str(raw.file_id);
      if (id === undefined) invalid(`${param}.file_id must be a string`, `${param}.file_id`);
      return { kind: 'file_id', id, origin: 'anthropic' };
    }
    case 'text': {
      const text = str(raw.data);
      if (text === undefined) invalid(`${param}.data must be a string`, `${param}.data`);
      return { kind: 'text', text };
    }
    case 'content':
      return { kind: 'content', content: raw.content };
    default:
      return invalid(`${param}.type must be one of base64, url, file, text, content`, `${param}.type`);
  }
}

/** What parsing a request's blocks gathers beside the parts. */
export interface BlockContext {
  /** Tool names by tool_use id, so a tool_result part can carry the name of the call it answers. */
  readonly names: Map<string, string>;
  /** What the canonical model has no place for, as an Anthropic client names it: listed as dropped. */
  readonly unmapped: Set<string>;
}

/** The name a dropped key of the block at `param` is listed under: its path without indexes. */
const listed = (param: string, key: string): string => `${param.replace(/\[\d+\]/g, '')}.${key}`;

/** A document's or search result's citations, when turned on: no other format can cite a block. */
function noteCitations(b: Json, param: string, ctx: BlockContext): void {
  if (isObj(b.citations) && b.citations.enabled === true) ctx.unmapped.add(listed(param, 'citations'));
}

/** One request content block -> parts ([] for a block the canonical model cannot hold), with its cache_control. */
function parseBlock(b: unknown, param: string, ctx: BlockContext): Part[] {
  if (!isObj(b)) invalid(`${param} must be an object`, param);
  const parts = blockParts(b, param, ctx);
  const cacheControl = parseCacheControl(b.cache_control, `${param}.cache_control`);
  const last = parts.at(-1);
  // The marker ends the cached prefix at this block: it goes on the block's last part.
  if (cacheControl === undefined || last === undefined || last.type === 'reasoning' || last.type === 'audio') return parts;
  return [...parts.slice(0, -1), { ...last, cacheControl }];
}

function blockParts(b: Json, param: string, ctx: BlockContext): Part[] {
  switch (b.type) {
    case 'text': {
      const text = str(b.text);
      if (text === undefined) invalid(`${param}.text must be a string`, `${param}.text`);
      return [{ type: 'text', text }];
    }
    case 'image': {
      const s = source(b.source, `${param}.source`);
      if (s.kind === 'text' || s.kind === 'content') invalid(`${param}.source.type must be base64, url or file for an image`, `${param}.source.type`);
      return [{ type: 'image', source: s }];
    }
    case 'document': {
      const s = source(b.source, `${param}.source`);
      const title = str(b.title);
      noteCitations(b, param, ctx);
      if (typeof b.context === 'string' && b.context !== '') ctx.unmapped.add(listed(param, 'context'));
      if (s.kind === 'content') {
        if (typeof s.content === 'string') return [{ type: 'text', text: s.content }];
        return parseBlocks(s.content, `${param}.source.content`, ctx);
      }
      const src: MediaSource = s.kind === 'text' ? { kind: 'base64', mediaType: 'text/plain', data: Buffer.from(s.text, 'utf8').toString('base64') } : s;
      return [title === undefined ? { type: 'file', source: src } : { type: 'file', source: src, filename: title }];
    }
    case 'tool_use': {
      const id = str(b.id);
      const name = str(b.name);
      if (id === undefined) invalid(`${param}.id must be a string`, `${param}.id`);
      if (name === undefined) invalid(`${param}.name must be a string`, `${param}.name`);
      ctx.names.set(id, name);
      return [{ type: 'tool_call', id, name, arguments: JSON.stringify(b.input ?? {}) }];
    }
    case 'tool_result': {
      const callId = str(b.tool_use_id);
      if (callId === undefined) invalid(`${param}.tool_use_id must be a string`, `${param}.tool_use_id`);
      let content: Part[];
      if (b.content === undefined || b.content === null) content = [];
      else if (typeof b.content === 'string') content = [{ type: 'text', text: b.content }];
      else content = parseBlocks(b.content, `${param}.content`, ctx);
      if (b.is_error !== undefined && typeof b.is_error !== 'boolean') invalid(`${param}.is_error must be a boolean`, `${param}.is_error`);
      const name = ctx.names.get(callId);
      return [{ type: 'tool_result', callId, ...(name === undefined ? {} : { name }), content, ...(b.is_error === undefined ? {} : { isError: b.is_error }) }];
    }
    case 'thinking': {
      const text = str(b.thinking);
      if (text === undefined) invalid(`${param}.thinking must be a string`, `${param}.thinking`);
      const signature = str(b.signature);
      return [signature ? { type: 'reasoning', text, signature, origin: 'anthropic' } : { type: 'reasoning', text }];
    }
    case 'redacted_thinking': {
      const data = str(b.data);
      if (data === undefined) invalid(`${param}.data must be a string`, `${param}.data`);
      return [{ type: 'reasoning', text: '', opaque: data, redacted: true, origin: 'anthropic' }];
    }
    case 'search_result': {
      // What the model is to read: the result's text, after a line naming it.
      const texts = parseBlocks(b.content ?? [], `${param}.content`, ctx).flatMap((p) => (p.type === 'text' ? [p.text] : []));
      const title = str(b.title) ?? '';
      const from = str(b.source) ?? '';
      noteCitations(b, param, ctx);
      return [{ type: 'text', text: [`Search result: ${title}${from === '' ? '' : ` (${from})`}`, ...texts].join('\n') }];
    }
    default:
      if (typeof b.type !== 'string') invalid(`${param}.type must be a string`, `${param}.type`);
      ctx.unmapped.add(listed(param, b.type));
      return [];
  }
}

/** A request's `content`: a string or an array of blocks. */
export function parseBlocks(content: unknown, param: string, ctx: BlockContext): Part[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) invalid(`${param} must be a string or an array of content blocks`, param);
  return content.flatMap((b, i) => parseBlock(b, `${param}[${i}]`, ctx));
}

/** One block of an upstream answer (text, thinking, redacted_thinking, tool_use); null for the rest. */
export function parseAnswerBlock(b: unknown): Part | null {
  if (!isObj(b)) return null;
  switch (b.type) {
    case 'text':
      return { type: 'text', text: str(b.text) ?? '' };
    case 'thinking': {
      const signature = str(b.signature);
      return signature ? { type: 'reasoning', text: str(b.thinking) ?? '', signature, origin: 'anthropic' } : { type: 'reasoning', text: str(b.thinking) ?? '' };
    }
    case 'redacted_thinking':
      return { type: 'reasoning', text: '', opaque: str(b.data) ?? '', redacted: true, origin: 'anthropic' };
    case 'tool_use':
      return { type: 'tool_call', id: str(b.id) ?? '', name: str(b.name) ?? '', arguments: JSON.stringify(b.input ?? {}) };
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------------------------------- build side

/** Whether a reasoning part's opaque data (signature, redacted data) is Anthropic's: tagged so, or untagged. */
const ours = (p: { readonly origin?: string }): boolean => p.origin === undefined || p.origin === 'anthropic';

export const toolId = (id: string): string => id.replace(/[^a-zA-Z0-9_-]/g, '_');

const DATA_URL = /^data:([^;,]+)((?:;[^;,]+)*);base64,(.*)$/s;

function buildSource(s: MediaSource): Json {
  switch (s.kind) {
    case 'base64':
      return { type: 'base64', media_type: s.mediaType, data: s.data };
    case 'file_id':
      return { type: 'file', file_id: s.id };
    case 'url': {
      // Anthropic's url source fetches http(s) only; a data: URL (OpenAI clients send images that way) is inlined.
      const m = DATA_URL.exec(s.url);
      return m ? { type: 'base64', media_type: m[1], data: m[3] } : { type: 'url', url: s.url };
    }
  }
}

function buildImage(source: MediaSource): Json {
  return { type: 'image', source: buildSource(source) };
}

function buildDocument(source: MediaSource, filename: string | undefined): Json {
  let src = buildSource(source);
  const mediaType = str(src.media_type);
  if (src.type === 'base64' && mediaType !== undefined) {
    // Anthropic documents are PDFs (base64) or plain text (text source); an image given as a file is an image block.
    if (mediaType.startsWith('image/')) return { type: 'image', source: src };
    if (mediaType.startsWith('text/')) src = { type: 'text', media_type: 'text/plain', data: Buffer.from(String(src.data), 'base64').toString('utf8') };
  }
  return filename === undefined ? { type: 'document', source: src } : { type: 'document', source: src, title: filename };
}

/** A block with the part's cache_control marker, when it has one. */
function cached(block: Json, c: CacheControl | undefined): Json {
  return c === undefined ? block : { ...block, cache_control: cacheControlJson(c) };
}

function buildToolResultContent(parts: readonly Part[]): string | Json[] {
  const blocks: Json[] = [];
  for (const p of parts) {
    if (p.type === 'text' && p.text !== '') blocks.push(cached({ type: 'text', text: p.text }, p.cacheControl));
    else if (p.type === 'image') blocks.push(cached(buildImage(p.source), p.cacheControl));
    else if (p.type === 'file') blocks.push(cached(buildDocument(p.source, p.filename), p.cacheControl));
  }
  // One plain text block is sent in the string form most clients use.
  return blocks.length === 1 && blocks[0]!.type === 'text' && blocks[0]!.cache_control === undefined ? String(blocks[0]!.text) : blocks;
}

export type AnthropicRole = 'user' | 'assistant';

/** The role a part must travel in, and its block; null when Anthropic has no place for it in that turn. */
export function buildBlock(p: Part, role: AnthropicRole): { role: AnthropicRole; block: Json } | null {
  switch (p.type) {
    case 'text':
      return p.text === '' ? null : { role, block: cached({ type: 'text', text: p.text }, p.cacheControl) };
    case 'image':
      return role === 'user' ? { role, block: cached(buildImage(p.source), p.cacheControl) } : null;
    case 'file':
      return role === 'user' ? { role, block: cached(buildDocument(p.source, p.filename), p.cacheControl) } : null;
    case 'audio':
      return null;
    case 'reasoning':
      if (role !== 'assistant' || !ours(p)) return null;
      if (p.redacted && p.opaque) return { role, block: { type: 'redacted_thinking', data: p.opaque } };
      if (p.signature) return { role, block: { type: 'thinking', thinking: p.text, signature: p.signature } };
      return null;
    case 'tool_call':
      // A call always travels in an assistant turn.
      return { role: 'assistant', block: cached({ type: 'tool_use', id: toolId(p.id), name: p.name, input: argumentsObject(p.arguments) }, p.cacheControl) };
    case 'tool_result': {
      const content = buildToolResultContent(p.content);
      const block: Json = { type: 'tool_result', tool_use_id: toolId(p.callId) };
      if (content.length > 0) block.content = content;
      if (p.isError !== undefined) block.is_error = p.isError;
      // Tool results always travel in a user turn.
      return { role: 'user', block: cached(block, p.cacheControl) };
    }
  }
}

/** An answer part as a response content block (text, thinking, redacted_thinking, tool_use); null for the rest. */
export function renderAnswerBlock(p: Part): Json | null {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'reasoning':
      if (p.redacted) return ours(p) ? { type: 'redacted_thinking', data: p.opaque ?? '' } : null;
      // Reasoning from another family carries no Anthropic signature; the client still sees it, with signature ''.
      return { type: 'thinking', thinking: p.text, signature: ours(p) ? (p.signature ?? '') : '' };
    case 'tool_call':
      return { type: 'tool_use', id: p.id, name: p.name, input: argumentsObject(p.arguments) };
    default:
      return null;
  }
}

/**
 * Whether the last assistant turn of `messages` (built Anthropic turns) calls a tool without starting with a thinking
 * block: with thinking on, the API refuses it ("a final assistant message must start with a thinking block"), and a
 * history from another family (a Chat, Responses or Gemini client) has no signed thinking to give back.
 */
export function unsignedToolTurn(messages: readonly Json[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    const blocks = Array.isArray(m.content) ? m.content.filter(isObj) : [];
    if (!blocks.some((b) => b.type === 'tool_use')) return false;
    return blocks[0]!.type !== 'thinking' && blocks[0]!.type !== 'redacted_thinking';
  }
  return false;
}
