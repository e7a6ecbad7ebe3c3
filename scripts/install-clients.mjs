#!/usr/bin/env node
// Install the real clients of the client suite (test-clients/versions.json, pinned exactly) into the cache folder:
// $TOLLGATE_CLIENTS_CACHE, else .cache/clients in the repo. Nothing is installed when every pinned version is already
// there, so a second run costs a few file reads. The clients are not dependencies of Tollgate: they live in their
// own folder with their own package.json, and the repo's lock file never sees them.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'test-clients', 'versions.json'), 'utf8'));
const pinned = manifest.dependencies;
const dir = resolve(process.env.TOLLGATE_CLIENTS_CACHE ?? join(root, '.cache', 'clients'));

/** The pinned packages whose installed version is not the pinned one (or that are missing). */
function stale() {
  return Object.entries(pinned).filter(([name, version]) => {
    const file = join(dir, 'node_modules', name, 'package.json');
    return !existsSync(file) || JSON.parse(readFileSync(file, 'utf8')).version !== version;
  });
}

const missing = stale();
if (missing.length === 0) {
  console.log(`clients: ${Object.keys(pinned).length} pinned packages already in ${dir}`);
  process.exit(0);
}
console.log(`clients: installing into ${dir}: ${missing.map(([n, v]) => `${n}@${v}`).join(' ')}`);
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'tollgate-clients', private: true, dependencies: pinned }, null, 2)}\n`);
const t0 = Date.now();
// Install scripts stay on: the CLIs' postinstall links their platform binary (a registry package, nothing downloaded).
const res = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'], { cwd: dir, stdio: 'inherit' });
if (res.status !== 0) {
  console.error(`clients: npm install failed (exit ${res.status ?? res.signal})`);
  process.exit(1);
}
const left = stale();
if (left.length > 0) {
  console.error(`clients: still not at the pinned version after install: ${left.map(([n]) => n).join(' ')}`);
  process.exit(1);
}
console.log(`clients: installed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
