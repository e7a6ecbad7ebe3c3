// What a model's configured capabilities allow (spec item 9: parameters the target model does not support are
// removed before sending, never sent to draw a 400). Applied only to a model whose config lists capabilities: an
// empty or absent list means "not described", and the request goes as the client wrote it.
//
// | capability missing | removed from the request                                   |
// | ------------------ | ---------------------------------------------------------- |
// | tools              | tool definitions, built-in tools, tool choice, parallel    |
// |                    | tool calls                                                 |
// | vision             | image parts                                                |
// | pdf                | file (document) parts                                      |
// | audio              | audio parts                                                |
// | structured_output  | a json_schema response format becomes json_object          |
// | reasoning          | the thinking level (each codec also checks this)           |
//
// What is removed is recorded in the request's `removed` (the schema of a json_schema format as `responseFormat`),
// so that it is listed in the x-tollgate-dropped-params header like a target's own drops.

import type { ModelConfig } from '../config/types.js';
import type { CanonicalField, CanonicalRequest, Message, Part } from './canonical.js';

const MEDIA_CAPABILITY = { image: 'vision', file: 'pdf', audio: 'audio' } as const;

function keepPart(p: Part, caps: ReadonlySet<string>): boolean {
  if (p.type === 'image' || p.type === 'file' || p.type === 'audio') return caps.has(MEDIA_CAPABILITY[p.type]);
  return true;
}

function stripMessages(messages: readonly Message[], caps: ReadonlySet<string>): readonly Message[] {
  return messages.map((m) => {
    const content = m.content
      .filter((p) => keepPart(p, caps))
      .map((p) => (p.type === 'tool_result' ? { ...p, content: p.content.filter((c) => keepPart(c, caps)) } : p));
    return content.length === m.content.length && content.every((p, i) => p === m.content[i]) ? m : { ...m, content };
  });
}

/** The request with what the model's capabilities exclude removed (see the table above). */
export function fitCapabilities(req: CanonicalRequest, model: ModelConfig | null): CanonicalRequest {
  if (model === null || model.capabilities.length === 0) return req;
  const caps = new Set<string>(model.capabilities);
  const out: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = { ...req };
  const removed: CanonicalField[] = [];
  const remove = (field: 'tools' | 'builtinTools' | 'toolChoice' | 'parallelToolCalls' | 'thinking', listed: CanonicalField): void => {
    if (out[field] === undefined) return;
    delete out[field];
    removed.push(listed);
  };
  if (!caps.has('tools')) {
    remove('tools', 'tools');
    remove('builtinTools', 'webSearch');
    remove('toolChoice', 'toolChoice');
    remove('parallelToolCalls', 'parallelToolCalls');
  }
  if (!caps.has('reasoning')) remove('thinking', 'thinking');
  if (!caps.has('structured_output') && req.responseFormat?.type === 'json_schema') {
    out.responseFormat = { type: 'json_object' };
    removed.push('responseFormat');
  }
  if (!caps.has('vision') || !caps.has('pdf') || !caps.has('audio')) {
    out.system = req.system.filter((p) => keepPart(p, caps));
    out.messages = stripMessages(req.messages, caps);
    const kinds = new Set([...req.system, ...req.messages.flatMap((m) => m.content.flatMap((p) => (p.type === 'tool_result' ? [p, ...p.content] : [p])))].map((p) => p.type));
    for (const kind of ['image', 'file', 'audio'] as const) if (kinds.has(kind) && !caps.has(MEDIA_CAPABILITY[kind])) removed.push(kind);
  }
  if (removed.length > 0) out.removed = [...(req.removed ?? []), ...removed];
  return out;
}
