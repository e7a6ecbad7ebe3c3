// The tools of a Chat Completions request (chat-request.ts): function tools, custom tools (a function of one string
// `input`, marked custom: src/wire/custom-tool.ts), tool_choice, and an assistant message's tool calls.

import type { Part, ToolChoice, ToolDefinition } from '../canonical.js';
import { customCallPart, customInput, customTool, parseCustomFormat } from '../custom-tool.js';
import { absent, invalid, isObject, optString, reqString } from './chat-validate.js';
import { signedBy } from './google.js';

function customToolDef(c: unknown, at: string): ToolDefinition {
  if (!isObject(c)) throw invalid(`${at}.custom`, `'${at}.custom' must be an object`);
  const name = reqString(c.name, `${at}.custom.name`);
  const description = optString(c.description, `${at}.custom.description`);
  const grammar = parseCustomFormat(c.format, `${at}.custom.format`, (message, param) => {
    throw invalid(param, `'${param}': ${message}`);
  });
  return customTool(name, description, grammar);
}

export function parseTools(v: unknown): ToolDefinition[] {
  if (!Array.isArray(v)) throw invalid('tools', "'tools' must be an array");
  return v.map((t, i) => {
    const at = `tools[${i}]`;
    if (isObject(t) && t.type === 'custom') return customToolDef(t.custom, at);
    if (!isObject(t) || t.type !== 'function' || !isObject(t.function)) throw invalid(at, `'${at}' must be a function or custom tool`);
    const f = t.function;
    const name = reqString(f.name, `${at}.function.name`);
    const description = optString(f.description, `${at}.function.description`);
    // Omitted parameters mean "no arguments" in the OpenAI API.
    const parameters = absent(f.parameters) ? { type: 'object', properties: {} } : f.parameters;
    if (!isObject(parameters)) throw invalid(`${at}.function.parameters`, `'${at}.function.parameters' must be a JSON Schema object`);
    const def: { -readonly [K in keyof ToolDefinition]: ToolDefinition[K] } = { name, parameters };
    if (description !== undefined) def.description = description;
    if (typeof f.strict === 'boolean') def.strict = f.strict;
    return def;
  });
}

/** An assistant message's `tool_calls[i]` (at `tat`): a function call, or a custom tool call (`{type: 'custom', custom: {name, input}}`). */
export function parseToolCall(tc: unknown, tat: string): Extract<Part, { type: 'tool_call' }> {
  if (isObject(tc) && tc.type === 'custom' && isObject(tc.custom)) {
    return customCallPart(reqString(tc.id, `${tat}.id`), reqString(tc.custom.name, `${tat}.custom.name`), reqString(tc.custom.input, `${tat}.custom.input`));
  }
  if (!isObject(tc) || tc.type !== 'function' || !isObject(tc.function)) throw invalid(tat, `'${tat}' must be a function or custom tool call`);
  const id = reqString(tc.id, `${tat}.id`);
  const name = reqString(tc.function.name, `${tat}.function.name`);
  // Gemini's thought signature as Google's OpenAI-compatible endpoint writes it (google.ts).
  return { type: 'tool_call', id, name, arguments: reqString(tc.function.arguments, `${tat}.function.arguments`), ...signedBy(tc) };
}

export function parseToolChoice(v: unknown): ToolChoice {
  if (v === 'auto' || v === 'none' || v === 'required') return { type: v };
  if (isObject(v) && v.type === 'function' && isObject(v.function)) return { type: 'tool', name: reqString(v.function.name, 'tool_choice.function.name') };
  if (isObject(v) && v.type === 'custom' && isObject(v.custom)) return { type: 'tool', name: reqString(v.custom.name, 'tool_choice.custom.name') };
  if (isObject(v) && v.type === 'allowed_tools' && isObject(v.allowed_tools)) return v.allowed_tools.mode === 'required' ? { type: 'required' } : { type: 'auto' };
  throw invalid(
    'tool_choice',
    "'tool_choice' must be auto, none, required, {type: 'function', function: {name}}, {type: 'custom', custom: {name}} or {type: 'allowed_tools', allowed_tools: {mode, tools}}",
  );
}

/**
 * The tools an `allowed_tools` tool_choice names (`{type: 'allowed_tools', allowed_tools: {mode, tools: [{type:
 * 'function', function: {name}} | {type: 'custom', custom: {name}}]}}`), null for another choice: the model may call
 * only those, carried as the tool list cut to them (the Responses parser does the same), `mode` as auto or required
 * (parseToolChoice).
 */
export function allowedNames(v: unknown): Set<string> | null {
  if (!isObject(v) || v.type !== 'allowed_tools' || !isObject(v.allowed_tools)) return null;
  const listed = Array.isArray(v.allowed_tools.tools) ? v.allowed_tools.tools : [];
  const nameOf = (t: unknown): unknown => (isObject(t) ? (isObject(t.function) ? t.function.name : isObject(t.custom) ? t.custom.name : undefined) : undefined);
  return new Set(listed.flatMap((t) => { const n = nameOf(t); return typeof n === 'string' ? [n] : []; }));
}

/** A call of a custom tool as a Chat answer shows it: `{id, type: 'custom', custom: {name, input}}` (chat-response, chat-stream). */
export const chatCustomCall = (id: string, name: string, args: string): Record<string, unknown> => ({ id, type: 'custom', custom: { name, input: customInput(args) } });
