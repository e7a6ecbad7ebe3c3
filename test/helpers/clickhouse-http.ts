// A test-only ClickHouse server: a real HTTP server on 127.0.0.1 that speaks as much of ClickHouse's HTTP interface
// as @clickhouse/client (1.23.1) uses when Tollgate talks to a server, and runs every statement on ONE embedded chdb
// Session, one at a time. No ClickHouse server installs on the machines the tests run on; this lets the server path
// (storage.clickhouse_url) run the same suites as the embedded one, and lets a test take storage away on command:
// refuse connections, answer 503, or accept and never answer.
//
// What it implements (docs/recording.md, "The server path and how it is tested"):
// - GET /ping -> `Ok.\n`; a query on `/` by GET or POST: the `query` URL parameter and/or the body (an INSERT's
//   rows follow the `query` parameter in the body), `query_id`, `database`, `default_format`, `param_<name>` for
//   `{name:Type}` placeholders (bound through chdb's bind API, never pasted into the SQL), and every other URL
//   parameter as a setting of that statement only (as on a server; chdb would keep them for the session, so the
//   ones an earlier request set are put back to their defaults first).
// - Inserts: `INSERT ... FORMAT <text format>` with the rows in the body; binary formats (Native, RowBinary,
//   Parquet...) go through a temporary file and the file() table function.
// - Answers: the result in the statement's FORMAT (or default_format, TabSeparated when none), with
//   X-ClickHouse-Query-Id, X-ClickHouse-Format, X-ClickHouse-Timezone and X-ClickHouse-Summary; an error is status
//   500 (401 for authentication, 404 for an unknown path) with X-ClickHouse-Exception-Code and the body
//   `Code: <n>. DB::Exception: <message> (<TYPE>) (version ...)`, which the client parses into `code` and `type`.
// - Compression: a gzip/deflate/br request body (Content-Encoding) is decompressed; with enable_http_compression=1
//   the answer is compressed with what Accept-Encoding asks for (gzip, deflate, br). ClickHouse's own block
//   compression (`compress=1` / `decompress=1`) is refused with an error.
// - Authentication: basic auth, X-ClickHouse-User / X-ClickHouse-Key, or `user` / `password` URL parameters.
// - Faults: refuse() closes the listening socket and every open connection (connections are refused);
//   restore() listens again on the same port; serve503() answers every request 503 without running it; hang()
//   accepts requests and never answers (with `{ execute: true }`, the statement runs first: the answer of an insert
//   that landed is lost); refuseInserts() answers every INSERT with TOO_MANY_PARTS and serves reads; healthy() undoes
//   all of these.
//
// The embedded engine binds one data directory per process, so a test process that also needs the embedded store
// runs this server in a child process: spawnClickHouseHttp() below (entry: clickhouse-http-main.ts).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import zlib from 'node:zlib';
import type * as ChdbModule from 'chdb';
import type { Teardown } from './tmp.js';

export interface ClickHouseHttpOptions {
  /** The chdb data directory this server owns. */
  readonly dataDir: string;
  /** 0 (default): any free port. */
  readonly port?: number;
  readonly user?: string;
  readonly password?: string;
}

export interface HangOptions {
  /** Run the statement before withholding the answer (an insert lands, its acknowledgement never arrives). */
  readonly execute?: boolean;
}

export type FaultMode = 'healthy' | 'refused' | 'unavailable' | 'hang' | 'hang-after-execute' | 'inserts-refused';

export interface ClickHouseHttpStats {
  readonly mode: FaultMode;
  /** HTTP requests received (pings included), statements run on chdb, inserts that ran, answers withheld. */
  readonly requests: number;
  readonly statements: number;
  readonly inserts: number;
  readonly held: number;
  readonly refusedFor503: number;
}

