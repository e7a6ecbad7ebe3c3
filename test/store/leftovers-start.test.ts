// A start on a large spool an earlier process left: the gateway listens and answers first, and reads the leftover
// segments after (src/store/leftovers.ts; before, every line was read before `listen`: a 1 GiB spool held the start for
// 39 s). Meanwhile /ready says why it is not ready, a proxied request is answered, and a quota read waits for the
// reading: it counts every leftover row, none missed because it was read later. Embedded store, real files.

import t from 'tap';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REQUEST_COLUMNS } from '../../src/store/rows.js';
import { headerLine, rowLine } from '../../src/store/segment.js';
import { listenOn } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';

const ROWS = 200_000;
const PER_SEGMENT = 10_000;

t.test('a large leftover spool is read after the gateway listens; the quota waits for it and counts every row', async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, 'spool');
  mkdirSync(dir, { recursive: true });
  // One row (5 tokens, on `sub`, today), each line with its own id: the rows an earlier process left, 20 segments.
  const sample = rowLine(REQUEST_COLUMNS, rec({ at: new Date(Date.now() - 60_000).toISOString(), model: 'sub/echo-1', usage: [3, 2], key: 'left' }));
  const tail = sample.slice(sample.indexOf('",') + 1);
  const base = Date.now() - 120_000;
  for (let s = 0; s < ROWS / PER_SEGMENT; s++) {
    const lines = Array.from({ length: PER_SEGMENT }, () => `["${randomUUID()}"${tail}\n`);
    writeFileSync(join(dir, `${base + s}-0feedbad-${String(s + 1).padStart(6, '0')}.jsonl`), headerLine(REQUEST_COLUMNS) + lines.join(''));
  }
  const { app, url } = await listenOn(t, dataDir);

  const ready = await fetch(`${url}/ready`);
  const why = ((await ready.json()) as { error: { message: string } }).error?.message ?? '';
  t.equal(ready.status, 503, 'not ready while the leftovers are read');
  t.match(why, /the spool is reading the 20 segments an earlier process left \(\d+ rows so far\)/, `and /ready says why (${why})`);
  const quota = fetch(`${url}/api/quota`); // asked now: it waits for the reading
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sub/echo-1', messages: [{ role: 'user', content: 'during the reading' }] }),
  });
  t.equal(res.status, 200, 'a request is answered meanwhile');
  const answered = (await res.json()) as { usage: { total_tokens: number } };
  const view = (await (await quota).json()) as { providers: { id: string; quota: { used: number } }[] };
  const used = view.providers.find((p) => p.id === 'sub')!.quota.used;
  t.ok(used >= ROWS * 5, `the quota read made during the reading counts every leftover row (${used} tokens, ${ROWS * 5} left)`);
  t.ok(used <= ROWS * 5 + answered.usage.total_tokens, 'and nothing twice');
  await app.tollgate.storeReady;
  await app.tollgate.writer.flush();
  const [stored] = await app.tollgate.store.query<{ n: string | number }>(`SELECT count() AS n FROM ${app.tollgate.store.t('requests')} FINAL WHERE api_key_name = 'left'`);
  t.equal(Number(stored!.n), ROWS, 'every leftover row is stored once');
});
