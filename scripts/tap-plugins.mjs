#!/usr/bin/env node
// Run by `npm test` before tap: builds tap's Test class with the plugins package.json configures (`tap.plugin`: the
// TypeScript is run by tsx, not by @tapjs/typescript) when it is built with others, as a fresh `npm ci` leaves it.
// tap rebuilds it by itself at the start of a run, but it takes the test processes' loaders from the build it started
// with: the first run after an install loaded ts-node's loader and tsx into every test process (tap's own time 1,402
// and 1,427 s in two CI runs, 832 s in a second run of the same clone; docs/development.md). Reads tap's internals
// (@tapjs/test, @tapjs/config, both of the pinned tap), so on any doubt it builds: `tap build` is always right, and
// takes about 10 s.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

async function upToDate() {
  try {
    const [{ signature }, { TapConfig }] = await Promise.all([import('@tapjs/test'), import('@tapjs/config')]);
    const config = await TapConfig.load();
    return typeof signature === 'string' && signature === config.pluginSignature;
  } catch {
    return false;
  }
}

if (!(await upToDate())) {
  const pkg = fileURLToPath(import.meta.resolve('tap/package.json'));
  const bin = join(dirname(pkg), JSON.parse(readFileSync(pkg, 'utf8')).bin.tap);
  process.stdout.write('tap was built with other plugins than package.json names: tap build\n');
  const r = spawnSync(process.execPath, [bin, 'build'], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
