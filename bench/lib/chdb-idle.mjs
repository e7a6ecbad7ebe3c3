// A bare Node process with a chdb session open on <dir>/data (one query run): the engine's own floor for the
// footprint figures (bench/lib/footprint.mjs). Started with the gateway's engine settings (src/store/embedded.ts),
// or chdb's defaults with `defaults`. Writes <dir>/ready when the session is open, then idles until killed.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'chdb';
import { engineArgs } from '../../dist/store/embedded.js';

const [dir, settings] = process.argv.slice(2);
const session = new Session(join(dir, 'data'), settings === 'defaults' ? {} : { connectionArgs: engineArgs() });
await session.queryAsync('SELECT 1');
writeFileSync(join(dir, 'ready'), 'ok');
setInterval(() => {}, 1000);
