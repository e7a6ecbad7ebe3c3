// The cases of dispatched.test.ts on the server path (a ClickHouse server over HTTP, the test server in a child process).

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./dispatched.test.js');
