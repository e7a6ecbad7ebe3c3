// The harness every conformance file shares: start each row's upstream and one gateway with all of them, and run a
// case against every row (a row that declares the case unsupported records that, with its reason, as a passing
// assertion: nothing is skipped).

import type { Test } from 'tap';
import { startApp, type TestApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { PROVIDERS, type CaseId, type Json, type ProviderUnderTest, type Upstream } from './providers.js';

export interface Suite {
  readonly gw: TestApp;
  readonly ups: ReadonlyMap<string, Upstream>;
}

/** Every row's upstream and one gateway serving them all; `rows` adds provider rows, `tune` edits each row. */
export async function startSuite(t: Test, opts: { rows?: Record<string, Json>; tune?: (p: ProviderUnderTest, row: Json) => Json } = {}): Promise<Suite> {
  const ups = new Map<string, Upstream>();
  const providers: Record<string, Json> = {};
  for (const p of PROVIDERS) {
    const up = await p.start(t);
    ups.set(p.id, up);
    providers[p.id] = opts.tune ? opts.tune(p, up.row()) : up.row();
    Object.assign(providers, up.extraRows());
  }
  const gw = await startApp(t, { providers: { ...providers, ...opts.rows } });
  return { gw, ups };
}

/** Run `fn` as one subtest per row, or record the row's declared reason for not taking the case. */
export function eachProvider(t: Test, suite: Suite, id: CaseId, fn: (t: Test, p: ProviderUnderTest, up: Upstream) => Promise<void>): void {
  t.test(id, async (t) => {
    for (const p of PROVIDERS) {
      const reason = p.unsupported[id];
      await t.test(`${p.id} (${p.format})`, async (t) => {
        if (reason !== undefined) {
          t.pass(`declared unsupported: ${reason}`);
          return;
        }
        await fn(t, p, suite.ups.get(p.id)!);
      });
    }
  });
}

export type Row = Record<string, unknown>;

/** The row of a request by its x-request-id, waiting for it to land. */
export async function rowOf(gw: TestApp, requestId: string): Promise<Row> {
  let row: Row | undefined;
  await waitFor(async () => {
    [row] = await gw.rows(`request_id = '${requestId}'`);
    return row !== undefined;
  }, 15_000);
  return row!;
}

/** The five buckets of a row (null stays null). */
export const bucketsOf = (row: Row) =>
  [row.input_tokens, row.cached_tokens, row.cache_write_tokens, row.output_tokens, row.reasoning_tokens].map((v) => (v === null ? null : Number(v)));

/** The SERVER span of a request. */
export function spanOf(gw: TestApp, requestId: string) {
  return gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === requestId && s.attributes['tollgate.attempt'] === undefined);
}

/** The last request the upstream received (after `before` requests), waiting for it. */
export async function receivedAfter(up: Upstream, before: number) {
  await waitFor(() => up.received.length > before);
  return up.received.at(-1)!;
}

/** A 200, or the body that came instead. */
export function answered(t: Test, r: { status: number; text: string }): void {
  t.equal(r.status, 200, r.status === 200 ? 'answered 200' : `answered ${r.status}: ${r.text.slice(0, 300)}`);
}

export const near = (a: number, b: number) => Math.abs(a - b) < 1e-12;
