// A leftover segment whose insert landed before its process was killed (between the insert and the delete) holds rows
// the store has and the next process's list of calls not stored yet has too, until the writer settles it
// (settleLanded). The quota read right after the restart counted them twice: it held the inserts off (WriteFence.hold)
// before the writer had begun settling, and read the store and the list as exact. The writer now counts the
// unsettled segment as an insert of unknown outcome from its start (writer.ts, #landing). Embedded store; the first
// process is a child on the built modules (test/helpers/replay-landed.ts).

import t from 'tap';
import { join } from 'node:path';
import { listenOn } from '../helpers/app.js';
import { firstProcess } from '../helpers/replay-landed.js';
import { tempDir } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';

const N = 2000; // 5 tokens each

t.test('a landed leftover segment is counted once by the quota from its first answer after the restart', async (t) => {
  const dataDir = tempDir(t);
  const rows = Array.from({ length: N }, (_, i) => rec({ at: new Date(Date.now() - 60_000 + i).toISOString(), model: 'sub/echo-1', usage: [3, 2], key: 'landed' }));
  await firstProcess(dataDir, join(dataDir, 'spool'), rows, 'whole');
  const { app, url } = await listenOn(t, dataDir);
  const seen: number[] = [];
  for (let i = 0; i < 30; i++) {
    const view = (await (await fetch(`${url}/api/quota`)).json()) as { providers: { id: string; quota: { used: number } }[] };
    seen.push(view.providers.find((p) => p.id === 'sub')!.quota.used);
    await new Promise((r) => setTimeout(r, 40));
  }
  t.same([...new Set(seen)], [N * 5], `every answer ${N * 5} tokens, from the first (${seen.join(', ')})`);
  await app.tollgate.writer.flush();
  const [stored] = await app.tollgate.store.query<{ n: string | number }>(`SELECT count() AS n FROM ${app.tollgate.store.t('requests')} FINAL WHERE api_key_name = 'landed'`);
  t.equal(Number(stored!.n), N, 'and the rows once in the store');
});
