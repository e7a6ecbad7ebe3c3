// The cases of kill.test.ts on the server path: the gateway (the built CLI) writes to a ClickHouse server reached over
// HTTP (the test server of test/helpers/clickhouse-http.ts, in a child process) and is killed under load there too.

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./kill.test.js');
