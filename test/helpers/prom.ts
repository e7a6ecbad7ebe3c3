// Read values out of Prometheus text: the sum of every sample of `name` whose labels include `labels`.

export function metricValue(text: string, name: string, labels: Record<string, string>): number {
  return metricSamples(text, name, labels).reduce((a, b) => a + b, 0);
}

/** Every sample of `name` whose labels include `labels` (none: the series does not exist, where metricValue says 0). */
export function metricSamples(text: string, name: string, labels: Record<string, string>): number[] {
  const out: number[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const p of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) have[p[1]!] = p[2]!;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) out.push(Number(m[4]));
  }
  return out;
}
