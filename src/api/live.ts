// GET /api/live: the requests in flight as server-sent events (docs/api.md). An `inflight` event carries the whole
// list; it is sent on connect, whenever a request arrives or leaves, and every LIVE_TICK_MS while anything is in
// flight (tokens and duration move), to a client that keeps up (one that does not gets the list as it is once it has
// read the last). With nothing in flight a `: heartbeat` comment every HEARTBEAT_MS keeps
// proxies from closing the stream. The streams end when the app closes, and a stream ends when a config reload removes,
// rotates or re-roles the key it was opened with (the gate's holdWhileKeyValid).
//
// HEAD /api/live (fastify adds HEAD to every GET route) answers the stream's status and headers and ends at once: it
// subscribes to nothing. Before, it ran the GET handler, whose writes Node drops for HEAD, so nothing was ever
// flushed or ended and each such connection held a subscription and a timer until the client gave up.

import type { FastifyPluginAsync } from 'fastify';
import type { LiveRequests } from '../telemetry/live.js';

export const LIVE_TICK_MS = 400;
export const HEARTBEAT_MS = 15_000;

const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-accel-buffering': 'no',
} as const;

export const liveRoutes: FastifyPluginAsync<{ live: LiveRequests }> = async (app, { live }) => {
  const open = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const end of [...open]) end();
    done();
  });

  app.get('/api/live', (req, reply) => {
    reply.hijack();
    const raw = reply.raw;
    if (req.method === 'HEAD') {
      raw.writeHead(200, STREAM_HEADERS).end();
      return;
    }
    raw.writeHead(200, { ...STREAM_HEADERS, connection: 'keep-alive' });
    let lastSent = 0;
    // Each event is the whole list: a client that does not keep up (its socket's buffer full) gets the list as it is
    // once it has read what it was sent, not every list in between (which a reader that never reads would have held
    // in the gateway's memory, growing with the traffic).
    let behind = false;
    const send = (): void => {
      if (raw.writableNeedDrain) {
        behind = true;
        return;
      }
      lastSent = Date.now();
      raw.write(`event: inflight\ndata: ${JSON.stringify({ at: new Date(lastSent).toISOString(), requests: live.list() })}\n\n`);
    };
    raw.on('drain', () => {
      if (!behind) return;
      behind = false;
      send();
    });
    const tick = setInterval(() => {
      if (live.size > 0) send();
      else if (Date.now() - lastSent >= HEARTBEAT_MS && !raw.writableNeedDrain) {
        lastSent = Date.now();
        raw.write(': heartbeat\n\n');
      }
    }, LIVE_TICK_MS);
    tick.unref();
    const unsubscribe = live.onChange(send);
    const end = (): void => {
      clearInterval(tick);
      unsubscribe();
      release();
      open.delete(end);
      if (!raw.writableEnded) raw.end();
    };
    // A reload that revokes, rotates or re-roles the stream's key ends it (src/gate/index.ts).
    const release = app.holdWhileKeyValid(req, end);
    open.add(end);
    req.raw.once('close', end);
    raw.once('close', end);
    raw.write('retry: 2000\n\n');
    send();
  });
};
