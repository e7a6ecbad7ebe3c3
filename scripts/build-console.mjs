// Bundles the console (console/) into dist/console/: app.js (Preact, htm, uPlot and the pages, minified), app.css
// (with uPlot's), index.html and the icon. Run by `npm run build`; the files are served by src/api/console.ts.

import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'console');
const out = join(root, 'dist', 'console');

// Written over, not removed first: a gateway serving the directory never finds it missing (the names are fixed).
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: join(src, 'src', 'main.js') },
  bundle: true, format: 'esm', target: ['es2022'], minify: true, sourcemap: true, outdir: out, logLevel: 'warning',
  legalComments: 'linked',
});
await build({ entryPoints: { app: join(src, 'app.css') }, bundle: true, minify: true, outdir: out, logLevel: 'warning' });
for (const f of ['index.html', 'favicon.svg']) copyFileSync(join(src, f), join(out, f));
