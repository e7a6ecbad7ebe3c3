// OpenAI custom (freeform) tools on translated routes. A custom tool (Responses `{type: 'custom', name, format}`,
// Chat `{type: 'custom', custom: {...}}`) takes one string, optionally constrained by a grammar. Canonically it is a
// function tool with one required string parameter `input`, marked `custom` (ToolDefinition.custom). A Responses
// build carries it as a custom tool again; Anthropic, Gemini and OpenAI Chat builds send that function (the `openai`
// format is every OpenAI-compatible vendor, and Chat streams have no custom call delta in OpenAI's spec): a grammar
// cannot be enforced there, so its definition goes in the parameter's description and `toolGrammar` is listed as
// dropped. A call of it travels as a tool_call with arguments `{"input": "<text>"}`; the pipeline marks the calls
// of the names the client declared custom (markCustomCalls / markCustomEvent) and the Chat and Responses renderers
// show them as custom tool calls, their input the `input` string (or the raw arguments text when the model gave
// something else). Pure.

import type { CanonicalEvent, CanonicalRequest, CanonicalResponse, CustomGrammar, Part, ToolDefinition } from './canonical.js';
import type { CodecFormat } from './codec.js';

/** The canonical form of a custom tool: a function with one required string `input`, marked custom. */
export function customTool(name: string, description: string | undefined, grammar: CustomGrammar | undefined): ToolDefinition {
  const input = grammar === undefined
    ? { type: 'string', description: 'The tool input, as free text.' }
    : { type: 'string', description: `The tool input, as free text matching this ${grammar.syntax} grammar:\n${grammar.definition}` };
  const parameters = { type: 'object', properties: { input }, required: ['input'], additionalProperties: false };
  const custom = grammar === undefined ? {} : { grammar };
  return description === undefined ? { name, parameters, custom } : { name, description, parameters, custom };
}

/**
 * A custom tool's wire `format` -> its grammar; undefined for free text (absent, null or `{type: 'text'}`).
 * Responses gives `{type: 'grammar', syntax, definition}`, Chat `{type: 'grammar', grammar: {syntax, definition}}`.
 * Anything else is reported through `invalid` with the parameter path.
 */
export function parseCustomFormat(raw: unknown, path: string, invalid: (message: string, param: string) => never): CustomGrammar | undefined {
  if (raw === undefined || raw === null) return undefined;
  const f = isObj(raw) ? raw : invalid('a custom tool `format` must be an object', path);
  if (f.type === 'text') return undefined;
  if (f.type !== 'grammar') return invalid('a custom tool `format.type` must be text or grammar', `${path}.type`);
  // Chat nests the grammar (`format.grammar`), Responses does not: the path names the field where the client put it.
  const [g, at] = isObj(f.grammar) ? [f.grammar, `${path}.grammar`] : [f, path];
  if (g.syntax !== 'lark' && g.syntax !== 'regex') return invalid('a grammar `syntax` must be lark or regex', `${at}.syntax`);
  if (typeof g.definition !== 'string') return invalid('a grammar needs a string `definition`', `${at}.definition`);
  return { syntax: g.syntax, definition: g.definition };
}

/** A custom tool's `format` as the Responses API (`responses`) or the Chat API (`chat`) takes it. */
export function customFormatJson(tool: ToolDefinition, api: 'responses' | 'chat'): Record<string, unknown> {
  const g = tool.custom?.grammar;
  if (g === undefined) return { type: 'text' };
  return api === 'responses' ? { type: 'grammar', syntax: g.syntax, definition: g.definition } : { type: 'grammar', grammar: { syntax: g.syntax, definition: g.definition } };
}

/** A custom tool call (a client's history, an OpenAI answer) as a canonical tool_call part. */
export function customCallPart(id: string, name: string, input: string): Extract<Part, { type: 'tool_call' }> {
  return { type: 'tool_call', id, name, arguments: JSON.stringify({ input }), custom: true };
}

/** The input of a custom tool call: the `input` string of its arguments, else the arguments text as it came. */
export function customInput(args: string): string {
  try {
    const v: unknown = JSON.parse(args);
    if (isObj(v) && typeof v.input === 'string') return v.input;
  } catch {
    // not JSON: the text itself
  }
  return args;
}

/** The names of the custom tools a request declares. */
export function customToolNames(req: CanonicalRequest): ReadonlySet<string> {
  return new Set((req.tools ?? []).flatMap((t) => (t.custom === undefined ? [] : [t.name])));
}

const markParts = (parts: readonly Part[], names: ReadonlySet<string>): Part[] =>
  parts.map((p) => (p.type === 'tool_call' && p.custom !== true && names.has(p.name) ? { ...p, custom: true } : p));

/** The answer with its calls of the custom tools `names` marked custom. */
export function markCustomCalls(res: CanonicalResponse, names: ReadonlySet<string>): CanonicalResponse {
  if (names.size === 0) return res;
  const marked: CanonicalResponse = { ...res, content: markParts(res.content, names) };
  return res.moreChoices === undefined ? marked : { ...marked, moreChoices: res.moreChoices.map((c) => ({ ...c, content: markParts(c.content, names) })) };
}

/** A streamed event with a call of one of the custom tools `names` marked custom. */
export function markCustomEvent(e: CanonicalEvent, names: ReadonlySet<string>): CanonicalEvent {
  return e.type === 'tool_call_start' && e.custom !== true && names.has(e.name) ? { ...e, custom: true } : e;
}

/**
 * Whether a request built for `format` leaves out a custom tool's grammar: only a Responses build carries custom
 * tools as such (an `openai` format provider is any OpenAI-compatible vendor, so it gets the function form).
 */
export function dropsGrammar(req: CanonicalRequest, format: CodecFormat): boolean {
  return format !== 'openai-responses' && (req.tools ?? []).some((t) => t.custom?.grammar !== undefined);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
