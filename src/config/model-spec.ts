// A model as configuration and clients name it: `<provider>/<model_id>`, split on the first '/' (a model id may hold
// more, e.g. `openrouter/meta-llama/llama-3-70b`). The one place that split is written: routing, the config's checks,
// the metrics' declared series and the live view all read a spec through it.

/** The provider prefix and the model id of `spec`; null when it has no provider before its first '/'. */
export function splitModelSpec(spec: string): { readonly provider: string; readonly modelId: string } | null {
  const slash = spec.indexOf('/');
  return slash > 0 ? { provider: spec.slice(0, slash), modelId: spec.slice(slash + 1) } : null;
}
