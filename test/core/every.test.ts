// everyPeriod (src/core/every.ts): a count reported at once, then at most once a period per key with what came since;
// nothing is lost. The spool's dropped rows are logged through it (a review of outages: a line a dropped row before).

import t from 'tap';
import { everyPeriod } from '../../src/core/every.js';

t.test('the first at once, then one line a period with the count since, per key', async (t) => {
  let now = 0;
  const lines: [number, string][] = [];
  const report = everyPeriod((n, key) => void lines.push([n, key]), 100, () => now);
  report(1, 'spool_full');
  for (let i = 0; i < 999; i++) report(1, 'spool_full');
  report(2, 'rejected');
  t.same(lines, [[1, 'spool_full'], [2, 'rejected']], 'each key\'s first at once, the rest held');
  now = 100;
  await new Promise((r) => setTimeout(r, 150));
  t.same(lines, [[1, 'spool_full'], [2, 'rejected'], [999, 'spool_full']], 'the held count in one line at the period\'s end');
  now = 300;
  report(3, 'spool_full');
  t.same(lines.at(-1), [3, 'spool_full'], 'a quiet period later: at once again');
  t.equal(lines.reduce((a, [n]) => a + n, 0), 1005, 'every count reported');
});

t.test('flush: what is held is reported at once (a stop leaves nothing unsaid), and its timer cleared', async (t) => {
  const lines: [number, string][] = [];
  const report = everyPeriod((n, key) => void lines.push([n, key]), 60_000);
  for (let i = 0; i < 500; i++) report(1, 'spool_full');
  report.flush();
  t.same(lines, [[1, 'spool_full'], [499, 'spool_full']], 'before: the 499 were never logged');
  report.flush();
  t.equal(lines.length, 2, 'nothing twice');
});
