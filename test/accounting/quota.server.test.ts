// The cases of quota.test.ts on the server path: a ClickHouse server reached over HTTP through @clickhouse/client (the
// test server of test/helpers/clickhouse-http.ts, in a child process), instead of the embedded engine.

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./quota.test.js');
