// What an upstream receives for a built request body: the transport's serialisation (src/wire/json-stream.ts),
// as text or parsed back.

import { jsonChunks } from '../../src/wire/json-stream.js';

/** The exact text the transport sends for `body`. */
export function wireText(body: unknown): string {
  return Buffer.concat([...jsonChunks(body)]).toString('utf8');
}

/** The body as the upstream parses it. */
export function wireJson(body: unknown): Record<string, unknown> {
  return JSON.parse(wireText(body)) as Record<string, unknown>;
}
