// The console: `/` answers the page (to a browser; any other client still gets `{name, version}`, and HEAD / is a
// 200 either way, which Claude Code probes), `/console/*` its files, built by `npm run build` into dist/console
// (scripts/build-console.mjs), and `/console/auth` whether the page must ask for a key. The files hold no data and are public; everything they show comes from /api/*,
// behind the keys. A strict Content-Security-Policy: nothing but this origin, no inline script or style.

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import fastifyStatic from '@fastify/static';

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

export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, opts) => {
  const root = opts.dir ?? CONSOLE_DIR;
  const built = existsSync(root);
  if (built) {
    await app.register(fastifyStatic, {
      root, prefix: CONSOLE_PREFIX, index: false, list: false, dotfiles: 'deny', cacheControl: true, maxAge: '1h',
      setHeaders: (reply) => secure(reply),
    });
  }

  // Whether to ask for a key, without spending one of the client's wrong-key attempts on finding out (a 401 from any
  // route tells the same, so this says nothing new).
  app.get('/console/auth', async (_req, reply) => {
    secure(reply);
    reply.header('cache-control', 'no-store');
    return { keys_required: opts.keysRequired() };
  });

  app.get('/', async (req, reply: FastifyReply) => {
    if (!wantsHtml(req.headers.accept)) return { name: 'tollgate', version: opts.version };
    secure(reply);
    reply.header('cache-control', 'no-cache');
    if (!built) return reply.type('text/plain; charset=utf-8').code(503).send(`the console is not built: run npm run build (it writes ${root})\n`);
    return reply.sendFile('index.html');
  });
};
