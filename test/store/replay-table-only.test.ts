// A kill inside an insert: `requests` took the segment's rows and the rollups' views had not (the first process
// detached them for its insert). The next process finds every row in `requests`, does not insert the segment again,
// and makes the rollups whole: each row once in the hourly and the daily rollup (without the repair: none). Its own
// file: one data directory per process.

import t from 'tap';
import { replayAfterKill } from '../helpers/replay-landed.js';

t.test('a segment in the table but in neither rollup: the rollups are made whole', (t) => replayAfterKill(t, 'table'));
