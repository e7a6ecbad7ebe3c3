// The activity view: the request log (/api/usage/request-logs), newest first, filtered and paginated by cursor; a
// combo's attempts folded under it; a row opens the request's details. The Live region sits on top.

import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { get } from '../api.js';
import { Cost, ErrorNote, Loading, Name, nameText, useApi } from '../components.js';
import { dayAndClock, int, isoOf, seconds, time } from '../format.js';
import { LiveRegion } from './live.js';

const PAGE_SIZE = 25;

function query(filters, cursor) {
  const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
  for (const k of ['model', 'provider', 'status']) if (filters[k]) q.set(k, filters[k]);
  const from = isoOf(filters.from);
  const to = isoOf(filters.to);
  if (from) q.set('from', from);
  if (to) q.set('to', to);
  if (cursor) q.set('cursor', cursor);
  return `/api/usage/request-logs?${q}`;
}

function Filters({ value, onChange, models }) {
  const [draft, setDraft] = useState(value);
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.currentTarget.value });
  const providers = [...new Set(models.map((m) => m.owned_by).filter((p) => p !== 'tollgate'))];
  return html`<form class="filters" onSubmit=${(e) => { e.preventDefault(); onChange(draft); }}>
    <div class="field"><label for="f-model">Model</label>
      <select id="f-model" value=${draft.model} onChange=${set('model')}>
        <option value="">All models</option>
        ${models.map((m) => html`<option value=${m.id}>${nameText(m.id)}</option>`)}
      </select></div>
    <div class="field"><label for="f-provider">Provider</label>
      <select id="f-provider" value=${draft.provider} onChange=${set('provider')}>
        <option value="">All providers</option>
        ${providers.map((p) => html`<option value=${p}>${nameText(p)}</option>`)}
      </select></div>
    <div class="field"><label for="f-status">Status</label>
      <select id="f-status" value=${draft.status} onChange=${set('status')}>
        <option value="">Any status</option>
        <option value="success">Success</option><option value="failure">Failure</option>
        <option value="aborted">Aborted</option><option value="interrupted">Interrupted</option>
      </select></div>
    <div class="field"><label for="f-from">From</label><input id="f-from" type="datetime-local" value=${draft.from} onInput=${set('from')} /></div>
    <div class="field"><label for="f-to">To</label><input id="f-to" type="datetime-local" value=${draft.to} onInput=${set('to')} /></div>
    <div class="field actions"><button type="submit">Apply filters</button></div>
  </form>`;
}

function StatusBadge({ row }) {
  const s = row.detail_status;
  return html`<span class=${`badge ${s}`}>${s}${row.http_status && s !== 'success' ? html`<span class="wide"> ${row.http_status}</span>` : ''}</span>`;
}

const UNKNOWN_LIST = 'No price covers this model (its price source is none): its list cost is not known.';

