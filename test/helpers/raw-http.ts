// Raw HTTP requests for gate and fuzz tests: node:http sends the path exactly as written (no normalisation of
// `..`, `//` or percent-encoding, unlike fetch), and `from` picks the local address (127.0.0.2, 127.0.0.3, ...: all of
// 127/8 is routed to lo on Linux), so one test can be several clients.

import { request } from 'node:http';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function send(
  base: string, method: string, path: string, opts: { headers?: Record<string, string>; body?: string; from?: string } = {},
): Promise<Answer> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname, port: u.port, method, path, localAddress: opts.from,
        headers: { ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** The `error.code` of an answer in the documented error shape, or a note that it is not one. */
export function errorCode(a: Answer): unknown {
  try {
    return (JSON.parse(a.body) as { error?: { code?: unknown } }).error?.code;
  } catch {
    return `not JSON: ${a.body.slice(0, 80)}`;
  }
}
