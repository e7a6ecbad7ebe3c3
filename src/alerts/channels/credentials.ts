// The credentials a channel's URL carries, as an error message must not show them (the email channel's SMTP URL, the
// webhook's user and password). A user name or password alone is cut out from 3 characters (the shared redaction,
// core/secrets.ts, leaves strings under 8 alone, for a path's segments): a shorter one, cut out wherever it stood,
// would take letters out of every word. A password of any length goes where the URL's userinfo is written: the
// `user:pass` pair (with or without its `@`, raw and decoded, as an echoed Basic header decodes to; `:pass` with no
// user), `user@` with no password, and the userinfo of any URL the text quotes (`scheme://...@`, JSON-escaped too).

/** The strings an error message must not carry: the URL itself, its user name and password, and their pair. */
export function credentials(url: URL, raw: string): string[] {
  const out = new Set<string>();
  for (const part of [raw, url.username, url.password]) {
    for (const form of [part, decoded(part)]) if (form.length >= 3) out.add(form);
  }
  for (const form of userinfoForms(url)) out.add(form);
  // Longest first, so a password containing the user name is removed whole.
  return [...out].sort((x, y) => y.length - x.length);
}

/** The forms the URL's userinfo takes in a text, at any length (they carry `:` or `@`, which words do not end in). */
function userinfoForms(url: URL): string[] {
  const { username: user, password: pass } = url;
  if (user === '' && pass === '') return [];
  const pair = (u: string, p: string): string => (p === '' ? `${u}@` : `${u}:${p}`);
  return [pair(user, pass), pair(decoded(user), decoded(pass))];
}

/**
 * `text` with each of `strings` made `***`, in the order given (longest first, as `credentials` sorts them, so a
 * password holding the user name goes whole), then the userinfo of every URL it quotes: what both channels cut out of
 * an error they record.
 */
export function cutOut(text: string, strings: readonly string[]): string {
  let out = text;
  for (const s of strings) out = out.split(s).join('***');
  return withoutUrlUserinfo(out);
}

/** `text` with the userinfo of every URL it quotes (`https://user:pass@host`, also `https:\/\/...`) made `***`. */
export function withoutUrlUserinfo(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:(?:\\?\/){2})[^\s/\\@"'<>]*@/gi, '$1***@');
}

/** `x` percent-decoded, or as it is when it does not decode. */
export function decoded(x: string): string {
  try {
    return decodeURIComponent(x);
  } catch {
    return x;
  }
}