function Details({ row, onClose }) {
  const dialog = useRef(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, [row]);
  const u = row.usage;
  return html`<dialog ref=${dialog} class="details" aria-labelledby="details-title" onClose=${onClose}>
    <form method="dialog" class="details-head">
      <h2 id="details-title">Request #${row.number}</h2>
      <button type="submit" class="ghost" aria-label="Close details">✕</button>
    </form>
    <dl class="kv">
      <dt>Request id</dt><dd><code>${row.request_id}</code></dd>
      <dt>Trace id</dt><dd>${row.trace_id ? html`<code>${row.trace_id}</code>` : 'none (no tracing configured, no incoming traceparent)'}</dd>
      <dt>Model</dt><dd><${Name} text=${row.model} />${row.requested_model !== row.model ? html` (asked for <${Name} text=${row.requested_model} />)` : ''}</dd>
      <dt>Endpoint</dt><dd>${row.endpoint} · ${row.stream ? 'stream' : 'unary'}</dd>
      <dt>Status</dt><dd><${StatusBadge} row=${row} /> upstream HTTP ${row.http_status}${row.error_type ? html` · <${Name} text=${row.error_type} />` : ''}</dd>
      <dt>Usage source</dt><dd>${u.source}</dd>
      <dt>Tokens</dt><dd>input ${int(u.input)}${u.audio_input ? ` (${int(u.audio_input)} audio)` : ''} · cached ${int(u.cached)} · cache write ${int(u.cache_write)}${u.cache_write_1h ? ` (${int(u.cache_write_1h)} for an hour)` : ''} · output ${int(u.output)}${u.audio_output ? ` (${int(u.audio_output)} audio)` : ''} · reasoning ${int(u.reasoning)}</dd>
      ${u.web_searches ? html`<dt>Web searches</dt><dd>${int(u.web_searches)} (billed per search)</dd>` : null}
      <dt>Cost</dt><dd class="cost"><${Cost} value=${row.cost} /> (list <${Cost} value=${row.list_cost} why=${UNKNOWN_LIST} />)${row.price_source ? html` · price from <${Name} text=${row.price_source} />` : ''}${row.service_tier ? html` · served at the <${Name} text=${row.service_tier} /> tier` : ''}</dd>
      <dt>Timing</dt><dd>${seconds(row.duration_s)} total · first token ${seconds(row.ttft_s)} · upstream ${seconds(row.upstream_s)}</dd>
      <dt>Key · connection</dt><dd>${row.api_key_name ? html`<${Name} text=${row.api_key_name} />` : '–'} · ${row.connection === null ? '–' : html`<${Name} text=${row.connection} />`}</dd>
      <dt>Started · ended</dt><dd>${time(row.timestamp)} · ${time(row.end_timestamp)}</dd>
    </dl>
    ${row.attempts.length > 0
      ? html`<h3>Attempts</h3>
        <div class="table-wrap"><table>
          <thead><tr><th scope="col">#</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Upstream</th><th scope="col">Tokens</th><th scope="col">Cost</th><th scope="col">Duration</th><th scope="col">Usage</th></tr></thead>
          <tbody>${row.attempts.map((a) => html`<tr>
            <td>${a.attempt}</td><td class="model-cell"><${Name} text=${a.model} /></td><td><${StatusBadge} row=${a} />${a.error_type ? html` <span class="muted"><${Name} text=${a.error_type} /></span>` : null}</td>
            <td>${a.http_status}</td><td>${int(a.total_tokens)}</td><td class="cost"><${Cost} value=${a.cost} /></td><td>${seconds(a.duration_s)}</td><td>${a.usage.source}</td></tr>`)}
          </tbody></table></div>`
      : null}
  </dialog>`;
}

function Row({ row, open, onOpen, onToggle }) {
  const combo = row.attempts.length > 0;
  return html`<tr class="log-row" data-request-id=${row.request_id}>
      <td><button type="button" class="link" onClick=${() => onOpen(row)} aria-label=${`Details of request ${row.number}`}>#${row.number}</button>
        <div class="narrow small muted" aria-hidden="true">${dayAndClock(row.timestamp)[1]}</div></td>
      <td class="nowrap wide"><time datetime=${row.timestamp}>${dayAndClock(row.timestamp).join('')}</time></td>
      <td class="model-cell">${combo
        ? html`<button type="button" class="expander" aria-expanded=${open ? 'true' : 'false'} onClick=${() => onToggle(row.request_id)} aria-label=${`${open ? 'Hide' : 'Show'} the ${row.attempts.length} attempts of combo ${row.combo}`}>${open ? '▾' : '▸'}</button>`
        : null}<${Name} text=${row.model} />${row.combo ? html` <span class="tag"><${Name} text=${row.combo} /></span>` : null}</td>
      <td class="num wide">${int(row.input_tokens)}</td><td class="num wide">${int(row.output_tokens)}</td><td class="num">${int(row.total_tokens)}</td>
      <td class="num wide">${int(row.cached_tokens)}</td><td class="num cost"><${Cost} value=${row.cost} /></td><td class="num wide">${seconds(row.duration_s)}</td>
      <td><${StatusBadge} row=${row} /></td>
    </tr>
    ${open ? row.attempts.map((a) => html`<tr class="attempt-row">
      <td><span class="narrow small muted">${a.attempt}</span></td><td class="nowrap muted wide">attempt ${a.attempt}</td><td class="model-cell">↳ <${Name} text=${a.model} /></td>
      <td class="num wide">${int(a.input_tokens)}</td><td class="num wide">${int(a.output_tokens)}</td><td class="num">${int(a.total_tokens)}</td>
      <td class="num wide">${int(a.cached_tokens)}</td><td class="num cost"><${Cost} value=${a.cost} /></td><td class="num wide">${seconds(a.duration_s)}</td><td><${StatusBadge} row=${a} /></td>
    </tr>`) : null}`;
}

