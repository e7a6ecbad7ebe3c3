// The cases of recovered-interrupted.test.ts on the server path (a ClickHouse server over HTTP, the test server of
// test/helpers/clickhouse-http.ts in a child process).

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./recovered-interrupted.test.js');
