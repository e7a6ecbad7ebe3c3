// The export / import round trip of admin-roundtrip.test.ts on the server path: each gateway's store is a ClickHouse
// server reached over HTTP (Native tables streamed out by `exec` and in as a request body, src/store/client.ts).

import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./admin-roundtrip.test.js');
