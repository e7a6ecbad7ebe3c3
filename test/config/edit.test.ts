// Config file edits (src/config/edit.ts), pure: a scalar replaced in its source token leaves every other byte; keys
// added and removed keep the comments; ${VAR} values are found and refused; the ETag follows the bytes.

import t from 'tap';
import { parse } from 'yaml';
import { applyEdits, envConflict, envFedPaths, etagOf } from '../../src/config/edit.js';

const TEXT = `# top comment
budgets:
  daily_usd: 10        # aligned comment
  monthly_usd: "\${MONTHLY:-200}"   # from env
providers:
  demo:
    price: { input: 1, output: 2 }   # flow map
    auth: { type: api_key, key: "\${DEMO_KEY}" }
    models:
      echo-1: { kind: llm }
`;

t.test('a scalar edit changes its bytes and nothing else, in block and flow maps', async (t) => {
  const out = applyEdits(TEXT, [{ path: ['budgets', 'daily_usd'], value: 12.5 }, { path: ['providers', 'demo', 'price', 'input'], value: 3 }]);
  t.equal(out, TEXT.replace('daily_usd: 10 ', 'daily_usd: 12.5 ').replace('{ input: 1,', '{ input: 3,'));
  t.equal(applyEdits(TEXT, [{ path: ['budgets', 'daily_usd'], value: 10 }]), TEXT, 'the same value: the same text');
});

