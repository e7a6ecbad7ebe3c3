// Providers: one card per configured provider (/api/providers): its group and wire format, each model's price per
// 1M tokens and where it came from (config, catalog@<version>, none), a flag on a paid model no price covers; the
// computed quota (/api/quota) beside what the provider itself reported; and, for an OAuth provider with flow pkce, the
// sign-in (admin keys): Connect asks the gateway for an authorization URL, which the user opens (a link: this page
// fetches nothing off its origin), signs in, and pastes the address the browser came back to.

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, Name, loaded, useApi } from '../components.js';
import { countdown, int, pct, time } from '../format.js';

const age = (s) => (s < 60 ? `${s} s` : countdown(s));
/** `catalog@1.3.0` may break after the @ on a narrow screen. */
const sourceText = (src) => (src.includes('@') ? html`${src.slice(0, src.indexOf('@') + 1)}<wbr />${src.slice(src.indexOf('@') + 1)}` : src);
const perM = (v) => (v === null || v === undefined ? '–' : `$${v}`);
const cache = (p) => (p.cached === undefined && p.cache_write === undefined ? '–' : `${perM(p.cached)} / ${perM(p.cache_write)}`);

function ModelTable({ provider }) {
  return html`<div class="table-wrap"><table class="prices-table">
    <caption class="sr-only">${provider.name}: models and prices (USD per 1M tokens)</caption>
    <thead><tr><th scope="col">Model</th><th scope="col" class="num">Input</th><th scope="col" class="num">Output</th>
      <th scope="col" class="num">Cache <span class="hide-narrow">read / write</span><span class="narrow">r / w</span></th><th scope="col">Source</th></tr></thead>
    <tbody>
      ${provider.models.map((m) => html`<tr key=${m.id} data-model=${m.id} class=${m.unpriced ? 'has-flag' : undefined}>
        <td class="model-cell"><${Name} text=${m.id} /></td>
        <td class="num">${m.price ? perM(m.price.input) : '–'}</td>
        <td class="num">${m.price ? perM(m.price.output) : '–'}</td>
        <td class="num">${m.price ? cache(m.price) : '–'}</td>
        <td><span class=${`tag source-${m.price_source === 'none' ? 'none' : m.price_source === 'config' ? 'config' : 'catalog'}`}>${sourceText(m.price_source)}</span></td>
      </tr>
      ${m.unpriced ? html`<tr class="unpriced-row" data-unpriced=${m.id}><td colspan="5" class="unpriced bad small" role="note"><strong>price unknown:</strong> <${Name} text=${m.id} /> is paid and its cost is recorded as unknown</td></tr>` : null}`)}
    </tbody>
  </table></div>
  ${provider.models.length === 0 ? html`<p class="muted small">No models listed.</p>` : null}`;
}

function Reported({ r }) {
  return html`<div class="reported">
    <p class="muted small">${r.connection ? html`Connection <${Name} text=${r.connection} />: ` : ''}${r.source}, ${age(r.age_s)} ago${r.retry_after_s ? ` · retry after ${countdown(r.retry_after_s)}` : ''}</p>
    <dl class="kv compact">
      ${Object.entries(r.limits).map(([resource, l]) => html`<dt><${Name} text=${resource} /></dt>
        <dd>${int(l.remaining)} of ${int(l.limit)} left${l.percentage === null ? '' : ` (${pct(l.percentage)} used)`}${l.reset_in_s === null ? '' : ` · resets ${l.reset_in_s <= 0 ? 'now' : `in ${countdown(l.reset_in_s)}`}`}</dd>`)}
    </dl>
  </div>`;
}

function QuotaBlock({ e }) {
  const q = e.quota;
  return html`<div class="quota-pair">
    <div>
      <h3 class="small">Computed (from the ledger)</h3>
      <dl class="kv compact">
        <dt>Used</dt><dd>${int(Math.round(q.used * 100) / 100)} ${q.limit === null ? q.unit : `of ${int(q.limit)} ${q.unit}`}${q.percentage === null ? '' : ` (${pct(q.percentage)})`}</dd>
        <dt>Resets</dt><dd>${e.reset.countdown_s === null ? 'no reset' : `in ${countdown(e.reset.countdown_s)}`}${e.reset.nextReset ? ` · ${time(e.reset.nextReset)}` : ''}</dd>
      </dl>
    </div>
    <div>
      <h3 class="small">Reported by the provider</h3>
      ${e.reported.length === 0 ? html`<p class="muted small">Nothing reported on its responses.</p>` : e.reported.map((r) => html`<${Reported} r=${r} />`)}
    </div>
  </div>`;
}

/** The address the provider sends the browser back to: the console itself (its `/` answers the page). */
const consoleCallback = () => `${location.origin}/`;

/**
 * The callback the browser came back with, when the provider's redirect opened the console (`/?code=…&state=…`):
 * taken once, as the console loads, and the query taken out of the address bar at once (the Providers page shown), so
 * no entry of the tab's history keeps the code: taken out only once exchanged, as before, every page visited meanwhile
 * pushed an entry that carried it. Held here until it is exchanged.
 */
let landed = (() => {
  const q = new URLSearchParams(location.search);
  if (!(q.has('state') && (q.has('code') || q.has('error')))) return '';
  const href = location.href;
  history.replaceState(null, '', `${location.pathname}#/providers`);
  return href;
})();
const arrivedCallback = () => landed;

