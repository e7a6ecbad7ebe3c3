// The cases of quota-edges.test.ts on the server path (a ClickHouse server over HTTP, the test server in a child process).

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./quota-edges.test.js');
