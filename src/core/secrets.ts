// Secrets kept out of a text a client or a log will see: an upstream's error body (src/pipeline/upstream.ts,
// relayedText) and a token endpoint's error description (src/providers/oauth.ts, oauthErrorOf).

/** What stands where a secret was. */
export const REDACTED = '[REDACTED]';

/**
 * `text` with each of `secrets` replaced by `[REDACTED]`, in the forms a text may quote it: as it is, JSON-escaped
 * (with `/` written `\/` too, as PHP's json_encode does) and percent-encoded. A secret under 8 characters is passed
 * over: it is no secret worth the name, and it would match ordinary words.
 */
export function withoutSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret === undefined || secret.length < 8) continue;
    const json = JSON.stringify(secret).slice(1, -1);
    for (const form of new Set([secret, json, json.replaceAll('/', '\\/'), encodeURIComponent(secret)])) {
      if (out.includes(form)) out = out.split(form).join(REDACTED);
    }
  }
  return out;
}
