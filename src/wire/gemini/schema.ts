// Gemini's OpenAPI-subset Schema (`parameters`, `responseSchema`: upper-case type names, `nullable`) -> JSON Schema
// for the canonical model. Outbound, Tollgate always sends JSON Schema (`parametersJsonSchema`,
// `responseJsonSchema`), so no conversion back is needed.

import { isObj, type Json } from './wire.js';

/** Lower-cases `type`, turns `nullable: true` into a ['<type>', 'null'] union, recurses into properties/items/anyOf. */
export function jsonSchemaFromGemini(s: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'nullable') continue;
    if (k === 'type' && typeof v === 'string') out.type = v.toLowerCase();
    else if (k === 'properties' && isObj(v)) out.properties = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, isObj(p) ? jsonSchemaFromGemini(p) : p]));
    else if (k === 'items' && isObj(v)) out.items = jsonSchemaFromGemini(v);
    else if (k === 'anyOf' && Array.isArray(v)) out.anyOf = v.map((x) => (isObj(x) ? jsonSchemaFromGemini(x) : x));
    else out[k] = v;
  }
  if (s.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}
