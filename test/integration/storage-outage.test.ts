// Storage outages of 5 s, 30 s and 120 s on the server path, with traffic (test/helpers/outage.ts): requests are
// served throughout, /ready and the metrics say the store is down, and after healing every acknowledged request is
// stored exactly once, in `requests` and in the hourly rollup.
//
// The three run at once (`t.jobs`), each with its own ClickHouse test server and gateway: an outage is mostly waiting
// (about 27 s of CPU in the 120 s one's 146 s), so one file holds one of tap's jobs for the longest outage, where two
// files held both for 146 s and 88 s, one of the two cores idle meanwhile.

import t from 'tap';
import { outageScenario } from '../helpers/outage.js';

t.jobs = 3;
t.setTimeout(300_000);
t.test('a 5 s outage', (t) => outageScenario(t, 5));
t.test('a 30 s outage', (t) => outageScenario(t, 30));
t.test('a 120 s outage', (t) => outageScenario(t, 120));
