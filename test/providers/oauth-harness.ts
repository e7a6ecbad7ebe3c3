// Shared by the OAuth regression tests (oauth-*.test.ts, from a review of OAuth connections): a scriptable token endpoint, a scriptable OpenAI-format upstream, and a gateway
// built in process with its log lines captured.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { testConfig } from '../helpers/app.js';
import { memoryTracing } from '../helpers/spans.js';
import { tempDir } from '../helpers/tmp.js';
import { CredentialStore } from '../../src/providers/credentials.js';

type T = { teardown(fn: () => unknown): void };
async function listen(t: T, h: (req: IncomingMessage, body: string, res: ServerResponse) => void) {
  const s = createServer(async (req, res) => {
    let b = '';
    for await (const c of req) b += c;
    h(req, b, res);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); }));
  return `http://127.0.0.1:${(s.address() as { port: number }).port}`;
}

export type TokenMode = 'ok' | 'echo' | '500' | 'invalid_grant' | 'hang' | 'temporarily_unavailable';
export async function tokenServer(t: T) {
  const st = { mode: 'ok' as TokenMode, expiresIn: 3600 as number | null, delayMs: 0, n: 0, grants: [] as Record<string, string>[], rotate: null as Set<string> | null };
  const url = await listen(t, (req, body, res) => {
    const f = Object.fromEntries(new URLSearchParams(body));
    st.grants.push(f);
    const send = () => {
      if (st.mode === 'hang') return; // never answers
      res.setHeader('content-type', 'application/json');
      if (st.mode === '500') { res.statusCode = 500; return res.end('{"oops":1}'); }
      if (st.mode === 'echo') { res.statusCode = 400; return res.end(JSON.stringify({ error: 'invalid_grant', error_description: `Invalid refresh token: ${f.refresh_token}` })); }
      if (st.mode === 'invalid_grant') { res.statusCode = 400; return res.end('{"error":"invalid_grant","error_description":"revoked"}'); }
      if (st.mode === 'temporarily_unavailable') { res.statusCode = 503; return res.end('{"error":"temporarily_unavailable"}'); }
      if (st.rotate !== null) {
        if (!st.rotate.has(f.refresh_token ?? '')) { res.statusCode = 400; return res.end('{"error":"invalid_grant","error_description":"retired"}'); }
        st.rotate.delete(f.refresh_token!); st.rotate.add(`RT-SECRET-${st.n + 1}`);
      }
      st.n++;
      res.end(JSON.stringify({ access_token: `AT-SECRET-${st.n}`, refresh_token: `RT-SECRET-${st.n}`, token_type: 'Bearer', ...(st.expiresIn === null ? {} : { expires_in: st.expiresIn }) }));
    };
    st.delayMs > 0 ? setTimeout(send, st.delayMs) : send();
  });
  return { url: `${url}/token`, st };
}

export async function upstream(t: T) {
  const st = { auth: [] as string[], next401: 0, echoToken: true, validTokens: null as Set<string> | null };
  const url = await listen(t, (req, body, res) => {
    const a = String(req.headers.authorization ?? '');
    st.auth.push(a);
    const tok = a.replace(/^Bearer /, '');
    if (st.next401 > 0 || (st.validTokens !== null && !st.validTokens.has(tok))) {
      if (st.next401 > 0) st.next401--;
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: st.echoToken ? `Incorrect API key provided: ${tok}` : 'bad token', type: 'invalid_request_error', code: 'invalid_api_key' } }));
    }
    const model = (JSON.parse(body || '{}') as { model?: string }).model;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }));
  });
  return { url: `${url}/v1`, st };
}

export function provider(upUrl: string, tokenUrl: string, extra: Record<string, unknown> = {}) {
  return {
    name: 'Acme', group: 'subscription', format: 'openai', base_url: upUrl,
    auth: { type: 'oauth', oauth: { device_authorization_url: tokenUrl.replace('/token', '/device'), token_url: tokenUrl, client_id: 'cid', ...extra } },
    models: { 'gpt-4o': { kind: 'llm' } },
  };
}

export async function gateway(t: T, providers: Record<string, unknown>, opts: { dataDir?: string; raw?: Record<string, unknown> } = {}) {
  const dataDir = opts.dataDir ?? tempDir(t as never);
  const logs: string[] = [];
  const stream = new Writable({ write(c, _e, cb) { logs.push(String(c)); cb(); } });
  const holder = new ConfigHolder(testConfig({ providers, ...(opts.raw ?? {}) }, dataDir));
  const { provider: tp, exporter } = memoryTracing();
  const app = await build({ config: holder, tracerProvider: tp, logger: { level: 'trace', stream }, processMetrics: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  await app.tollgate.storeReady;
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const ask = (model = 'acme/gpt-4o') => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) })
    .then(async (r) => ({ status: r.status, body: await r.text() }));
  const rows = async () => { await app.tollgate.writer.flush(); const s = app.tollgate.store; return s.query<Record<string, unknown>>(`SELECT * FROM ${s.t('requests')} FINAL ORDER BY ts, request_id`); };
  const store = new CredentialStore(dataDir);
  return { app, url, ask, rows, logs, spans: exporter, holder, dataDir, store, metrics: () => app.tollgate.metrics.registry.metrics() };
}

export const seed = (store: CredentialStore, id: string, o: { at?: string; rt?: string | null; expiresInMs?: number | null } = {}) =>
  store.save(id, {
    access_token: o.at ?? 'AT-SECRET-0', ...(o.rt === null ? {} : { refresh_token: o.rt ?? 'RT-SECRET-0' }), token_type: 'Bearer',
    expires_at: o.expiresInMs === null ? null : Date.now() + (o.expiresInMs ?? 3_600_000), obtained_at: Date.now(),
  });
