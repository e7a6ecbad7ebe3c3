// The other side of replay-landed.test.ts: a segment the killed process had sealed but not inserted is inserted by
// the next one (the check for an insert that landed does not skip it). Its own file: one data directory per process.

import t from 'tap';
import { replayAfterKill } from '../helpers/replay-landed.js';

t.test('a segment whose insert had not landed is inserted', (t) => replayAfterKill(t, 'none'));
