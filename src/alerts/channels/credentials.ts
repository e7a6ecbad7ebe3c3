// The credentials a channel's URL carries, as an error message must not show them (the email channel's SMTP URL, the
// webhook's user and password): from 3 characters, where the shared redaction (core/secrets.ts) leaves strings under
// 8 characters alone, for a path's segments.

/** The strings an error message must not carry: the URL itself and its user name and password, raw and decoded. */
export function credentials(url: URL, raw: string): string[] {
  const out = new Set<string>([raw]);
  for (const part of [url.username, url.password]) {
    if (part === '') continue;
    out.add(part);
    try {
      out.add(decodeURIComponent(part));
    } catch {
      // not percent-encoded: the raw form is enough
    }
  }
  // Longest first, so a password containing the user name is removed whole.
  return [...out].filter((s) => s.length >= 3).sort((x, y) => y.length - x.length);
}
