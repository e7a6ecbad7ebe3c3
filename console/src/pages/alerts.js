// The alert inbox (/api/alerts): newest first, unread marked; mark one or all read; send a test notification to every
// enabled channel (/api/alerts/test) and see how each went. The budgets (/api/budgets) sit beside it.

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, Meter, Name, Stat, loaded, useApi } from '../components.js';
import { countdown, pct, time, usd } from '../format.js';

function Budget({ title, b }) {
  return html`<div class="budget">
    <${Stat} label=${title} value=${b.limit === null ? `${usd(b.spent)} spent` : `${usd(b.spent)} of ${usd(b.limit)}`}
      hint=${b.limit === null ? 'no budget set' : `${pct(b.percentage)} · resets in ${countdown(b.resets_in_s)}`} />
    ${b.limit === null ? null : html`<${Meter} label=${`${title} used`} percent=${b.percentage} />`}
  </div>`;
}

export function AlertsPage() {
  const alerts = useApi('/api/alerts?limit=100');
  const budgets = useApi('/api/budgets');
  const [error, setError] = useState(null);
  const [test, setTest] = useState(null);
  const act = async (fn) => {
    setError(null);
    try {
      await fn();
      alerts.reload();
    } catch (err) {
      setError(err);
    }
  };
  const list = alerts.data?.alerts ?? [];
  return html`
    <section class="card" aria-labelledby="budgets-title">
      <h2 id="budgets-title">Budgets${budgets.data ? ` (${budgets.data.timezone})` : ''}</h2>
      <${ErrorNote} error=${budgets.error} />
      ${loaded(budgets, (data) => html`<div class="grid-2">
        <${Budget} title="Today" b=${data.daily} />
        <${Budget} title="This month" b=${data.monthly} />
      </div>
      ${data.auto_switch.enabled ? html`<p class="small">Auto-switch to <strong><${Name} text=${data.auto_switch.to} /></strong>: ${data.auto_switch.active ? 'active now' : 'armed'}</p>` : null}`)}
    </section>
    <section class="card" aria-labelledby="inbox-title">
      <div class="section-head">
        <h2 id="inbox-title">Inbox${alerts.data ? ` · ${alerts.data.unread} unread` : ''}</h2>
        <div class="buttons">
          <button type="button" class="ghost" disabled=${!alerts.data?.unread} onClick=${() => act(() => api('/api/alerts/read', { method: 'POST', body: { all: true } }))}>Mark all read</button>
          <button type="button" onClick=${() => act(async () => setTest((await api('/api/alerts/test', { method: 'POST', body: {} })).body.results))}>Send test notification</button>
        </div>
      </div>
      <${ErrorNote} error=${error ?? alerts.error} />
      ${test ? html`<ul class="test-results" aria-live="polite">${test.map((r) => html`<li><${Name} text=${r.channel} />: ${r.delivered ? 'delivered' : `failed (${r.error ?? 'unknown'})`}</li>`)}</ul>` : null}
      ${alerts.data && list.length === 0 ? html`<p class="muted">No alerts.</p>` : null}
      <ul class="inbox">${list.map((a) => html`<li class=${`alert ${a.severity} ${a.read ? 'read' : 'unread'}`}>
        <div class="alert-head">
          <span class=${`badge ${a.severity}`}>${a.severity}</span>
          <strong><${Name} text=${a.title} /></strong>
          <span class="muted small">${time(a.fired_at)}</span>
        </div>
        <p>${a.message}</p>
        ${a.read ? null : html`<button type="button" class="ghost small" onClick=${() => act(() => api('/api/alerts/read', { method: 'POST', body: { ids: [a.id] } }))} aria-label=${`Mark read: ${a.title}`}>Mark read</button>`}
      </li>`)}</ul>
    </section>`;
}
