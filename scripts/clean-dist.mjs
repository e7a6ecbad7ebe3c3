// `npm run build`'s first step (`prebuild`): dist/ emptied of what tsc and the bundle write, so that a module deleted
// from src/ cannot linger there and keep a stale import working. dist/console/ stays: its files are written over in
// place (scripts/build-console.mjs), so that a gateway serving them never finds them missing.

import { existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const entries = existsSync(dist) ? readdirSync(dist) : [];
for (const name of entries) if (name !== 'console') rmSync(join(dist, name), { recursive: true, force: true });
