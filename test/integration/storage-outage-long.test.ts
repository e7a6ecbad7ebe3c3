// A 120 s storage outage on the server path, with traffic (test/helpers/outage.ts); its own file so that the shorter
// ones (storage-outage.test.ts) run beside it, and with a longer timeout than tap's default 120 s per file.

import t from 'tap';
import { outageScenario } from '../helpers/outage.js';

t.setTimeout(300_000);
t.test('a 120 s outage', (t) => outageScenario(t, 120));
