// FailingClients: the gate reads the wrong-key limiter's store only for clients refused within the window. The one
// property that matters for security: a client refused less than a window ago always counts as failing, however many
// other clients fail meanwhile (past the capacity, every client does until a window has passed).

import t from 'tap';
import fc from 'fast-check';
import { normalizeIP } from '@fastify/rate-limit';
import { FailingClients, clientKey } from '../../src/gate/failing.js';

t.test('a refusal makes its client failing for one window, then it is forgotten', async (t) => {
  let now = 1_000;
  const f = new FailingClients(60_000, 10, () => now);
  t.equal(f.failing('1.2.3.4'), false, 'never refused');
  f.failed('1.2.3.4');
  t.equal(f.failing('1.2.3.4'), true);
  t.equal(f.failing('1.2.3.5'), false, 'another client');
  now += 59_999;
  t.equal(f.failing('1.2.3.4'), true, 'still inside the window');
  now += 1;
  t.equal(f.failing('1.2.3.4'), false, 'the window ended');
  f.failed('1.2.3.4');
  now += 30_000;
  f.failed('1.2.3.4');
  now += 59_000;
  t.equal(f.failing('1.2.3.4'), true, 'a later refusal opens a window of its own');
});

t.test('past its capacity: ended windows are pruned first, then every client counts as failing for a window', async (t) => {
  let now = 0;
  const f = new FailingClients(1_000, 3, () => now);
  f.failed('a');
  f.failed('b');
  now = 1_500;
  f.failed('c');
  f.failed('d');
  t.equal(f.failing('x'), false, "a's and b's ended windows made room: c and d are tracked, no overflow");
  t.equal(f.failing('c'), true);
  t.equal(f.failing('a'), false);
  f.failed('e');
  f.failed('f');
  t.equal(f.failing('x'), true, 'too many failing clients to tell: everyone is read');
  t.equal(f.failing('f'), true);
  now = 2_499;
  t.equal(f.failing('x'), true);
  now = 2_501;
  t.equal(f.failing('x'), false, 'a window after the overflow');
  t.equal(f.failing('d'), false);
});

t.test('property: a client refused less than a window ago is always failing', async (t) => {
  const WINDOW = 100;
  const step = fc.oneof(
    fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 150 }) }),
    fc.record({ kind: fc.constant('fail' as const), client: fc.integer({ min: 0, max: 12 }) }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 6 }), fc.array(step, { maxLength: 80 }), (capacity, steps) => {
      let now = 0;
      const f = new FailingClients(WINDOW, capacity, () => now);
      const last = new Map<number, number>();
      for (const s of steps) {
        if (s.kind === 'wait') now += s.ms;
        else {
          f.failed(String(s.client));
          last.set(s.client, now);
        }
        for (const [client, at] of last) if (now - at < WINDOW && !f.failing(String(client))) return false;
      }
      return true;
    }),
    { numRuns: 2_000 },
  );
  t.pass('held over 2,000 runs');
});

t.test("clientKey is the rate limiter's own key: IPv4 as it is, IPv6 by its /64, mapped IPv4 as IPv4", async (t) => {
  for (const ip of ['127.0.0.1', '203.0.113.9', '2001:db8::1', '2001:DB8:0:0:1::7', '::ffff:198.51.100.4', '::1']) {
    t.equal(clientKey(ip), normalizeIP(ip), ip);
  }
  t.equal(clientKey('2001:db8::1'), clientKey('2001:db8::ffff:2'), 'two addresses of one /64 are one client');
  t.not(clientKey('2001:db8:0:1::1'), clientKey('2001:db8::1'), 'another /64 is another client');
});
