// The cases of rollup-daily.test.ts on the server path (a ClickHouse server over HTTP, the test server in a child process).

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./rollup-daily.test.js');
