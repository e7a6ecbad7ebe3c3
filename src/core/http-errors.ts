// Refusals that happen before any route runs, in the one error shape of docs/errors.md: a URL the router cannot
// decode (fastify's `frameworkErrors`: FST_ERR_BAD_URL, FST_ERR_MAX_PARAM_LENGTH) and bytes Node's HTTP parser
// rejects (`clientErrorHandler`: headers over the size limit, bad chunked framing, invalid header characters, a bad
// request line). The parser's answer is written to the raw socket as a complete HTTP/1.1 response that closes.
// An unknown `Expect` is served rather than answered with Node's bodiless 417.

import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError, errorBody, toTollgateError } from './errors.js';

/** fastify's `frameworkErrors` option: the router's own refusals, answered like any other error. */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const e = toTollgateError(err);
  req.log[e.level]({ code: e.code, cause: err.code }, e.message);
  void reply.code(e.status).send(errorBody(e, null));
}

/**
 * A request whose query string does not decode (a `%` not followed by two hex digits, or bytes that are not UTF-8):
 * the error to refuse it with, else null. fastify's query parser takes such text as it came (`?provider=%E0%A4%A`
 * filtered on the raw text), where the path's router refuses it (FST_ERR_BAD_URL): both are 400 BAD_REQUEST. A query
 * without a `%` is not looked at.
 */
export function badQuery(url: string): TollgateError | null {
  const q = url.indexOf('?');
  if (q === -1 || url.indexOf('%', q) === -1) return null;
  try {
    decodeURIComponent(url.slice(q + 1));
    return null;
  } catch {
    return new TollgateError('TOLLGATE_ERR_BAD_REQUEST', 'the query string does not decode (bad percent-encoding)');
  }
}

/** The error for bytes the HTTP parser refused (Node's `llhttp` codes, `HPE_*`). */
export function parserError(err: { code?: string }): TollgateError {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return new TollgateError('TOLLGATE_ERR_HEADERS_TOO_LARGE', 'request headers are larger than the server accepts (16 KiB unless --max-http-header-size says otherwise)');
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new TollgateError('TOLLGATE_ERR_BAD_REQUEST', 'the request was not received in time');
  return new TollgateError('TOLLGATE_ERR_BAD_REQUEST', `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'})`);
}

/**
 * Sockets whose request `server.request_timeout_s` cut (answered 400 here), each with the request id that answer
 * carried (`x-request-id` and the body's `request_id`): the request's own error handler records the 400 it got under
 * that id, not a client that left (pipeline/request.ts, answerRefusal). Without a row (a route that records none, or
 * headers that never ended) the id is the one in the log line.
 */
export const timedOutSockets = new WeakMap<Socket, string>();

export interface ClientErrorOptions {
  /** A new request id (the ledger's UUIDv7): the id a timed-out request's 400 and its row share. */
  readonly newRequestId: () => string;
}

/**
 * fastify's `clientErrorHandler` option (Node's 'clientError' event): answer on the socket, then close it. A reset
 * connection, or one that can no longer be written to, is only destroyed. The answer is written before any handler
 * of the request exists, so a request cut by `server.request_timeout_s` is given its request id here.
 */
export function clientErrorHandler(opts: ClientErrorOptions): (this: FastifyInstance, err: Error & { code?: string }, socket: Socket) => void {
  return function answerOnSocket(this: FastifyInstance, err: Error & { code?: string }, socket: Socket): void {
    if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? opts.newRequestId() : null;
    if (requestId !== null) timedOutSockets.set(socket, requestId);
    const e = parserError(err);
    this.log.info({ code: e.code, cause: err.code, ...(requestId === null ? {} : { requestId }) }, e.message);
    answerOnRawSocket(socket, e, requestId);
  };
}

/** `e` in the error shape as a whole HTTP/1.1 response on a socket no route has (the parser's, a CONNECT's), closing it. */
function answerOnRawSocket(socket: Socket, e: TollgateError, requestId: string | null): void {
  const body = JSON.stringify(errorBody(e, requestId));
  const head = [
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Bad Request'}`,
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
    ...(requestId === null ? [] : [`x-request-id: ${requestId}`]),
    'connection: close',
  ];
  // end() rather than write() + destroy(): the answer is flushed before the socket goes; a peer that never reads
  // it does not keep the socket open for long.
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * `CONNECT` (a forward proxy's tunnel) goes to Node's 'connect' event, not to the router; with no listener Node drops
 * the socket without a byte. The gateway is no forward proxy: the request is refused in the error shape, on any
 * target, and the connection closes (the socket may already carry the tunnel's first bytes: `head`, never read).
 */
export function refuseConnect(server: Server, log: FastifyInstance['log']): void {
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const e = new TollgateError('TOLLGATE_ERR_BAD_REQUEST', 'CONNECT is not served: the gateway is not a forward proxy');
    log.info({ code: e.code, method: 'CONNECT' }, e.message);
    socket.on('error', () => socket.destroy());
    answerOnRawSocket(socket, e, null);
    req.resume();
  });
}

/**
 * Node answers an `Expect` other than `100-continue` with a bare 417 (no body). RFC 9110 lets a server ignore an
 * expectation it does not know instead, so the request is served as if the header were not there.
 */
export function serveUnknownExpectations(server: Server): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
}

/**
 * `Expect: 100-continue` with a JSON body the gateway would refuse by its declared length (the JSON parser's limit):
 * the 413 at once, instead of Node's automatic `100 Continue` that tells the client to upload it first. Any other
 * such request continues (an archive import streams its body under a limit of its own).
 */
export function continueWithinLimit(server: Server, limit: number): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const json = /^application\/json\b/i.test(req.headers['content-type'] ?? '');
    if (json && Number(req.headers['content-length']) > limit) {
      const e = new TollgateError('TOLLGATE_ERR_BODY_TOO_LARGE', 'request body is larger than the configured limit');
      res.writeHead(e.status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(errorBody(e, null)));
      return;
    }
    res.writeContinue();
    server.emit('request', req, res);
  });
}