/** The controls a test uses, the same whether the server runs in this process or in a child. */
export interface ClickHouseControls {
  readonly port: number;
  readonly url: string;
  refuse(): Promise<void>;
  restore(): Promise<void>;
  serve503(): Promise<void>;
  hang(opts?: HangOptions): Promise<void>;
  /**
   * Answer every INSERT (into `table` alone when given) with TOO_MANY_PARTS, as a server whose merges fall behind does;
   * reads and other inserts as usual.
   */
  refuseInserts(table?: string): Promise<void>;
  healthy(): Promise<void>;
  stats(): Promise<ClickHouseHttpStats>;
  close(): Promise<void>;
}

/** URL parameters that are not settings. */
const RESERVED = new Set(['query', 'query_id', 'database', 'default_format', 'user', 'password', 'quota_key', 'session_id', 'session_timeout', 'session_check', 'role', 'compress', 'decompress']);
/** Settings of the HTTP layer, with no meaning to the engine (chdb refuses some of them). */
const HTTP_SETTINGS = new Set([
  'wait_end_of_query', 'http_wait_end_of_query', 'enable_http_compression', 'http_zlib_compression_level', 'send_progress_in_http_headers',
  'http_headers_progress_interval_ms', 'http_response_buffer_size', 'buffer_size', 'http_native_compression_disable_checksumming_on_decompress',
  'add_http_cors_header', 'cancel_http_readonly_queries_on_client_close', 'http_response_compression_method',
]);
/** Input formats whose rows can follow the statement as text; any other goes through a file. */
const TEXT_INPUT = /^(JSONEachRow|JSONCompactEachRow|JSONStringsEachRow|JSONCompactStringsEachRow|JSONLines|NDJSON|TabSeparated\w*|TSV\w*|CSV\w*|Values)$/i;
const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const CONTENT_TYPES: [RegExp, string][] = [
  [/^(JSONEachRow|JSONLines|NDJSON|JSONCompactEachRow|JSONStringsEachRow)/i, 'application/x-ndjson; charset=UTF-8'],
  [/^JSON/i, 'application/json; charset=UTF-8'],
  [/^(TabSeparated|TSV)/i, 'text/tab-separated-values; charset=UTF-8'],
  [/^CSV/i, 'text/csv; charset=UTF-8'],
  [/^(Native|RowBinary|Parquet|Arrow|ORC|Avro)/i, 'application/octet-stream'],
];

/** A tuple element of a bound parameter; chdb's binder recognises it by this class name and its `values`. */
class TupleParam {
  constructor(readonly values: unknown[]) {}
}

interface Statement {
  readonly sql: string;
  readonly format: string;
  readonly settings: Map<string, string>;
  readonly params: Record<string, unknown>;
  readonly database: string;
  readonly insert: boolean;
  /** A temporary file holding a binary insert body, removed once the statement ran. */
  readonly file?: string;
}

class ClickHouseException extends Error {
  constructor(readonly code: number, readonly type: string, message: string, readonly status = 500) {
    super(message);
  }
}

export class ClickHouseHttp implements ClickHouseControls {
  readonly #opts: Required<ClickHouseHttpOptions>;
  readonly #server: Server;
  readonly #session: ChdbModule.Session;
  readonly #version: string;
  readonly #sockets = new Set<Socket>();
  readonly #held = new Set<ServerResponse>();
  #port = 0;
  #mode: FaultMode = 'healthy';
  /** The table whose inserts are refused in 'inserts-refused' (null: every table). */
  #refusedTable: RegExp | null = null;
  #listening = false;
  #tail: Promise<unknown> = Promise.resolve();
  /** Settings an earlier request set on the session (to be put back to their defaults), and the current database. */
  #touched = new Set<string>();
  #database = 'default';
  #tmp: string;
  #counts = { requests: 0, statements: 0, inserts: 0, refusedFor503: 0 };
  #closed = false;

