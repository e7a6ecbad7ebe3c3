// The Live region: the requests in flight, from GET /api/live (server-sent events over fetch, with the key header).

import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { streamEvents } from '../api.js';
import { int, seconds } from '../format.js';
import { Cost, Meter, Name } from '../components.js';

/** `onSettled` is called when a request leaves the list (its final row is then in the activity view). */
export function LiveRegion({ onSettled }) {
  const [requests, setRequests] = useState([]);
  const [state, setState] = useState('connecting');
  const [problem, setProblem] = useState(null);
  const settled = useRef(onSettled);
  settled.current = onSettled;
  useEffect(() => {
    const ctl = new AbortController();
    let known = new Set();
    streamEvents('/api/live', {
      signal: ctl.signal,
      onState: (next, error) => {
        setState(next);
        if (next === 'open' || error) setProblem(error);
      },
      onEvent: (name, data) => {
        if (name !== 'inflight') return;
        setState('open');
        setProblem(null);
        const ids = new Set(data.requests.map((r) => r.request_id));
        const left = [...known].filter((id) => !ids.has(id));
        known = ids;
        setRequests(data.requests);
        if (left.length > 0) settled.current?.(left);
      },
    });
    return () => ctl.abort();
  }, []);
  return html`<section class="card live" aria-labelledby="live-title" role="region">
    <div class="section-head">
      <h2 id="live-title">Live</h2>
      <span class="muted small" aria-live="polite">${state === 'open' ? `${requests.length} in flight` : state === 'retrying' ? 'reconnecting…' : 'connecting…'}</span>
    </div>
    ${problem && state !== 'open' ? html`<p class="error" role="alert">${problem.message}</p>` : null}
    ${requests.length === 0
      ? state === 'open' ? html`<p class="muted">Nothing in flight.</p>` : null
      : html`<ul class="live-list">
          ${requests.map((r) => {
            const pct = r.estimated_total ? (100 * r.streamed_tokens) / r.estimated_total : null;
            return html`<li class="live-item" data-request-id=${r.request_id}>
              <div class="live-model"><strong><${Name} text=${r.model === '_other' ? r.requested_model : r.model} /></strong>${r.combo ? html` <span class="tag">combo <${Name} text=${r.combo} /></span>` : null} <span class="tag">${r.stream ? 'stream' : 'unary'}</span></div>
              <div class="live-numbers">
                <span><span class="muted">tokens</span> ${int(r.streamed_tokens)}${r.estimated_total ? ` / ~${int(r.estimated_total)}` : ''}</span>
                <span><span class="muted">cost so far</span> <${Cost} value=${r.cost_so_far} /></span>
                <span><span class="muted">for</span> ${seconds(r.duration_s)}</span>
              </div>
              ${pct === null ? null : html`<${Meter} label=${`${r.model}: tokens streamed against the estimated total`} percent=${pct} />`}
            </li>`;
          })}
        </ul>`}
  </section>`;
}
