// Status: the running version and its release notes, whether the config file on disk is what runs (/api/version),
// and the public URL's tunnel check (/api/tunnel).

import { html } from 'htm/preact';
import { ErrorNote, Stat, loaded, useApi } from '../components.js';
import { time } from '../format.js';

const TUNNEL = {
  not_configured: ['No public URL', 'Set server.public_url to the address of a tunnel or reverse proxy in front of this gateway to have it checked here.'],
  reaches_this_instance: ['Reaches this instance', 'A request to the public URL came back to this process.'],
  reaches_another_instance: ['Reaches another instance', 'The public URL answers, but from another Tollgate process.'],
  unreachable: ['Unreachable', 'The public URL did not lead back to this process.'],
};

export function StatusPage() {
  const version = useApi('/api/version');
  const tunnel = useApi('/api/tunnel', { everyMs: 30000 });
  const v = version.data;
  return html`
    <div class="grid-2">
      <section class="card" aria-labelledby="version-title">
        <h2 id="version-title">Version</h2>
        <${ErrorNote} error=${version.error} />
        ${loaded(version, (v) => html`
          <div class="stats roomy">
            <${Stat} label="Tollgate" value=${v.version} hint=${`Node ${v.node}`} />
            <${Stat} label="Config on disk" value=${v.config === null ? 'no file' : v.config.matches_running ? 'matches what runs' : 'differs from what runs'}
              hint=${v.config?.file ?? 'started without a config file'} />
          </div>
          ${v.config?.error ? html`<pre class="error small">${v.config.error}</pre>` : null}`)}
      </section>
      <section class="card" aria-labelledby="tunnel-title">
        <h2 id="tunnel-title">Tunnel</h2>
        <${ErrorNote} error=${tunnel.error} />
        ${loaded(tunnel, (t) => html`
          <div class="stats roomy">
            <${Stat} label="State" value=${TUNNEL[t.state][0]} hint=${t.public_url ?? 'server.public_url is not set'} />
            ${t.latency_ms === null ? null : html`<${Stat} label="Round trip" value=${`${t.latency_ms} ms`} hint=${`checked ${time(t.checked_at)}`} />`}
          </div>
          <p class="muted small">${TUNNEL[t.state][1]}</p>
          ${t.error ? html`<p class="error small">${t.error}</p>` : null}`)}
      </section>
    </div>
    ${v?.release_notes ? html`<section class="card" aria-labelledby="notes-title">
      <h2 id="notes-title">Release notes · ${v.release_notes.section}${v.release_notes.released ? '' : ' (not released yet)'}</h2>
      <details><summary>Show the notes</summary><pre class="notes">${v.release_notes.notes}</pre></details>
    </section>` : null}`;
}
