// A spool segment whose file is deleted behind the spool's back (src/store/writer.ts `#insert`): the writer does not
// reject (before: ENOENT from Spool.readLines escaped the insert loop, an unhandled rejection that crashed the
// process, and a close that rejected), takes the segment off its list with the reason reported, and the segments
// after it still land. Real spool files in a temp directory, the real store (embedded, or the server path).

import t from 'tap';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { migrate } from '../../src/store/migrations.js';
import { REQUEST_COLUMNS, type RequestRow } from '../../src/store/rows.js';
import { Spool } from '../../src/store/spool.js';
import { BatchWriter } from '../../src/store/writer.js';
import { openTestStore } from '../helpers/store-paths.js';
import { tempDir } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';
import { leftoversRead } from '../helpers/spool.js';

const store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-missing-' });
await migrate(store);

const row = (tag: string, i: number): RequestRow => rec({ at: new Date(Date.UTC(2026, 10, 20, 9) + i * 1000).toISOString(), model: 'paid/m', key: tag, usage: [3, 2] });
const count = async (tag: string): Promise<number> =>
  Number((await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('requests')} FINAL WHERE api_key_name = {tag:String}`, { tag }))[0]!.n);
const open = (dir: string) => new Spool<RequestRow>({ dir, commitMs: 1000, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS }, (r) => String(r.request_id));

/** An earlier process's spool: two sealed segments of 3 and 4 rows left on disk. Returns their file names, oldest first. */
async function leftTwo(dir: string, tag: string): Promise<string[]> {
  const spool = open(dir);
  for (let i = 0; i < 3; i++) spool.append(row(tag, i));
  await new Promise((r) => setImmediate(r));
  spool.seal();
  for (let i = 3; i < 7; i++) spool.append(row(tag, i));
  await new Promise((r) => setImmediate(r));
  spool.close();
  return readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();
}

for (const how of ['flush', 'close'] as const) {
  t.test(`a leftover segment deleted before its insert (${how}): no rejection, it is taken off the list, the next one lands`, async (t) => {
    const dir = tempDir(t, 'tollgate-missing-spool-');
    const tag = `missing-${how}`;
    const files = await leftTwo(dir, tag);
    t.equal(files.length, 2, 'two segments left');
    const spool = open(dir);
    t.same((await leftoversRead(spool)), { segments: 2, rows: 7, interrupted: 0 });
    rmSync(join(dir, files[0]!)); // gone behind the spool's back (a person, a tmp cleaner)
    const errors: unknown[] = [];
    const written: number[] = [];
    const dropped: [number, string][] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    t.teardown(() => void process.off('unhandledRejection', onUnhandled));
    // The writer starts on the leftovers at once (its constructor), as at a gateway's start.
    const writer = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 100, flushMs: 60_000, retryBaseMs: 10, retryMaxMs: 50 }, {
      written: (n) => void written.push(n), dropped: (n, reason) => void dropped.push([n, reason]), error: (err) => void errors.push(err), state: () => undefined,
    });
    if (how === 'flush') {
      await t.resolves(writer.flush(), 'flush resolves');
      await t.resolves(writer.close(), 'close resolves');
    } else await t.resolves(writer.close(), 'close (a SIGTERM) resolves');
    await new Promise((r) => setTimeout(r, 20));
    t.same(unhandled, [], 'no unhandled rejection');
    t.equal(errors.length, 1, 'one error reported');
    t.match(String(errors[0]), `spool segment ${files[0]!.replace(/\.jsonl$/, '')} is gone from disk: its 3 rows were not inserted`);
    t.same(dropped, [[3, 'missing']], 'its 3 rows counted as dropped, reason missing');
    t.same(written, [4], 'the segment after it landed');
    t.equal(await count(tag), 4, 'its 4 rows are in the store');
    t.equal(spool.rows, 0, 'nothing left in the spool');
    t.same(readdirSync(dir).filter((f) => f.endsWith('.jsonl')), [], 'and nothing on disk');
  });
}
