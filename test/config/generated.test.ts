// The config validators (Ajv's standalone code of src/config/schema.ts) and the catalog, prices and limits indexes
// (what pricing and the output limits need of the data packages) are made at build time (scripts/build-generated.mjs)
// into src/config/generated/, which is committed: the committed modules must be what their sources give today, or the
// gateway validates against an old schema or prices (or clamps) from an old catalog. The check is run on a copy made
// stale too, to show that it catches one, and that regenerating gives the committed text back.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import { tempDir } from '../helpers/tmp.js';
import { CONFIG_SCHEMA } from '../../src/config/schema.js';
import validateAsWritten from '../../src/config/generated/config-types-validator.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'build-generated.mjs');
const GENERATED = join(ROOT, 'src', 'config', 'generated');
const VALIDATORS = ['config-validator.ts', 'config-types-validator.ts'];
const FILES = [...VALIDATORS, 'catalog-index.ts', 'prices-index.ts', 'limits-index.ts', 'prices-models.ts'];

/** Exit code and stderr of the script with `args`. */
function run(args: string[]): { code: number; stderr: string } {
  try {
    execFileSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { status: number; stderr: string };
    return { code: e.status, stderr: e.stderr };
  }
}

t.test('the committed modules are what the schema and the catalog give', async (t) => {
  const r = run(['--check']);
  t.equal(r.code, 0, r.stderr || 'fresh');
});

t.test('a stale module is caught, and regenerating gives the committed text', async (t) => {
  const dir = tempDir(t, 'tollgate-generated-');
  for (const f of FILES) writeFileSync(join(dir, f), readFileSync(join(GENERATED, f), 'utf8'));
  t.equal(run(['--check', '--dir', dir]).code, 0, 'a faithful copy passes');
  const edit = (f: string, from: string, to: string) => writeFileSync(join(dir, f), readFileSync(join(GENERATED, f), 'utf8').replace(from, to));
  edit('config-types-validator.ts', 'params:{type: "integer"}', 'params:{type: "number"}');
  edit('catalog-index.ts', '"input":', '"input":0.5+');
  edit('prices-index.ts', '\\"input\\":3,', '\\"input\\":2,');
  edit('limits-index.ts', '[200000,64000]', '[200000,4096]');
  edit('prices-models.ts', '["claude-sonnet-4-5","Claude Sonnet 4.5"],\n', '');
  const stale = run(['--check', '--dir', dir]);
  t.equal(stale.code, 1, 'edited copies fail the check');
  t.match(stale.stderr, 'config-types-validator.ts', 'naming the stale validator');
  t.match(stale.stderr, 'catalog-index.ts', 'and the stale catalog index');
  t.match(stale.stderr, 'prices-index.ts', 'and the stale prices index');
  t.match(stale.stderr, 'limits-index.ts', 'and the stale limits index');
  t.match(stale.stderr, 'prices-models.ts', 'and the stale list of the price source\'s models');
  t.notMatch(stale.stderr, 'config-validator.ts', 'not the one left as it was');
  t.equal(run(['--dir', dir]).code, 0, 'regenerated');
  // compared as booleans: a failure would print two copies of 200 kB modules
  for (const f of FILES) t.ok(readFileSync(join(dir, f), 'utf8') === readFileSync(join(GENERATED, f), 'utf8'), `${f} as committed`);
});

t.test('the generated validators load no Ajv compiler, only its runtime helpers', async (t) => {
  for (const f of VALIDATORS) {
    const imports = [...readFileSync(join(GENERATED, f), 'utf8').matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    // The types-only validator (no string lengths, no uniqueItems) needs no helper at all; the other needs some.
    t.ok((f === 'config-types-validator.ts' || imports.length > 0) && imports.every((p) => p!.startsWith('ajv/dist/runtime/')), `${f}: ${imports.join(', ') || 'no import'}`);
    t.notMatch(readFileSync(join(GENERATED, f), 'utf8'), /require\(/, `${f} has no require() left (an ES module)`);
  }
});

t.test('the validator without coercion finds the same type errors as the whole schema would, at every place a value can go', async (t) => {
  // It is generated from the schema's shape and types alone (scripts/build-generated.mjs, typesOnly): load.ts keeps
  // only its `type` errors. Every path the schema describes (a map's values and a list's items through one sample
  // entry), set in turn to each kind of JSON value, must give the same type errors as the schema compiled whole.
  const whole = new Ajv({ allErrors: true, strict: true }).compile(CONFIG_SCHEMA);
  const typesOnly = validateAsWritten as unknown as ValidateFunction;
  const typeErrors = (v: ValidateFunction, tree: unknown): string[] => {
    v(tree);
    return (v.errors ?? []).filter((e) => e.keyword === 'type').map((e) => `${e.instancePath} ${String(e.params.type)}`).sort();
  };
  const paths: (string | number)[][] = [];
  const walk = (schema: Record<string, unknown>, at: (string | number)[]): void => {
    paths.push(at);
    for (const [k, s] of Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>)) walk(s, [...at, k]);
    if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties as Record<string, unknown>, [...at, 'sample']);
    if (typeof schema.items === 'object') walk(schema.items as Record<string, unknown>, [...at, 0]);
    // The branches typesOnly follows (the config schema has one anyOf today).
    for (const k of ['anyOf', 'oneOf', 'allOf']) for (const s of (schema[k] ?? []) as Record<string, unknown>[]) walk(s, at);
  };
  walk(CONFIG_SCHEMA as unknown as Record<string, unknown>, []);
  t.ok(paths.length > 150, `${paths.length} places`);
  const values: unknown[] = [true, null, 7, 7.5, 'text', [], {}, ['text'], { sample: 1 }];
  let compared = 0;
  let withTypeErrors = 0;
  const differ: string[] = [];
  for (const path of paths) {
    for (const value of values) {
      // The path's containers made on the way: an object for a key, a list for an index (the root: the value itself).
      const root: Record<string | number, unknown> = {};
      let node = root;
      path.forEach((k, i) => {
        if (i === path.length - 1) node[k] = value;
        else node = (node[k] = typeof path[i + 1] === 'number' ? [] : {}) as Record<string | number, unknown>;
      });
      const tree = path.length === 0 ? value : root;
      const expected = typeErrors(whole, tree);
      compared++;
      if (expected.length > 0) withTypeErrors++;
      if (JSON.stringify(typeErrors(typesOnly, tree)) !== JSON.stringify(expected)) differ.push(`${path.join('.')} = ${JSON.stringify(value)}`);
    }
  }
  t.ok(withTypeErrors > 500, `${compared} trees compared, ${withTypeErrors} of them with type errors`);
  t.same(differ, [], 'no tree where the two differ');
});

t.test('a schema keyword the types-only schema would not follow stops the build', async (t) => {
  const { typesOnly } = (await import(pathToFileURL(SCRIPT).href)) as { typesOnly: (schema: unknown) => unknown };
  t.same(typesOnly({ type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] }), { type: 'object', properties: { n: { type: 'integer' } } }, 'what it keeps');
  t.throws(() => typesOnly({ properties: { a: { if: { type: 'string' }, then: { minLength: 1 } } } }), /uses if, then/, 'if / then');
  t.throws(() => typesOnly({ patternProperties: { '^x': { type: 'number' } } }), /patternProperties/, 'patternProperties');
  t.throws(() => typesOnly({ propertyNames: { type: 'string', pattern: '^a' } }), /propertyNames\.type/, 'a type on property names');
  t.doesNotThrow(() => typesOnly({ propertyNames: { pattern: '^a' } }), 'a pattern on property names (no type error can come from it)');
});
