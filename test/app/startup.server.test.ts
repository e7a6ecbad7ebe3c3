// The start suite (startup.test.ts) on the server path (storage.clickhouse_url): the server refuses connections when
// the gateway starts, and comes back.
import { useServerPath } from '../helpers/store-paths.js';

useServerPath();
await import('./startup.test.js');
