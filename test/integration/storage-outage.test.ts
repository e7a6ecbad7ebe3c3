// Storage outages of 5 s and 30 s on the server path, with traffic (test/helpers/outage.ts): requests are served
// throughout, /ready and the metrics say the store is down, and after healing every acknowledged request is stored
// exactly once, in `requests` and in the hourly rollup. The 120 s outage is storage-outage-long.test.ts.

import t from 'tap';
import { outageScenario } from '../helpers/outage.js';

t.setTimeout(240_000);
t.test('a 5 s outage', (t) => outageScenario(t, 5));
t.test('a 30 s outage', (t) => outageScenario(t, 30));
