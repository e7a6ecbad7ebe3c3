// The CLI's start (issue 17; docs/benchmarks.md, "Where the start goes"): dist/main.js and every module of ours it
// imports, bundled into dist/bundle/ (esbuild; packages stay imports of node_modules), and dist/main.js replaced by a
// two-line file that imports the bundle. Loading about 170 modules one by one was about 150 ms of a start on the
// benchmark machine (spawn to the first proxied 200: median 912 ms for the tsc tree, 762 for the bundle, alternated).
//
// - Code splitting keeps what main.ts imports lazily (the app, the CLI's subcommands) in chunks of its own, loaded
//   when imported, and a package imported only there is imported only by that chunk.
// - dist/bundle/ is two directories under the package root, as every tsc-emitted module that resolves a path from its
//   own file is (`new URL('../../CHANGELOG.md', import.meta.url)`, the console's directory, package.json): the same
//   relative paths hold in the bundle. test/app/bundle.test.ts runs the built CLI and checks each.
// - The rest of dist/ (tsc's tree) stays: the benchmark and the tools import modules of it in process.
// - Source maps chain to src/ (esbuild reads tsc's maps).
//
// Run by `npm run build` after tsc.

import { build } from 'esbuild';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
await build({
  entryPoints: { main: join(dist, 'main.js') },
  outdir: join(dist, 'bundle'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
const main = join(dist, 'main.js');
writeFileSync(main, "#!/usr/bin/env node\n// The CLI: its modules are bundled in dist/bundle/ (scripts/build-bundle.mjs).\nimport './bundle/main.js';\n");
chmodSync(main, 0o755);
rmSync(`${main}.map`, { force: true });