  private constructor(opts: ClickHouseHttpOptions) {
    this.#opts = { port: 0, user: 'default', password: '', ...opts };
    // Loaded here, not at import: a process that only spawns the child must not load the engine.
    const chdb = createRequire(import.meta.url)('chdb') as typeof ChdbModule;
    this.#session = new chdb.Session(opts.dataDir);
    this.#version = chdb.version().libchdb;
    this.#tmp = mkdtempSync(join(tmpdir(), 'tollgate-chhttp-'));
    // A server takes URLs up to 1 MiB (http_max_uri_size): bound parameters travel in the URL.
    this.#server = createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => void this.#handle(req, res));
    this.#server.keepAliveTimeout = 10_000; // a ClickHouse server's default keep_alive_timeout
    this.#server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(opts: ClickHouseHttpOptions): Promise<ClickHouseHttp> {
    const server = new ClickHouseHttp(opts);
    await server.#listen(opts.port ?? 0);
    return server;
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  async #listen(port: number): Promise<void> {
    this.#server.listen(port, '127.0.0.1');
    await once(this.#server, 'listening');
    const addr = this.#server.address();
    this.#port = typeof addr === 'object' && addr !== null ? addr.port : port;
    this.#listening = true;
  }

  /** Stop listening and drop every connection: a client's connect is refused (ECONNREFUSED) until restore(). */
  async refuse(): Promise<void> {
    this.#mode = 'refused';
    this.#dropHeld();
    if (!this.#listening) return;
    this.#listening = false;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  /** Listen again on the same port. */
  async restore(): Promise<void> {
    if (this.#mode === 'refused') this.#mode = 'healthy';
    if (!this.#listening) await this.#listen(this.#port);
  }

  /** Answer every request 503 (as a load balancer in front of a stopped server does) without running it. */
  async serve503(): Promise<void> {
    await this.restore();
    this.#mode = 'unavailable';
    this.#dropHeld();
  }

  /** Accept requests and never answer them (optionally after running the statement). */
  async hang(opts: HangOptions = {}): Promise<void> {
    await this.restore();
    this.#mode = opts.execute ? 'hang-after-execute' : 'hang';
  }

  async refuseInserts(table?: string): Promise<void> {
    await this.restore();
    this.#mode = 'inserts-refused';
    this.#refusedTable = table === undefined ? null : new RegExp(`^\\s*INSERT\\s+INTO\\s+(\\S+\\.)?\`?${table}\`?[\\s(]`, 'i');
  }

  /** Listen, answer, and drop the connections of answers withheld so far. */
  async healthy(): Promise<void> {
    await this.restore();
    this.#mode = 'healthy';
    this.#dropHeld();
  }

  async stats(): Promise<ClickHouseHttpStats> {
    return { mode: this.#mode, held: this.#held.size, ...this.#counts };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.refuse();
    await this.#tail.catch(() => undefined);
    this.#session.close();
    rmSync(this.#tmp, { recursive: true, force: true });
  }

  #dropHeld(): void {
    for (const res of this.#held) res.socket?.destroy();
    this.#held.clear();
  }

  #hold(res: ServerResponse): void {
    this.#held.add(res);
    res.once('close', () => this.#held.delete(res));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.#counts.requests++;
    const queryId = new URL(req.url ?? '/', 'http://x').searchParams.get('query_id') || randomUUID();
    try {
      const body = await readBody(req);
      if (this.#mode === 'unavailable') {
        this.#counts.refusedFor503++;
        res.writeHead(503, { 'content-type': 'text/plain; charset=UTF-8' }).end('Service Unavailable\n');
        return;
      }
      if (this.#mode === 'hang') return this.#hold(res);
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/ping' && (req.method === 'GET' || req.method === 'HEAD')) {
        if (this.#mode === 'hang-after-execute') return this.#hold(res);
        res.writeHead(200, { 'content-type': 'text/html; charset=UTF-8' }).end('Ok.\n');
        return;
      }
      if (url.pathname !== '/') throw new ClickHouseException(1000, 'UNKNOWN_EXCEPTION', `There is no handle ${url.pathname}`, 404);
      if (req.method !== 'GET' && req.method !== 'POST') throw new ClickHouseException(1000, 'UNKNOWN_EXCEPTION', `HTTP method ${req.method} is not supported`, 400);
      this.#authenticate(req, url);
      if (url.searchParams.get('compress') === '1' || url.searchParams.get('decompress') === '1') {
        throw new ClickHouseException(1, 'UNSUPPORTED_METHOD', 'ClickHouse block compression (compress=1, decompress=1) is not supported by this test server');
      }
      const stmt = this.#statement(url, decode(req.headers['content-encoding'], body));
      if (this.#mode === 'inserts-refused' && stmt.insert && (this.#refusedTable === null || this.#refusedTable.test(stmt.sql))) {
        throw new ClickHouseException(252, 'TOO_MANY_PARTS', 'Too many parts (3001 with average size of 1.00 KiB) in table. Merges are processing significantly slower than inserts');
      }
      const result = await this.#serial(() => this.#run(stmt));
      if (this.#mode === 'hang-after-execute') return this.#hold(res);
      const { bytes, rows, elapsed } = result;
      const summary = {
        read_rows: String(stmt.insert ? 0 : rows), read_bytes: String(stmt.insert ? 0 : bytes.length),
        written_rows: String(stmt.insert ? rows : 0), written_bytes: String(stmt.insert ? body.length : 0),
        total_rows_to_read: '0', result_rows: String(stmt.insert ? 0 : rows), result_bytes: String(stmt.insert ? 0 : bytes.length),
        elapsed_ns: String(Math.round(elapsed * 1e9)),
      };
      const headers: Record<string, string> = {
        'content-type': contentType(stmt.format),
        'x-clickhouse-query-id': queryId,
        'x-clickhouse-format': stmt.format,
        'x-clickhouse-timezone': 'UTC',
        'x-clickhouse-server-display-name': 'tollgate-test-clickhouse',
        'x-clickhouse-summary': JSON.stringify(summary),
        'keep-alive': 'timeout=10',
      };
      this.#send(req, res, url, 200, headers, Buffer.from(bytes));
    } catch (err) {
      const e = asException(err);
      const text = `Code: ${e.code}. DB::Exception: ${e.message.replace(/\s*\([A-Z0-9_]+\)\s*$/, '')} (${e.type}) (version ${this.#version})\n`;
      if (res.headersSent || res.destroyed) return;
      const url = new URL(req.url ?? '/', 'http://x');
      this.#send(req, res, url, e.status, {
        'content-type': 'text/plain; charset=UTF-8',
        'x-clickhouse-query-id': queryId,
        'x-clickhouse-exception-code': String(e.code),
        'x-clickhouse-timezone': 'UTC',
        'x-clickhouse-server-display-name': 'tollgate-test-clickhouse',
        'keep-alive': 'timeout=10',
      }, Buffer.from(text));
    }
  }

  /** Send `body`, compressed when the request asked for it (enable_http_compression=1 and an Accept-Encoding). */
  #send(req: IncomingMessage, res: ServerResponse, url: URL, status: number, headers: Record<string, string>, body: Buffer): void {
    const accept = String(req.headers['accept-encoding'] ?? '');
    const codec = url.searchParams.get('enable_http_compression') === '1' ? ['gzip', 'deflate', 'br'].find((c) => accept.includes(c)) : undefined;
    if (codec !== undefined) {
      body = codec === 'gzip' ? zlib.gzipSync(body) : codec === 'deflate' ? zlib.deflateSync(body) : zlib.brotliCompressSync(body);
      headers['content-encoding'] = codec;
    }
    res.writeHead(status, { ...headers, 'content-length': String(body.length) }).end(body);
  }

  #authenticate(req: IncomingMessage, url: URL): void {
    let user = url.searchParams.get('user') ?? undefined;
    let password = url.searchParams.get('password') ?? undefined;
    const xUser = req.headers['x-clickhouse-user'];
    if (typeof xUser === 'string') {
      user = xUser;
      password = String(req.headers['x-clickhouse-key'] ?? '');
    }
    const basic = /^Basic (.+)$/i.exec(String(req.headers.authorization ?? ''));
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      user = colon === -1 ? decoded : decoded.slice(0, colon);
      password = colon === -1 ? '' : decoded.slice(colon + 1);
    }
    if ((user ?? 'default') !== this.#opts.user || (password ?? '') !== this.#opts.password) {
      throw new ClickHouseException(516, 'AUTHENTICATION_FAILED', `${user ?? 'default'}: Authentication failed: password is incorrect, or there is no user with such name`, 401);
    }
  }

  /** The statement a request carries: SQL, settings, bound parameters, and the format of its answer. */
  #statement(url: URL, body: Buffer): Statement {
    const head = url.searchParams.get('query') ?? '';
    const settings = new Map<string, string>();
    const raw: Record<string, string> = {};
    for (const [key, value] of url.searchParams) {
      if (key.startsWith('param_')) raw[key.slice('param_'.length)] = value;
      else if (!RESERVED.has(key) && !HTTP_SETTINGS.has(key)) {
        if (!SETTING_NAME.test(key)) throw new ClickHouseException(115, 'UNKNOWN_SETTING', `Unknown setting '${key}'`);
        settings.set(key, value);
      }
    }
    const database = url.searchParams.get('database') || 'default';
    const insertFormat = /^\s*INSERT\b[\s\S]*\bFORMAT\s+([A-Za-z0-9_]+)\s*$/i.exec(head);
    let sql: string;
    let file: string | undefined;
    let insert = false;
    if (insertFormat !== null && body.length > 0 && !TEXT_INPUT.test(insertFormat[1]!)) {
      // A binary body cannot follow the statement as text: the engine reads it from a file instead.
      file = join(this.#tmp, `${randomUUID()}.${insertFormat[1]}`);
      writeFileSync(file, body);
      sql = head.replace(/\bFORMAT\s+([A-Za-z0-9_]+)\s*$/i, `SELECT * FROM file('${file}', '${insertFormat[1]}')`);
      insert = true;
    } else {
      sql = head === '' ? body.toString('utf8') : body.length === 0 ? head : `${head}\n${body.toString('utf8')}`;
      insert = /^\s*INSERT\b/i.test(sql);
    }
    if (sql.trim() === '') throw new ClickHouseException(62, 'SYNTAX_ERROR', 'Empty query');
    const format = insert ? (url.searchParams.get('default_format') ?? 'TabSeparated') : (/\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$/i.exec(sql)?.[1] ?? url.searchParams.get('default_format') ?? 'TabSeparated');
    return { sql, format, settings, params: bindParams(sql, raw), database, insert, ...(file === undefined ? {} : { file }) };
  }

  #serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.#tail.then(op, op);
    this.#tail = next.catch(() => undefined);
    return next;
  }

  /** Run one statement with its own settings and database, as a server would (nothing left over from the last one). */
  async #run(stmt: Statement): Promise<{ bytes: Uint8Array; rows: number; elapsed: number }> {
    try {
      for (const name of this.#touched) {
        if (!stmt.settings.has(name)) await this.#session.queryAsync(`SET ${name} = DEFAULT`);
      }
      this.#touched = new Set(stmt.settings.keys());
      for (const [name, value] of stmt.settings) await this.#session.queryAsync(`SET ${name} = ${settingLiteral(value)}`);
      if (stmt.database !== this.#database) {
        await this.#session.queryAsync(`USE \`${stmt.database.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``);
        this.#database = stmt.database;
      }
      this.#counts.statements++;
      const opts = { format: stmt.format };
      const result = Object.keys(stmt.params).length > 0 ? await this.#session.queryBindAsync(stmt.sql, stmt.params, opts) : await this.#session.queryAsync(stmt.sql, opts);
      if (stmt.insert) this.#counts.inserts++;
      return { bytes: stmt.insert ? new Uint8Array() : result.bytes(), rows: result.rowsRead, elapsed: result.elapsed };
    } finally {
      if (stmt.file !== undefined) rmSync(stmt.file, { force: true });
    }
  }
}

/** chdb throws `Code: <n>. DB::Exception: <message> (<TYPE>)` with `clickhouseCode`; anything else is UNKNOWN_EXCEPTION. */
function asException(err: unknown): ClickHouseException {
  if (err instanceof ClickHouseException) return err;
  const message = err instanceof Error ? err.message : String(err);
  const parsed = /^Code: (\d+)\. DB::Exception: ([\s\S]*?)\s*\(([A-Z0-9_]{3,})\)(?: \(version [^)]*\))?\s*$/.exec(message);
  if (parsed) return new ClickHouseException(Number(parsed[1]), parsed[3]!, parsed[2]!);
  const code = (err as { clickhouseCode?: unknown } | null)?.clickhouseCode;
  return new ClickHouseException(typeof code === 'number' ? code : 1000, 'UNKNOWN_EXCEPTION', message);
}

function contentType(format: string): string {
  return CONTENT_TYPES.find(([re]) => re.test(format))?.[1] ?? 'text/plain; charset=UTF-8';
}

function settingLiteral(value: string): string {
  return /^-?\d+(\.\d+)?$/.test(value) ? value : `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function decode(encoding: string | string[] | undefined, body: Buffer): Buffer {
  switch (String(encoding ?? '').toLowerCase()) {
    case '': case 'identity': return body;
    case 'gzip': return zlib.gunzipSync(body);
    case 'deflate': return zlib.inflateSync(body);
    case 'br': return zlib.brotliDecompressSync(body);
    default: throw new ClickHouseException(1, 'UNSUPPORTED_METHOD', `Content-Encoding ${String(encoding)} is not supported by this test server`);
  }
}

/**
 * The `param_<name>` values as chdb's binder takes them. A server parses each value as its placeholder's type in the
 * Escaped text format; chdb escapes what it is given, so a scalar is unescaped here, and a composite value (Array,
 * Tuple) is read from its literal into JS values.
 */
function bindParams(sql: string, raw: Record<string, string>): Record<string, unknown> {
  const types = new Map<string, string>();
  for (const m of sql.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^{}]+?)\s*\}/g)) types.set(m[1]!, m[2]!);
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    const type = (types.get(name) ?? 'String').replace(/^(Nullable|LowCardinality)\((.*)\)$/, '$2');
    if (value === '\\N') out[name] = null;
    else if (/^(Array|Tuple)\(/.test(type)) out[name] = parseLiteral(value);
    else out[name] = unescape(value);
  }
  return out;
}

const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '0': '\0', a: '\x07', v: '\v', e: '\x1b' };

/** Undo ClickHouse's Escaped text format (\t, \n, \', \\, \xHH...). */
function unescape(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|[\s\S])/g, (_m, c: string) => (c.length === 3 ? String.fromCharCode(parseInt(c.slice(1), 16)) : (ESCAPES[c] ?? c)));
}

/** A ClickHouse literal of an array or tuple (quoted strings, numbers, NULL, true/false, nested), as JS values. */
function parseLiteral(s: string): unknown {
  let i = 0;
  const skip = () => {
    while (i < s.length && /\s/.test(s[i]!)) i++;
  };
  const fail = (): never => {
    throw new ClickHouseException(26, 'CANNOT_PARSE_QUOTED_STRING', `cannot read the parameter value ${JSON.stringify(s)} at ${i}`);
  };
  const value = (): unknown => {
    skip();
    const c = s[i];
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')';
      const items: unknown[] = [];
      i++;
      skip();
      if (s[i] === close) i++;
      else {
        for (;;) {
          items.push(value());
          skip();
          if (s[i] === ',') i++;
          else if (s[i] === close) {
            i++;
            break;
          } else fail();
        }
      }
      return c === '[' ? items : new TupleParam(items);
    }
    if (c === "'") {
      let text = '';
      for (i++; ; i++) {
        if (i >= s.length) fail();
        if (s[i] === '\\') {
          text += unescape(s.slice(i, i + 2));
          i++;
        } else if (s[i] === "'") {
          i++;
          return text;
        } else text += s[i];
      }
    }
    const token = /^[^,\])\s]+/.exec(s.slice(i))?.[0] ?? fail();
    i += token.length;
    if (/^null$/i.test(token)) return null;
    if (/^(true|false)$/i.test(token)) return token.toLowerCase() === 'true';
    if (/^-?\d+$/.test(token)) return BigInt(token);
    const n = Number(token);
    return Number.isNaN(n) ? fail() : n;
  };
  const v = value();
  skip();
  if (i !== s.length) fail();
  return v;
}

// ---------------------------------------------------------------------------------------------------------------
// The child process: a test process that hosts an embedded store of its own (or a Tollgate under test that must not
// share its engine with the server) runs the server in a child, controlled over the IPC channel.

interface ChildReply {
  readonly id?: number;
  readonly ready?: boolean;
  readonly port?: number;
  readonly ok?: boolean;
  readonly result?: unknown;
  readonly error?: string;
}

/** The loader tap runs the TypeScript test files with (package.json, `tap.node-arg`); the child needs it too. */
function typescriptLoader(): string {
  return import.meta.resolve('tsx');
}

/**
 * Start the server in a child process on its own chdb data directory `dataDir`, and stop it at teardown. The
 * returned controls forward to the child.
 */
export async function spawnClickHouseHttp(t: Teardown, opts: { dataDir: string; user?: string; password?: string }): Promise<ClickHouseControls> {
  const main = fileURLToPath(new URL('./clickhouse-http-main.ts', import.meta.url));
  const child: ChildProcess = fork(main, [JSON.stringify(opts)], {
    execArgv: [`--import=${typescriptLoader()}`],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let seq = 0;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let exited = false;
  const ready = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the ClickHouse test server did not start within 60 s')), 60_000);
    child.on('message', (m: ChildReply) => {
      if (m.ready) {
        clearTimeout(timer);
        resolve(m.port!);
      } else if (m.id !== undefined) {
        const w = waiting.get(m.id);
        waiting.delete(m.id);
        if (m.ok) w?.resolve(m.result);
        else w?.reject(new Error(m.error));
      }
    });
    child.once('exit', (code) => {
      exited = true;
      clearTimeout(timer);
      reject(new Error(`the ClickHouse test server exited (${code})`));
      for (const w of waiting.values()) w.reject(new Error(`the ClickHouse test server exited (${code})`));
      waiting.clear();
    });
  });
  const port = await ready;
  const call = <T>(cmd: string, args: unknown[] = []): Promise<T> => {
    if (exited) return Promise.reject(new Error('the ClickHouse test server has exited'));
    const id = ++seq;
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ id, cmd, args });
    });
  };
  const close = async () => {
    if (exited) return;
    const gone = once(child, 'exit');
    await call('close').catch(() => undefined);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
  };
  t.teardown(close);
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    refuse: () => call('refuse'),
    restore: () => call('restore'),
    serve503: () => call('serve503'),
    hang: (o?: HangOptions) => call('hang', [o ?? {}]),
    refuseInserts: (table?: string) => call('refuseInserts', table === undefined ? [] : [table]),
    healthy: () => call('healthy'),
    stats: () => call<ClickHouseHttpStats>('stats'),
    close,
  };
}
