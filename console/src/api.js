// Every call the console makes goes through here: same origin only, the API key (if any) as a header, never in a URL.
// The key lives in sessionStorage: gone when the tab closes, never in local storage or a cookie.

const KEY_ITEM = 'tollgate.api_key';

export const session = {
  get key() {
    return sessionStorage.getItem(KEY_ITEM);
  },
  set key(value) {
    if (value === null) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, value);
  },
};

/** An answer in the gateway's error shape (docs/errors.md). */
export class ApiError extends Error {
  constructor(status, body) {
    const e = body && body.error ? body.error : null;
    super(e ? e.message : `HTTP ${status}`);
    this.status = status;
    this.code = e ? e.code : null;
    this.param = e ? e.param : null;
  }
}

const listeners = new Set();
/** Called with the status when a call is refused for its key (401): the app shows the sign-in form. */
export function onUnauthorized(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function authHeaders(key = session.key) {
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** `fetch` of an /api path; JSON in and out; throws ApiError. `etag`: sent as If-Match. */
export async function api(path, opts = {}) {
  const headers = { accept: 'application/json', ...authHeaders(opts.key) };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.etag) headers['if-match'] = opts.etag;
  const res = await fetch(path, {
    method: opts.method ?? 'GET',
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, body);
    if (res.status === 401 && opts.key === undefined) for (const fn of listeners) fn(err);
    throw err;
  }
  return { body, etag: res.headers.get('etag') };
}

export const get = async (path, opts) => (await api(path, opts)).body;

/**
 * Server-sent events over fetch (EventSource cannot send a header): calls `onEvent(name, data)` per event until
 * `signal` aborts; reconnects after a pause when the stream ends or fails.
 */
export async function streamEvents(path, { signal, onEvent, onState }) {
  while (!signal.aborted) {
    try {
      const res = await fetch(path, { headers: { accept: 'text/event-stream', ...authHeaders() }, signal, credentials: 'omit', cache: 'no-store' });
      if (res.status === 401) {
        for (const fn of listeners) fn(new ApiError(401, null));
        return;
      }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      onState?.('open');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let name = 'message';
          const data = [];
          for (const line of frame.split('\n')) {
            if (line.startsWith('event:')) name = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          }
          if (data.length > 0) onEvent(name, JSON.parse(data.join('\n')));
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      onState?.('retrying');
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}
