// Model resolution against names that are properties of Object.prototype: a provider prefix or a model id such as
// '__proto__', 'constructor' or 'hasOwnProperty' is "not configured", never an inherited value (which used to reach
// the handlers as a provider row and end as a 500). Every lookup keyed by client input goes through own().

import t, { type Test } from 'tap';
import { own } from '../../src/core/own.js';
import { resolveModel } from '../../src/routing/resolve.js';
import { comboOf } from '../../src/routing/combos.js';
import { autoSwitch, switchTargetExists } from '../../src/routing/auto-switch.js';
import { effectivePrice } from '../../src/ledger/cost.js';
import { DEMO_PROVIDER, testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const PROTO_NAMES = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf', 'isPrototypeOf'];

const cfg = testConfig(
  {
    providers: {
      demo: DEMO_PROVIDER,
      open: { ...DEMO_PROVIDER, allow_unlisted_models: true },
    },
    combos: { duo: { strategy: 'fallback', models: ['demo/echo-1'] } },
    budgets: { daily_usd: 1, auto_switch: { enabled: true, to: 'duo' } },
  },
  tempDir(t),
);

const notFound = (t: Test, model: string) =>
  t.throws(() => resolveModel(cfg, model), { code: 'TOLLGATE_ERR_MODEL_NOT_FOUND', param: 'model' }, model);

t.test('own() reads own properties only', async (t) => {
  const table: Record<string, number> = { a: 1 };
  t.equal(own(table, 'a'), 1);
  for (const k of PROTO_NAMES) t.equal(own(table, k), undefined, k);
  t.equal(own(JSON.parse('{"__proto__": 2}') as Record<string, number>, '__proto__'), 2, 'an own __proto__ key is found');
});

t.test('a prototype name as the provider prefix is an unknown model', async (t) => {
  for (const p of PROTO_NAMES) notFound(t, `${p}/x`);
});

t.test('a prototype name as the model id: unknown on a listed provider, unlisted (no model config) on an open one', async (t) => {
  for (const m of PROTO_NAMES) {
    notFound(t, `demo/${m}`);
    const r = resolveModel(cfg, `open/${m}`);
    t.equal(r.modelConfig, null, `open/${m} has no model config`);
    t.equal(r.modelId, m);
  }
});

t.test('malformed names are unknown models', async (t) => {
  for (const m of ['demo/', '/x', '/', '', 'x(', 'x(high)', 'demo']) notFound(t, m);
});

t.test('combos, the auto-switch and prices ignore inherited names', async (t) => {
  const within = { dailyExceeded: () => false };
  const exceeded = { dailyExceeded: () => true };
  for (const n of PROTO_NAMES) {
    t.equal(comboOf(cfg, n), undefined, `comboOf ${n}`);
    t.notOk(switchTargetExists(cfg, n), `switchTargetExists ${n}`);
    t.notOk(switchTargetExists(cfg, `${n}/x`), `switchTargetExists ${n}/x`);
    t.same(autoSwitch(cfg, `${n}/x`, within), { model: `${n}/x`, switched: false });
    // An unknown target spends nothing that is known: it is switched like any paid one, and never throws.
    t.doesNotThrow(() => autoSwitch(cfg, `${n}/x`, exceeded), `autoSwitch ${n}/x`);
    t.same(effectivePrice(cfg.providers.demo!, n), { input: 1, output: 2, cached: 0.5 }, `price of demo/${n}: the provider's`);
  }
});