function Connect({ provider, onConnected }) {
  const [start, setStart] = useState(null);
  const [answer, setAnswer] = useState(arrivedCallback());
  const [outcome, setOutcome] = useState(null);
  const [busy, setBusy] = useState(false);
  const id = provider.id;
  const field = `connect-${id}-answer`;
  const connect = async () => {
    setBusy(true);
    setOutcome(null);
    try {
      const body = provider.auth.redirect_uri ? {} : { redirect_uri: consoleCallback() };
      setStart((await api(`/api/settings/providers/${encodeURIComponent(id)}/connect`, { method: 'POST', body })).body);
    } catch (err) {
      setOutcome({ ok: false, text: err.message });
    } finally {
      setBusy(false);
    }
  };
  const complete = async (e) => {
    e.preventDefault();
    setBusy(true);
    setOutcome(null);
    try {
      const done = (await api(`/api/settings/providers/${encodeURIComponent(id)}/connect/complete`, { method: 'POST', body: { callback_url: answer.trim() } })).body;
      setOutcome({ ok: true, text: `Connected: ${provider.name} has a token${done.expires_at ? ` until ${time(done.expires_at)}` : ''}${done.refreshable ? ', refreshed before it expires' : ''}.` });
      setStart(null);
      setAnswer('');
      landed = ''; // used: not offered again
      onConnected();
    } catch (err) {
      setOutcome({ ok: false, text: err.message });
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="connect" aria-labelledby=${`connect-${id}`}>
    <h3 id=${`connect-${id}`} class="small">Sign in (OAuth, authorization code with PKCE)</h3>
    <p class="muted small">Admin keys only. Connect gives a sign-in address at the provider; open it, sign in, and paste the address your browser is sent back to${provider.auth.redirect_uri ? ` (${provider.auth.redirect_uri})` : ''}.</p>
    <div class="buttons"><button type="button" onClick=${connect} disabled=${busy}>Connect <${Name} text=${provider.name} /></button></div>
    ${start ? html`<p class="small auth-link">Open <a href=${start.authorization_url} target="_blank" rel="noopener noreferrer">the sign-in page of <${Name} text=${provider.name} /></a> (a new tab); it is valid until ${time(start.expires_at)}.</p>` : null}
    <form class="connect-form" onSubmit=${complete}>
      <div class="field">
        <label for=${field}>Authorization code or callback URL</label>
        <input id=${field} name=${field} type="text" autocomplete="off" spellcheck="false" required value=${answer} onInput=${(e) => setAnswer(e.currentTarget.value)} />
      </div>
      <button type="submit" disabled=${busy}>Complete sign-in</button>
    </form>
    ${outcome ? html`<p class=${outcome.ok ? 'ok' : 'error'} role=${outcome.ok ? 'status' : 'alert'}>${outcome.text}</p>` : null}
  </section>`;
}

function ProviderCard({ provider, quotaEntry, unpriced, onConnected }) {
  return html`<article class="card provider" aria-labelledby=${`p-${provider.id}`} data-provider=${provider.id}>
    <div class="section-head"><h2 id=${`p-${provider.id}`}><${Name} text=${provider.name} /></h2>
      <span><span class="tag"><${Name} text=${provider.group} /></span> <span class="tag"><${Name} text=${provider.format} /></span></span></div>
    <p class="muted small"><${Name} text=${provider.id} />${provider.catalog ? html` · catalog: <${Name} text=${provider.catalog} />` : ''} · auth: ${provider.auth.type}${provider.auth.flow ? ` (${provider.auth.flow})` : ''}${provider.auth.token_stored === null ? '' : html` · <span class="token-state">${provider.auth.token_stored ? 'token stored' : html`<strong>not signed in</strong>`}</span>`}</p>
    ${unpriced > 0 ? html`<p class="bad small" role="note"><strong>${unpriced} paid model${unpriced === 1 ? '' : 's'} without a price</strong>: set a price in the config (Settings) or pick a catalog that has it.</p>` : null}
    <${ModelTable} provider=${provider} />
    ${quotaEntry ? html`<${QuotaBlock} e=${quotaEntry} />` : null}
    ${provider.auth.type === 'oauth' && provider.auth.flow === 'pkce' ? html`<${Connect} provider=${provider} onConnected=${onConnected} />` : null}
  </article>`;
}

export function ProvidersPage() {
  const providers = useApi('/api/providers');
  const quota = useApi('/api/quota', { everyMs: 30000 });
  const byId = new Map((quota.data?.providers ?? []).map((e) => [e.id, e]));
  return html`
    <${ErrorNote} error=${providers.error ?? quota.error} />
    ${loaded(providers, (data) => html`
      <p class="muted small">Prices in USD per 1M tokens. Source: <code>config</code> (your YAML), <code>${`catalog@${data.catalog.version}`}</code> (the model catalog), or <code>none</code>.</p>
      <div class="grid-2">
        ${data.providers.map((p) => html`<${ProviderCard} key=${p.id} provider=${p} quotaEntry=${byId.get(p.id)} unpriced=${p.models.filter((m) => m.unpriced).length} onConnected=${providers.reload} />`)}
      </div>
      ${data.providers.length === 0 ? html`<p class="muted">No providers configured.</p>` : null}`)}`;
}