t.test('keys added and removed keep every comment', async (t) => {
  const added = applyEdits(TEXT, [{ path: ['providers', 'demo', 'models', 'echo-1', 'price', 'output'], value: 4 }, { path: ['alerts', 'thresholds', 'daily'], value: [50, 100] }]);
  t.match(added, /echo-1: \{ kind: llm, price: \{ output: 4 \} \}/);
  t.match(added, /alerts:\n {2}thresholds:\n {4}daily: \[ 50, 100 \]\n/);
  for (const c of ['# top comment', '# aligned comment', '# from env', '# flow map']) t.ok(added.includes(c), c);
  const removed = applyEdits(TEXT, [{ path: ['budgets', 'daily_usd'], value: undefined }]);
  t.notMatch(removed, /daily_usd/);
  t.match(removed, /monthly_usd: "\$\{MONTHLY:-200\}" # from env/);
  const emptied = applyEdits('a: 1\nbudgets:\n  daily_usd: 3\n', [{ path: ['budgets', 'daily_usd'], value: undefined }]);
  t.equal(emptied, 'a: 1\n', 'a map left empty goes too');
  t.equal(applyEdits(TEXT, [{ path: ['budgets', 'nothing'], value: undefined }]), TEXT, 'removing what is not there changes nothing');
});

t.test('${VAR} values: listed, and an edit on or under one is a conflict', async (t) => {
  t.same(envFedPaths(TEXT), ['budgets.monthly_usd', 'providers.demo.auth.key']);
  t.equal(envConflict(TEXT, [{ path: ['budgets', 'monthly_usd'], value: 1 }]), 'budgets.monthly_usd');
  t.equal(envConflict(TEXT, [{ path: ['providers', 'demo', 'auth'], value: undefined }]), 'providers.demo.auth.key', 'removing the map above it');
  t.equal(envConflict(TEXT, [{ path: ['budgets', 'daily_usd'], value: 1 }]), null);
});

t.test('the ETag is a strong tag of the bytes', async (t) => {
  t.match(etagOf(TEXT), /^"[A-Za-z0-9_-]{32}"$/);
  t.equal(etagOf(TEXT), etagOf(`${TEXT}`));
  t.not(etagOf(TEXT), etagOf(`${TEXT} `));
});

// Every parse of the file for an edit runs with yaml's own duplicate-key check off (it compares each key with every
// earlier one: a 16,000-combo file took 21 s of the event loop for one settings edit, 5.5 s now); duplicates are
// still refused, in block and flow mappings, by the set-based check, for settings edits and `providers add` alike.
t.test('a key twice in one mapping is refused before an edit, found without yaml\'s quadratic check', async (t) => {
  const { editProblem } = await import('../../src/config/edit.js');
  const { addProvider } = await import('../../src/config/edit-providers.js');
  t.equal(editProblem(TEXT), null);
  t.equal(editProblem('budgets:\n  daily_usd: 1\n  daily_usd: 2\n'), 'line 3: YAML syntax: Map keys must be unique');
  t.equal(editProblem('providers:\n  demo:\n    price: { input: 1, input: 2 }\n'), 'line 3: YAML syntax: Map keys must be unique');
  t.throws(() => addProvider('providers:\n  a: {}\n  a: {}\n', { catalogId: 'openai', models: ['gpt-4o'] }), /not valid YAML: Map keys must be unique/);
  let big = 'combos:\n';
  for (let i = 0; i < 2_000; i++) big += `  c${i}: { strategy: fallback, models: [demo/e] }\n`;
  t.equal(editProblem(big), null, 'many keys, none twice');
  t.match(applyEdits(big, [{ path: ['budgets', 'daily_usd'], value: 5 }]), /\nbudgets:\n {2}daily_usd: 5\n$/);
});

// The load keeps a number YAML reads differently from its text as that text (a 20-digit gateway key); an edit that
// writes the file again (a structural edit, an alias made its own, `providers add`) must keep it too, or the key the
// file says stops working at the next reload.
t.test('an edit that writes the file again keeps numbers as written (a 20-digit or hex key, a leading zero)', async (t) => {
  const { parseConfigText } = await import('../../src/config/load.js');
  const { addProvider } = await import('../../src/config/edit-providers.js');
  const head = [
    'server:',
    '  port: 0x1F90',
    '  api_keys:',
    '    - { name: ci, key: 12345678901234567890 }',
    '    - { name: ops, key: 0x1f2e3d4c5b6a79881234 }',
    '    - { name: lead, key: 00701234567890123 }',
  ].join('\n');
  const file = `${head}\nproviders:\n  demo: { group: free, format: mock, models: { echo-1: {} } }\n`;
  const env = { OPENAI_API_KEY: 'sk-test' };
  const keys = (text: string) => parseConfigText(text, env).server.api_keys.map((k) => k.key);
  const written = ['12345678901234567890', '0x1f2e3d4c5b6a79881234', '00701234567890123'];
  t.same(keys(file), written, 'loaded as written');
  const structural = applyEdits(file, [{ path: ['budgets', 'daily_usd'], value: 5 }]);
  t.same(keys(structural), written, 'after a structural edit');
  t.equal(parseConfigText(structural, env).server.port, 8080, 'the port reads the same number');
  const aliased = `${head}\nproviders:\n  a: &p { group: free, format: mock, models: { echo-1: {} } }\n  b: *p\n`;
  const unshared = applyEdits(aliased, [{ path: ['providers', 'b', 'group'], value: 'paid' }]);
  t.notMatch(unshared, /\*p/, 'the alias was made its own (the file written again)');
  t.same(keys(unshared), written, 'after an alias is made its own');
  t.same(keys(addProvider(file, { catalogId: 'openai', models: ['gpt-4o'] }).text), written, 'after providers add');
  // every line the edit did not touch is written back byte for byte: keys unquoted, numbers as the file wrote them
  for (const [name, out] of [['structural', structural], ['providers add', addProvider(file, { catalogId: 'openai', models: ['gpt-4o'] }).text]] as const) {
    for (const line of head.split('\n')) t.ok(out.includes(`${line}\n`), `${name}: '${line.trim()}' kept as written`);
  }
  const prices = 'providers:\n  demo:\n    price: { input: 0.50, output: 1.0 }\n    models: { echo-1: { max_output_tokens: 1e4 } }\nbudgets: { daily_usd: 5 }\n';
  t.equal(applyEdits(prices, [{ path: ['budgets'], value: undefined }]), 'providers:\n  demo:\n    price: { input: 0.50, output: 1.0 }\n    models: { echo-1: { max_output_tokens: 1e4 } }\n', 'number fields untouched: not quoted, not rewritten (0.50, 1.0, 1e4)');
});

// The same for a value with an explicit tag: yaml wrote it from its value (`!!int 0070` as `!!int 70`, `!!str 0070`
// as `!!str "0070"`, `!!float 1e1` as `!!float 1e+1`); the tag and the text are now written back as the file has them.
t.test('providers add that writes the file again keeps tagged values as written, tag and text', async (t) => {
  const { addProvider } = await import('../../src/config/edit-providers.js');
  const head = 'server:\n  port: !!int 0070\nbudgets:\n  daily_usd: !!float 1e1\n  monthly_usd: !<tag:yaml.org,2002:int> "0200"\n';
  const file = `${head}providers: { demo: { name: !!str 0070, format: mock } }\n`;
  const out = addProvider(file, { catalogId: 'openai', models: ['gpt-4o'] }).text;
  t.match(out, /^providers:\n {2}\{\n {4}demo: \{ name: !!str 0070, format: mock \},\n/m, 'a flow providers map: the file written again');
  t.equal(out.slice(0, head.length), head, 'every tagged line above it kept');
});

// A tagged value under a %TAG handle: its line is written back as the file has it, so the directive it uses must be
// written too. yaml writes a %TAG line only for a node that still has a tag under it, and the kept value has none: the
// file written again lost `%TAG !y! tag:yaml.org,2002:` (`!y!float 1e1` then failed to load: a settings edit answered
// 400), and with `%TAG ! tag:yaml.org,2002:` `!int 0070` read as the string "0070", not 70.
t.test('a tagged value under a %TAG handle keeps its directive when the file is written again', async (t) => {
  const { parse } = await import('yaml');
  const { addProvider } = await import('../../src/config/edit-providers.js');
  const cases = [
    { head: '%TAG !y! tag:yaml.org,2002:\n---\n', body: 'budgets:\n  daily_usd: !y!float 1e1\n', value: 10 },
    { head: '%TAG ! tag:yaml.org,2002:\n---\n', body: 'budgets:\n  daily_usd: !int 0070\n', value: 70 },
    { head: '%TAG !! tag:example.com,2000:\n---\n', body: 'budgets:\n  daily_usd: !!int 0070\n', value: '0070' },
    { head: '%TAG !a! tag:example.com,2000:\n%TAG !y! tag:yaml.org,2002:\n---\n', body: 'budgets:\n  daily_usd: !y!int 0070\n  monthly_usd: !a!x 1\n', value: 70 },
  ];
  for (const { head, body, value } of cases) {
    const text = `${head}${body}`;
    t.equal((parse(text, { logLevel: 'error' }) as { budgets: { daily_usd: unknown } }).budgets.daily_usd, value, `${head.trim()}: the file reads ${value}`);
    const edited = applyEdits(text, [{ path: ['alerts', 'thresholds', 'daily'], value: [50, 100] }]);
    t.equal(edited, `${text}alerts:\n  thresholds:\n    daily: [ 50, 100 ]\n`, `${head.trim()}: a structural edit keeps the directives and the tagged lines`);
    t.equal((parse(edited, { logLevel: 'error' }) as { budgets: { daily_usd: unknown } }).budgets.daily_usd, value, 'and the value read again is the same');
    const added = addProvider(`${text}providers: { demo: { format: mock } }\n`, { catalogId: 'openai', models: ['gpt-4o'] }).text;
    t.equal(added.slice(0, text.length), text, `${head.trim()}: providers add keeps them too`);
  }
  const gone = applyEdits('%TAG !y! tag:yaml.org,2002:\n---\nbudgets:\n  daily_usd: !y!float 1e1\nserver: { port: 80 }\n', [{ path: ['budgets'], value: undefined }]);
  t.equal(gone, '---\nserver: { port: 80 }\n', 'a directive no value uses any more goes, as yaml writes it');
});

t.test('a key added under maps that are not there, in a %YAML 1.1 file: plain maps, not !!omap', async (t) => {
  const text = '%YAML 1.1\n---\nserver:\n  port: 4000\n';
  const out = applyEdits(text, [{ path: ['alerts', 'thresholds', 'daily'], value: [50, 100] }, { path: ['budgets', 'daily_usd'], value: 5 }]);
  t.notMatch(out, /omap/, 'no ordered map tag');
  t.ok(out.startsWith('%YAML 1.1\n---\n'), 'the directive kept');
  t.same(parse(out), { server: { port: 4000 }, alerts: { thresholds: { daily: [50, 100] } }, budgets: { daily_usd: 5 } }, 'read back as maps');
  t.same(parse(applyEdits('a: 1\n', [{ path: ['alerts', 'thresholds', 'daily'], value: [1] }])), { a: 1, alerts: { thresholds: { daily: [1] } } }, 'the same in a file without a directive');
});

t.test('a key set under a section left empty keeps the comments on and under it; a null written any way is empty', async (t) => {
  const text = 'a: 1\nbudgets:  # keep in sync with the PO\n  # daily_usd: 3      # finance: never above 5\n  # monthly_usd: 60\nalerts:\n  kinds: { budget: true }\n';
  const out = applyEdits(text, [{ path: ['budgets', 'daily_usd'], value: 7 }]);
  for (const c of ['# keep in sync with the PO', '# daily_usd: 3      # finance: never above 5', '# monthly_usd: 60']) t.ok(out.includes(c), `kept: ${c}`);
  t.same(parse(out), { a: 1, budgets: { daily_usd: 7 }, alerts: { kinds: { budget: true } } });
  for (const v of ['~', 'null', '!!null', '!!null ~', '!!null null', '!!null ""']) {
    t.same(parse(applyEdits(`a: 1\nbudgets: ${v}\n`, [{ path: ['budgets', 'daily_usd'], value: 7 }])), { a: 1, budgets: { daily_usd: 7 } }, `budgets: ${v}`);
  }
  t.throws(() => applyEdits('a: 1\nbudgets: 5\n', [{ path: ['budgets', 'daily_usd'], value: 7 }]), /budgets is not a mapping/);
});

t.test("an empty section's comments: its own written under it before its keys, the next section's left before it", async (t) => {
  const text = 'a: 1\nbudgets:  # keep in sync with the PO\n  # daily_usd: 3\n# Alerts: owned by the on-call team\n\nalerts:\n  kinds: { budget: true }\n';
  const out = applyEdits(text, [{ path: ['budgets', 'daily_usd'], value: 7 }]);
  t.match(out, /budgets:\n {2}# keep in sync with the PO\n {2}# daily_usd: 3\n {2}daily_usd: 7\n/, "the section's note and commented keys under it, before the key set");
  t.match(out, /\n# Alerts: owned by the on-call team\nalerts:/, "the next section's heading stays at column 0 above it");
  t.equal(out.split('# Alerts').length, 2, 'once');
  const end = applyEdits('a: 1\nbudgets:\n\n# trailing file note\n', [{ path: ['budgets', 'daily_usd'], value: 7 }]);
  t.match(end, /budgets:\n {2}daily_usd: 7\n\n# trailing file note\n$/, "a note at the end of the file stays the file's");
});

t.test('a copy made for an alias keeps the alias\'s comments, not the anchor\'s: each comment written once', async (t) => {
  const text = [
    'providers:', '  demo:', '    format: mock', '    price: &none ~  # no list price', '    models:', '      echo-1:', '        kind: llm',
    '        price: &p  # TBD with finance', '          # input: 3', '      echo-2: { kind: llm, price: *p }', '      echo-3:', '        kind: llm',
    '        price: *none  # ask finance', '',
  ].join('\n');
  const at = (m: string) => ['providers', 'demo', 'models', m, 'price', 'input'];
  const out = applyEdits(text, [{ path: at('echo-1'), value: 5 }, { path: at('echo-2'), value: 5 }, { path: at('echo-3'), value: 7 }]);
  for (const c of ['# TBD with finance', '# input: 3', '# ask finance', '# no list price']) t.equal(out.split(c).length, 2, `${c}: once`);
  t.match(out, /echo-2: \{ kind: llm, price: \{ input: 5 \} \}/, 'the flow entry stays one line');
  t.match(out, /echo-3:\n {8}kind: llm\n {8}price:\n {10}# ask finance\n {10}input: 7/, "the alias's own comment on its new map");
  t.same(parse(out).providers.demo.models, { 'echo-1': { kind: 'llm', price: { input: 5 } }, 'echo-2': { kind: 'llm', price: { input: 5 } }, 'echo-3': { kind: 'llm', price: { input: 7 } } });
});

// The load reads every mapping key as a string (`2024:` is the provider "2024", `3.5:` the model "3.5"), and the
// settings API names them so; an edit looked the path up with that string, which is not the integer key 2024, and
// made a second key `"2024":` beside the real one (a price for provider 2024 answered 400, its group "required").
t.test('a path segment finds the key the load reads as it: an integer, a float, a null or a 1.1 boolean key', async (t) => {
  const { parseConfigText } = await import('../../src/config/load.js');
  const file = 'providers:\n  2024:\n    group: paid\n    format: mock\n    models:\n      echo-1: { kind: llm }\n      3.5: { kind: llm }\n      1.0: { kind: llm }\n';
  const priced = applyEdits(file, [{ path: ['providers', '2024', 'models', 'echo-1', 'price', 'input'], value: 1 }, { path: ['providers', '2024', 'models', 'echo-1', 'price', 'output'], value: 2 }]);
  t.equal(priced.match(/2024/g)?.length, 1, 'one 2024 key');
  t.match(priced, /\n {2}2024:\n {4}group: paid\n/, 'still the integer key');
  t.same(parseConfigText(priced, {}).providers['2024']!.models['echo-1']!.price, { input: 1, output: 2 }, 'the price under it');
  t.equal(applyEdits(file, [{ path: ['providers', '2024', 'models', '1.0', 'kind'], value: 'embedding' }]), file.replace('1.0: { kind: llm }', '1.0: { kind: embedding }'), '1.0 (read as "1.0", yaml\'s value 1): its scalar replaced in place');
  const floats = applyEdits(file, [{ path: ['providers', '2024', 'models', '3.5', 'price'], value: { input: 4, output: 5 } }, { path: ['providers', '2024', 'models', '1.0', 'kind'], value: 'embedding' }]);
  t.match(floats, /\n {6}3\.5: \{ kind: llm, price: \{ input: 4, output: 5 \} \}\n/, 'a float-looking model id: the price under 3.5');
  t.match(floats, /\n {6}"1\.0": \{ kind: embedding \}\n/, 'and 1.0 beside it, in the file written again (its key as the load reads it)');
  t.same(Object.keys(parseConfigText(floats, {}).providers['2024']!.models), ['echo-1', '3.5', '1.0'], 'no key added beside them');
  const removed = applyEdits(file, [{ path: ['providers', '2024', 'models', '3.5'], value: undefined }]);
  t.notMatch(removed, /3\.5/, 'a removal finds it too');
  t.equal(applyEdits('budgets:\n  daily_usd: 3\nmodels:\n  "2024": { a: 1 }\n', [{ path: ['models', '2024', 'a'], value: 2 }]), 'budgets:\n  daily_usd: 3\nmodels:\n  "2024": { a: 2 }\n', 'a key that is a string already');
  t.equal(applyEdits('m:\n  ~: { a: 1 }\n', [{ path: ['m', '', 'a'], value: 2 }]), 'm:\n  ~: { a: 2 }\n', 'a null key (read as "")');
  t.equal(applyEdits('%YAML 1.1\n---\nm:\n  yes: { a: 1 }\n', [{ path: ['m', 'true', 'b'], value: 2 }]), '%YAML 1.1\n---\nm:\n  yes: { a: 1, b: 2 }\n', 'yes under YAML 1.1 (read as "true")');
  t.match(applyEdits(file, [{ path: ['providers', '2025', 'group'], value: 'free' }]), /\n {2}"2025":\n {4}group: free\n$/, 'a segment no key matches: a new string key');
  const aliased = 'providers:\n  2024: &p { group: paid, format: mock, models: { echo-1: {} } }\n  7: *p\n';
  t.same(parseConfigText(applyEdits(aliased, [{ path: ['providers', '7', 'group'], value: 'free' }]), {}).providers['7']!.group, 'free', 'an alias under an integer key made its own');
  const fed = 'providers:\n  1.0:\n    price: { input: "${P_IN}" }\n';
  t.equal(envConflict(fed, [{ path: ['providers', '1.0', 'price', 'input'], value: 1 }]), 'providers.1.0.price.input', 'a ${VAR} under 1.0 is found at the path the load reads');
});

t.test("a nested empty section last in its map: the next section's heading stays before that section", async (t) => {
  const text = 'budgets:\n  daily_usd: 5\n  auto_switch:\n    # enabled: true\n# ---- alerts ----\nalerts:\n  kinds: { budget: true }\n';
  const out = applyEdits(text, [{ path: ['budgets', 'auto_switch', 'enabled'], value: true }]);
  t.match(out, /auto_switch:\n {4}# enabled: true\n {4}enabled: true\n# ---- alerts ----\nalerts:/, 'the commented key under it, the heading at column 0 above alerts');
  t.equal(out.split('# ---- alerts ----').length, 2, 'once');
  const last = applyEdits('providers:\n  demo:\n    price:\n      # input: 1\n# end of providers\n', [{ path: ['providers', 'demo', 'price', 'input'], value: 2 }]);
  t.match(last, /price:\n {6}# input: 1\n {6}input: 2\n\n?# end of providers\n$/, 'no key after it anywhere: the note stays at the end of the file');
});

t.test('a key written two ways that the load reads as one ("2024" and 2024) is a duplicate, as 1 and 1.0 are', async (t) => {
  const { editProblem } = await import('../../src/config/edit.js');
  t.equal(editProblem('providers:\n  "2024": { group: a }\n  2024: { group: b }\n'), 'line 3: YAML syntax: Map keys must be unique');
  t.equal(editProblem('m:\n  1: a\n  1.0: b\n'), 'line 3: YAML syntax: Map keys must be unique', 'the same value, as before');
  t.equal(editProblem('m:\n  "2024": a\n  "2025": b\n  2026: c\n'), null, 'different keys pass');
});