export function ActivityPage() {
  const [filters, setFilters] = useState({ model: '', provider: '', status: '', from: '', to: '' });
  const [cursors, setCursors] = useState([null]);
  const [refresh, setRefresh] = useState(0);
  const [page, setPage] = useState({ data: null, error: null });
  const [open, setOpen] = useState(new Set());
  const [details, setDetails] = useState(null);
  const models = useApi('/v1/models');
  const cursor = cursors[cursors.length - 1];
  useEffect(() => {
    const ctl = new AbortController();
    get(query(filters, cursor), { signal: ctl.signal })
      .then((data) => setPage({ data, error: null }))
      .catch((error) => !ctl.signal.aborted && setPage((p) => ({ ...p, error })));
    return () => ctl.abort();
  }, [filters, cursor, refresh]);
  const toggle = (id) => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };
  // A request that left the Live list has its row now (the writer's flush takes a moment: look twice).
  const settled = () => {
    if (cursors.length !== 1) return;
    setTimeout(() => setRefresh((n) => n + 1), 300);
    setTimeout(() => setRefresh((n) => n + 1), 1500);
  };
  const rows = page.data?.data ?? [];
  return html`
    <${LiveRegion} onSettled=${settled} />
    <section class="card" aria-labelledby="log-title">
      <div class="section-head"><h2 id="log-title">Requests</h2>
        <button type="button" class="ghost" onClick=${() => setRefresh((n) => n + 1)}>Refresh</button></div>
      <${Filters} value=${filters} models=${models.data?.data ?? []} onChange=${(f) => { setFilters(f); setCursors([null]); }} />
      <${ErrorNote} error=${page.error} />
      ${page.data === null && page.error === null ? html`<${Loading} />` : null}
      <div class="table-wrap">
        <table class="log">
          <caption class="sr-only">Requests, newest first</caption>
          <thead><tr>
            <th scope="col">#</th><th scope="col" class="wide">Time</th><th scope="col">Model</th><th scope="col" class="num wide">Input</th>
            <th scope="col" class="num wide">Output</th><th scope="col" class="num">Total</th><th scope="col" class="num wide">Cached</th>
            <th scope="col" class="num">Cost</th><th scope="col" class="num wide">Duration</th><th scope="col">Status</th>
          </tr></thead>
          <tbody>
            ${rows.map((r) => html`<${Row} key=${r.request_id} row=${r} open=${open.has(r.request_id)} onOpen=${setDetails} onToggle=${toggle} />`)}
            ${page.data && rows.length === 0 ? html`<tr><td colspan="10" class="muted">No requests match.</td></tr>` : null}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Pages of requests">
        <button type="button" disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
        <span class="muted small">page ${cursors.length}</span>
        <button type="button" disabled=${!page.data?.next_cursor} onClick=${() => setCursors([...cursors, page.data.next_cursor])}>Older</button>
      </nav>
    </section>
    ${details ? html`<${Details} row=${details} onClose=${() => setDetails(null)} />` : null}`;
}
