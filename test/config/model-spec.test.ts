// `<provider>/<model_id>` is split on the first '/' in one place (src/config/model-spec.ts); routing, the config's
// checks, the metrics' declared series and the live view read a spec through it, so they agree on every name.

import t from 'tap';
import fc from 'fast-check';
import { splitModelSpec } from '../../src/config/model-spec.js';

t.test('the first slash splits; later slashes belong to the model id', async (t) => {
  t.same(splitModelSpec('openai/gpt-4o'), { provider: 'openai', modelId: 'gpt-4o' });
  t.same(splitModelSpec('openrouter/meta-llama/llama-3-70b'), { provider: 'openrouter', modelId: 'meta-llama/llama-3-70b' });
  t.same(splitModelSpec('p/'), { provider: 'p', modelId: '' });
});

t.test('no provider before the first slash is no spec', async (t) => {
  for (const s of ['', 'gpt-4o', '/gpt-4o', '/', '//x']) t.equal(splitModelSpec(s), null, JSON.stringify(s));
});

t.test('provider + "/" + model id gives the spec back, for any names', async (t) => {
  fc.assert(
    fc.property(fc.string({ minLength: 1 }).filter((p) => !p.includes('/')), fc.string(), (provider, modelId) => {
      const s = splitModelSpec(`${provider}/${modelId}`);
      return s !== null && s.provider === provider && s.modelId === modelId;
    }),
  );
  t.pass('property held');
});
