// The console: `/` answers the page (to a browser; any other client still gets `{name, version}`, and HEAD / is a
// 200 either way, which Claude Code probes), `/console/*` its files, built by `npm run build` into dist/console
// (scripts/build-console.mjs), and `/console/auth` whether the page must ask for a key. The files hold no data and are public; everything they show comes from /api/*,
// behind the keys. A strict Content-Security-Policy: nothing but this origin, no inline script or style.
//
// The files are sent by @fastify/send (conditional GETs, ranges, content types: the module @fastify/static sends
// with), loaded on the first file asked for: a gateway that never shows its console never loads it, and the start
// does not wait for it (@fastify/static took 35-55 ms of every start, docs/benchmarks.md). Only the files the build
// wrote are served, by exact name, so no path a client writes reaches the file system.

import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { SendResult } from '@fastify/send';
import { TollgateError, type ErrorCode } from '../core/errors.js';

export const CONSOLE_PREFIX = '/console/';
/** dist/console, from src/api (tests) and dist/api (the package) alike. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

export const CONSOLE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "font-src 'self'", "manifest-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

function secure(reply: { header(k: string, v: string): unknown }): void {
  reply.header('content-security-policy', CONSOLE_CSP);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
  reply.header('cross-origin-opener-policy', 'same-origin');
}

const wantsHtml = (accept: string | undefined): boolean => accept !== undefined && /\btext\/html\b/.test(accept);

export interface ConsoleOptions {
  readonly version: string;
  /** Whether the gateway has keys (server.api_keys), read per request: the page asks for one, or does not. */
  readonly keysRequired: () => boolean;
  readonly dir?: string;
}

const SEND_ERRORS: Readonly<Record<number, ErrorCode>> = {
  400: 'TOLLGATE_ERR_BAD_REQUEST', 403: 'TOLLGATE_ERR_NOT_FOUND', 412: 'TOLLGATE_ERR_PRECONDITION_FAILED', 416: 'TOLLGATE_ERR_RANGE_NOT_SATISFIABLE',
};

type Send = (req: FastifyRequest['raw'], path: string, options: Record<string, unknown>) => Promise<SendResult>;
let sendModule: Promise<Send> | undefined;
const loadSend = (): Promise<Send> => (sendModule ??= import('@fastify/send').then((m) => m.default as unknown as Send));

/**
 * Send `name` from `root`, revalidated on every load (`no-cache` with its ETag: a 304 while unchanged). The built
 * files keep their names from one build to the next, so a browser that cached `app.js` for an hour went on running the
 * old console after an upgrade, a fix to it included. A file that vanished since the start is a 404.
 */
async function sendFile(req: FastifyRequest, reply: FastifyReply, root: string, name: string): Promise<FastifyReply> {
  const send = await loadSend();
  const r = await send(req.raw, `/${encodeURIComponent(name)}`, {
    root, index: false, dotfiles: 'deny', etag: true, lastModified: true, cacheControl: false,
  });
  if (r.type === 'file') {
    reply.code(r.statusCode).headers(r.headers);
    secure(reply);
    reply.header('cache-control', 'no-cache');
    return reply.send(r.stream);
  }
  if (r.type === 'error' && r.statusCode !== 404) {
    // What a request can get wrong (a range past the end, a failed If-Match) in the one error shape, with the
    // headers send gives (Content-Range on a 416); anything else is the file system failing.
    const e = SEND_ERRORS[r.statusCode];
    if (e === undefined) throw r.metadata.error;
    reply.headers(r.headers);
    throw new TollgateError(e, r.metadata.error.message);
  }
  reply.callNotFound();
  return reply;
}

export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, opts) => {
  const root = opts.dir ?? CONSOLE_DIR;
  const built = existsSync(root);
  // What the build wrote (one flat directory); dotfiles never.
  const files = new Set(built ? readdirSync(root, { withFileTypes: true }).filter((e) => e.isFile() && !e.name.startsWith('.')).map((e) => e.name) : []);

  app.get(`${CONSOLE_PREFIX}*`, async (req, reply) => {
    const name = (req.params as { '*': string })['*'];
    if (!files.has(name)) {
      reply.callNotFound();
      return reply;
    }
    return sendFile(req, reply, root, name);
  });

  // Whether to ask for a key, without spending one of the client's wrong-key attempts on finding out (a 401 from any
  // route tells the same, so this says nothing new).
  app.get('/console/auth', async (_req, reply) => {
    secure(reply);
    reply.header('cache-control', 'no-store');
    return { keys_required: opts.keysRequired() };
  });

  app.get('/', async (req, reply: FastifyReply) => {
    if (!wantsHtml(req.headers.accept)) return { name: 'tollgate', version: opts.version };
    if (!built) {
      secure(reply);
      reply.header('cache-control', 'no-cache');
      return reply.type('text/plain; charset=utf-8').code(503).send(`the console is not built: run npm run build (it writes ${root})\n`);
    }
    return sendFile(req, reply, root, 'index.html');
  });
};
