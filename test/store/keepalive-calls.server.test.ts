// The cases of keepalive-calls.test.ts on the server path: a ClickHouse server reached over HTTP through
// @clickhouse/client (the test server of test/helpers/clickhouse-http.ts, in a child process).

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./keepalive-calls.test.js');
