// A process killed between a segment's insert and its delete (kill -9 right after ClickHouse took the rows): the
// next process finds the segment and must count its rows once, in the table and in the rollups. The embedded engine
// drops the replay (same token) from `requests`, but once it has restarted not from the rollups' views, so the writer
// checks the oldest segment an earlier process left and deletes it without inserting when its rows are all there.
// The first process is a child on the built modules (dist/): it spools rows, seals them, inserts the segment as the
// writer does (its lines, its name as token) and kills itself before the delete. Embedded engine: it restarts with
// the process, which is what loses the views' deduplication (a ClickHouse server that stays up keeps it).

import t from 'tap';
import { replayAfterKill } from '../helpers/replay-landed.js';

t.test('the segment whose insert landed before the kill is not inserted again', (t) => replayAfterKill(t, 'whole'));
