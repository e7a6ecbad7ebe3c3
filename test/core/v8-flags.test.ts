// The V8 flags the gateway sets on itself (src/core/v8-flags.ts): one on for a call only, off again after it however
// the call ends (seen through --expose-gc: a context made inside has a global gc, one made after has none).

import { runInNewContext } from 'node:vm';
import t from 'tap';
import { namesV8Flag, withV8Flag } from '../../src/core/v8-flags.js';

const gcInANewContext = () => runInNewContext('typeof gc');

t.test('a flag is on for the call and off after it, a throwing call included', async (t) => {
  t.equal(gcInANewContext(), 'undefined', 'off before');
  t.equal(withV8Flag('expose-gc', gcInANewContext), 'function', 'on during the call');
  t.equal(gcInANewContext(), 'undefined', 'off after');
  t.throws(() => withV8Flag('expose-gc', () => {
    throw new Error('boom');
  }), /boom/);
  t.equal(gcInANewContext(), 'undefined', 'off after a call that threw');
});

t.test("node's flags name a V8 flag in any of its spellings, and no other flag", async (t) => {
  t.ok(namesV8Flag('expose-gc', ['--expose_gc']));
  t.ok(namesV8Flag('compact-on-every-full-gc', ['--no-compact-on-every-full-gc']));
  t.notOk(namesV8Flag('compact-on-every-full-gc', ['--compact', '--compact-on-every-full-gc-x']));
  t.notOk(namesV8Flag('expose-gc', []));
});
