// A kill inside an insert: `requests` and the hourly rollup took the segment's rows and the daily rollup had not (the
// first process detached its view). The next process makes the daily rollup whole from the hourly one, and adds
// nothing to the hourly (each row once in both). Its own file: one data directory per process.

import t from 'tap';
import { replayAfterKill } from '../helpers/replay-landed.js';

t.test('a segment in the table and the hourly rollup but not the daily: the daily is made whole', (t) => replayAfterKill(t, 'hourly'));
