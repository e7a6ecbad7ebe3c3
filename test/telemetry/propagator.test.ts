// The W3C trace-context propagator is imported from its own module of @opentelemetry/core (src/telemetry/tracing.ts:
// the package's index loads all of it at start). This pins that module to the index's class, so a release of the
// package that moves or changes the file is caught here, and checks what it does with a client's headers.

import t from 'tap';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator as FromIndex } from '@opentelemetry/core';
import { W3CTraceContextPropagator } from '@opentelemetry/core/build/src/trace/W3CTraceContextPropagator.js';

const getter = { keys: (c: Record<string, string>) => Object.keys(c), get: (c: Record<string, string>, k: string) => c[k] };
const setter = { set: (c: Record<string, string>, k: string, v: string) => void (c[k] = v) };

t.test('the module is the class the package exports', async (t) => {
  t.equal(W3CTraceContextPropagator, FromIndex, 'one class, the same module');
});

t.test('a client\'s traceparent and tracestate in, the same out', async (t) => {
  const p = new W3CTraceContextPropagator();
  const ctx = p.extract(ROOT_CONTEXT, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'a=1,b=2' }, getter);
  t.match(trace.getSpanContext(ctx), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true });
  const out: Record<string, string> = {};
  p.inject(ctx, out, setter);
  t.same(out, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'a=1,b=2' });
  t.equal(trace.getSpanContext(p.extract(ROOT_CONTEXT, { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }, getter)), undefined, 'an all-zero trace id is no parent');
});
