// Opaque reasoning data only goes back to the family that produced it: a stream renderer drops a signature whose
// origin is another family (or unknown), so a client's next turn never carries data its provider would reject.

import t from 'tap';
import { codecFor } from '../../src/wire/registry.js';
import type { CanonicalEvent, Origin } from '../../src/wire/canonical.js';

const FAMILIES: Origin[] = ['anthropic', 'gemini'];

for (const family of FAMILIES) {
  t.test(`${family} stream renderer`, async (t) => {
    const events = (origin: Origin | undefined): CanonicalEvent[] => [
      { type: 'start', id: 'x1', model: 'm' },
      { type: 'reasoning_start', index: 0 },
      { type: 'reasoning_delta', index: 0, text: 'thinking' },
      { type: 'reasoning_signature', index: 0, signature: 'SIG-VALUE-123', ...(origin ? { origin } : {}) },
      { type: 'block_stop', index: 0 },
      { type: 'finish', stopReason: 'end' },
    ];
    const render = (origin: Origin | undefined) => {
      const r = codecFor(family).createStreamRenderer('m');
      return events(origin).map((e) => r.event(e)).join('') + r.end();
    };
    t.match(render(family), /SIG-VALUE-123/, 'its own signature is passed to the client');
    for (const other of ['openai-responses', 'anthropic', 'gemini'] as Origin[]) {
      if (other !== family) t.notMatch(render(other), /SIG-VALUE-123/, `a ${other} signature is dropped`);
    }
    t.notMatch(render(undefined), /SIG-VALUE-123/, 'a signature of unknown origin is dropped');
  });
}
