// Pieces shared by the integration tests that drive the official SDK clients against the gateway
// (test/integration/to-*.test.ts): the request fixtures, a fetch spy for the headers an SDK does not expose, and
// the lookups of the usage row a request produced.

import type { Test } from 'tap';
import type { TestApp } from './app.js';
import { waitFor } from './wait.js';

/** A 1x1 PNG, base64. */
export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** The function tool the clients declare; `schema` is its JSON Schema. */
export const TOOL = {
  name: 'get_weather',
  description: 'Current weather in a city',
  schema: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
};
/** The question sent with the PNG and TOOL. */
export const ASK_TOOL = 'What is the weather in the city on this picture?';

/** A fetch that remembers the last response, for the x-request-id (the row) and headers an SDK does not expose. */
export function spyFetch() {
  let last: Response | undefined;
  const f = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    last = res;
    return res;
  };
  return {
    fetch: f,
    get last(): Response {
      if (!last) throw new Error('no response yet');
      return last;
    },
  };
}

/** One question a client adapter asks. */
export interface Ask {
  model: string;
  stream: boolean;
  tools?: boolean;
}

/** Tool call arguments as a client received them (a JSON string). */
export const argsOf = (s: string): unknown => JSON.parse(s);

export type Row = Record<string, unknown>;

/** The usage row of a request, by its x-request-id, waiting for it to land. */
export async function rowOf(gw: Pick<TestApp, 'rows'>, requestId: string): Promise<Row> {
  let row: Row | undefined;
  await waitFor(async () => {
    [row] = await gw.rows(`request_id = '${requestId}'`);
    return row !== undefined;
  });
  return row!;
}

/** Run one client request and return its result with the one usage row it produced. */
export async function withRow<T>(gw: Pick<TestApp, 'rows'>, t: Test, fn: () => Promise<T>): Promise<{ value: T; row: Row }> {
  const before = new Set((await gw.rows()).map((r) => String(r.request_id)));
  const value = await fn();
  await waitFor(async () => (await gw.rows()).length > before.size);
  const fresh = (await gw.rows()).filter((r) => !before.has(String(r.request_id)));
  t.equal(fresh.length, 1, 'exactly one usage row for the request');
  return { value, row: fresh[0]! };
}

/** A row's buckets: input, cached, cache write, output, reasoning (null stays null). */
export const buckets = (row: Row) =>
  [row.input_tokens, row.cached_tokens, row.cache_write_tokens, row.output_tokens, row.reasoning_tokens].map((v) => (v === null ? null : Number(v)));

/** A row's buckets followed by its total. */
export const bucketsOf = (row: Row) =>
  [row.input_tokens, row.cached_tokens, row.cache_write_tokens, row.output_tokens, row.reasoning_tokens, row.total_tokens].map((v) => (v === null ? null : Number(v)));

/** A combo request's client row and its attempt rows (by attempt number), waiting until `attempts` have landed. */
export async function attemptRowsOf(gw: Pick<TestApp, 'rows'>, requestId: string, attempts: number): Promise<{ parent: Row; attempts: Row[] }> {
  let parent: Row | undefined;
  let tries: Row[] = [];
  await waitFor(async () => {
    [parent] = await gw.rows(`request_id = '${requestId}'`);
    tries = await gw.rows(`parent_id = '${requestId}'`);
    return parent !== undefined && tries.length >= attempts;
  });
  return { parent: parent!, attempts: tries.sort((x, y) => Number(x.attempt) - Number(y.attempt)) };
}
