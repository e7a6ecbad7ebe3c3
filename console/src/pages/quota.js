// Quota: one card per provider (/api/quota) with used / limit, the percentage and a countdown to the reset that
// ticks every second (the numbers are fetched again every 30 s).

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ErrorNote, Meter, Name, loaded, useApi } from '../components.js';
import { countdown, int, pct, time, usd } from '../format.js';

function useNow() {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return now;
}

function QuotaCard({ e, fetchedAt, now }) {
  const q = e.quota;
  const left = e.reset.countdown_s === null ? null : Math.max(0, e.reset.countdown_s - (now - fetchedAt) / 1000);
  return html`<article class="card quota" aria-labelledby=${`q-${e.id}`}>
    <div class="section-head"><h2 id=${`q-${e.id}`}><${Name} text=${e.name} /></h2><span class="tag"><${Name} text=${e.group} /></span></div>
    <p class="muted small">${e.kind.replace(/_/g, ' ')}${e.exhausted ? html` · <strong class="bad">exhausted</strong>` : ''}${e.cooldown?.cooling ? html` · <strong class="bad">cooling down</strong>` : ''}</p>
    <div class="quota-used">
      <span class="big">${int(Math.round(q.used * 100) / 100)}</span>
      <span class="muted">${q.limit === null ? q.unit : `of ${int(q.limit)} ${q.unit}`}</span>
      <span class="share-pct">${pct(q.percentage)}</span>
    </div>
    ${q.percentage === null ? null : html`<${Meter} label=${`${e.name}: quota used`} percent=${q.percentage} />`}
    <dl class="kv compact">
      <dt>Resets in</dt><dd class="countdown" aria-live="off">${left === null ? 'no reset' : countdown(left)}</dd>
      ${e.reset.nextReset ? html`<dt>Next reset</dt><dd>${time(e.reset.nextReset)}</dd>` : null}
      <dt>Cost today · month</dt><dd>${usd(e.cost.today)} · ${usd(e.cost.month)}</dd>
    </dl>
    ${e.pricing?.unpriced_models.length ? html`<p class="bad small unpriced" role="note"><strong>price unknown:</strong> ${e.pricing.unpriced_models.map((m, i) => html`${i > 0 ? ', ' : ''}<${Name} text=${m} />`)}: cost recorded as unknown (<a href="#/providers">Providers</a>)</p>` : null}
  </article>`;
}

export function QuotaPage() {
  const quota = useApi('/api/quota', { everyMs: 30000 });
  const [fetchedAt, setFetchedAt] = useState(Date.now());
  useEffect(() => setFetchedAt(Date.now()), [quota.data]);
  const now = useNow();
  return html`
    <${ErrorNote} error=${quota.error} />
    ${loaded(quota, (data) => html`<div class="grid-3">
      ${data.providers.map((e) => html`<${QuotaCard} key=${e.id} e=${e} fetchedAt=${fetchedAt} now=${now} />`)}
    </div>`)}
    ${quota.data && quota.data.providers.length === 0 ? html`<p class="muted">No providers configured.</p>` : null}`;
}
