// Raw HTTP for gate and fuzz tests. `send` goes through node:http, which sends the path exactly as written (no
// normalisation of `..`, `//` or percent-encoding, unlike fetch), and `from` picks the local address (127.0.0.2,
// 127.0.0.3, ...: all of 127/8 is routed to lo on Linux), so one test can be several clients. `exchange` is a raw
// HTTP/1.1 client on net.connect, for requests an HTTP client library refuses to send (bad request lines, invalid
// header characters, duplicated or oversized headers, paths with any byte): the request is written as given, the
// connection closes after one answer, and the answer is parsed here (Content-Length or chunked).

import { request } from 'node:http';
import { connect } from 'node:net';

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

export interface RawAnswer {
  /** 0 when the server closed the connection without a status line. */
  readonly status: number;
  /** Lower-cased names; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawRequest {
  readonly method: string;
  /** Sent as is (no encoding). */
  readonly path: string;
  /** Name/value pairs, sent in order; a name may repeat. */
  readonly headers?: readonly (readonly [string, string])[];
  /** A Content-Length is added unless the headers carry one or a Transfer-Encoding. */
  readonly body?: string | Buffer;
}

/** The bytes of one request: `Host` and `Connection: close` first, then the given headers. */
export function requestBytes(r: RawRequest): Buffer {
  const body = r.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body);
  const headers = r.headers ?? [];
  const framed = headers.some(([n]) => /^(content-length|transfer-encoding)$/i.test(n));
  const lines = [`${r.method} ${r.path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close', ...headers.map(([n, v]) => `${n}: ${v}`)];
  if (!framed && (body.length > 0 || r.method === 'POST')) lines.push(`content-length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** Write `bytes`, read until the server closes; rejects after `timeoutMs` (a hang) or on a socket error. */
export function exchange(port: number, bytes: Buffer | string, timeoutMs = 5000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    // A reset after the answer was written (the server destroys the socket on a parse error) still has the answer.
    const done = (err?: Error) => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      if (raw.length === 0 && err !== undefined) reject(err);
      else resolve(parseAnswer(raw));
    };
    socket.on('error', done);
    socket.on('close', () => done());
    // Not end(): a half-closed socket makes Node's server abort the request in flight (httpAllowHalfOpen is off).
    socket.write(bytes);
  });
}

export function parseAnswer(raw: Buffer): RawAnswer {
  // An interim answer (100 Continue) comes before the real one.
  while (/^HTTP\/1\.[01] 1\d\d /.test(raw.subarray(0, 16).toString('latin1')) && raw.indexOf('\r\n\r\n') !== -1) raw = raw.subarray(raw.indexOf('\r\n\r\n') + 4);
  const split = raw.indexOf('\r\n\r\n');
  if (split === -1) return { status: 0, headers: {}, body: raw.toString('latin1') };
  const [statusLine = '', ...lines] = raw.subarray(0, split).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const colon = l.indexOf(':');
    if (colon > 0) headers[l.slice(0, colon).trim().toLowerCase()] = l.slice(colon + 1).trim();
  }
  let body = raw.subarray(split + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(body);
  return { status, headers, body: body.toString('utf8') };
}

function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = b.indexOf('\r\n', at);
    if (eol === -1) break;
    const size = parseInt(b.subarray(at, eol).toString('latin1'), 16);
    if (!(size > 0)) break;
    out.push(b.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}
