// A recording relay between the gateway and a fake upstream: every request is forwarded as it came (method, path,
// headers, body) and the upstream's answer is returned as it came, its bytes kept, so a test can compare what the
// upstream sent with what the client received.

import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface TeeExchange {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The upstream's answer, byte for byte (resolves when it ended). */
  readonly answer: Promise<Buffer>;
}

export interface Tee {
  /** The relay's origin: use it in base_url in place of the upstream's. */
  readonly origin: string;
  readonly exchanges: TeeExchange[];
}

export async function startTee(t: { teardown(fn: () => unknown): void }, upstream: string): Promise<Tee> {
  const target = new URL(upstream);
  const exchanges: TeeExchange[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let done!: (b: Buffer) => void;
    const answer = new Promise<Buffer>((r) => (done = r));
    exchanges.push({ path: req.url ?? '', headers: req.headers, answer });
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      const parts: Buffer[] = [];
      ur.on('data', (c: Buffer) => {
        parts.push(c);
        res.write(c);
      });
      ur.on('end', () => {
        done(Buffer.concat(parts));
        res.end();
      });
      ur.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exchanges };
}
