// Real receivers for alert deliveries, on loopback: an SMTP server (the smtp-server package) that keeps every message
// it accepts, a TCP server that never greets, and a webhook receiver that verifies the signature.

import { createServer as createNetServer, type Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SMTPServer } from 'smtp-server';
import { verifySignature } from '../../src/alerts/channels/webhook.js';
import { listenLoopback } from './loopback.js';

/** What the helpers need of a test: somewhere to register cleanup. */
type T = { teardown(fn: () => unknown): void };

// ---- a real SMTP server ---------------------------------------------------------------------------------------

export interface Mail {
  readonly from: string;
  readonly rcpt: string[];
  readonly user: string | undefined;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Headers (unfolded, lower-cased names) and body of a raw RFC 5322 message; quoted-printable bodies decoded. */
export function parseMessage(raw: string): { headers: Record<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n')) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.slice(split + 4);
  if (/quoted-printable/i.test(headers['content-transfer-encoding'] ?? '')) {
    body = Buffer.from(
      body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
      'latin1',
    ).toString('utf8');
  }
  return { headers, body: body.replace(/\r\n/g, '\n') };
}

export async function smtpServer(t: T, auth?: { user: string; pass: string }): Promise<{ port: number; mails: Mail[] }> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(a, _session, cb) {
      if (auth && a.username === auth.user && a.password === auth.pass) cb(null, { user: a.username });
      else cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      const parts: Buffer[] = [];
      stream.on('data', (c: Buffer) => parts.push(c));
      stream.on('end', () => {
        const { headers, body } = parseMessage(Buffer.concat(parts).toString('utf8'));
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcpt: session.envelope.rcptTo.map((r) => r.address),
          user: typeof session.user === 'string' ? session.user : undefined,
          headers,
          body,
        });
        cb();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.server.address() as { port: number }).port, mails };
}

/** A TCP server that accepts and never says a word: an SMTP server that hangs before its greeting. */
export async function silentServer(t: T): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createNetServer((s) => {
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
  return (server.address() as { port: number }).port;
}

// ---- a real webhook receiver ----------------------------------------------------------------------------------

export interface Received {
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  readonly signed: boolean;
}

/**
 * A receiver that checks the signature with `verifySignature` (401 when it fails) and otherwise answers the
 * status `answer(n)` gives for its n-th request (1-based), after `delayMs`.
 */
export async function receiver(
  t: T,
  secret: string,
  answer: (n: number) => number = () => 204,
  delayMs = 0,
): Promise<{ url: string; got: Received[] }> {
  const got: Received[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const body = Buffer.concat(parts).toString('utf8');
    const ts = req.headers['x-tollgate-timestamp'];
    const sig = req.headers['x-tollgate-signature'];
    const signed = verifySignature(secret, typeof ts === 'string' ? ts : undefined, body, typeof sig === 'string' ? sig : undefined);
    got.push({ headers: req.headers, body, signed });
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (!signed) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('bad signature');
      return;
    }
    const status = answer(got.length);
    // The error page echoes the request path and query, as many do: the recorded error must not carry them.
    res.writeHead(status, { 'content-type': 'text/plain' }).end(status >= 300 ? `failing on purpose (${status}) at ${req.url}` : '');
  };
  const lb = await listenLoopback(t, handle, (_err, res) => res.writeHead(500).end());
  return { url: `http://127.0.0.1:${lb.port}/hooks/tollgate?token=abc`, got };
}

