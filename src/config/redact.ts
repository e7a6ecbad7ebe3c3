// The config as it may leave the machine (the export archive): the YAML text with every literal secret replaced by
// a `${TOLLGATE_REDACTED_<PATH>}` reference, comments and layout kept (the yaml Document API edits values in place).
//
// A secret is the value of a key named key, api_key, password, secret, client_secret or token; a header value
// whose name names a credential (CREDENTIAL_NAME: ...key..., ...token..., ...secret..., ...auth..., cookie, ...:
// `Ocp-Apim-Subscription-Key`, `X-Functions-Key`, `x-auth-key`); or a URL that carries a password (user:pass@, even
// one that does not percent-decode) or a query parameter named so (`private_token`, `client_secret`, `sig`). Names
// like `x-request-id`, `content-type` or `api-version` are not secrets. A value made only of `${VAR}` references
// (optionally after an auth scheme word, `Bearer ${VAR}`) is kept; `${VAR:-default}` is not, since its default is a
// literal.

import { Document, isAlias, isMap, isScalar, isSeq, parseDocument, type Node, type Scalar } from 'yaml';

const SECRET_KEYS: ReadonlySet<string> = new Set(['key', 'api_key', 'password', 'secret', 'client_secret', 'token']);
/** A header or query parameter name that names a credential (over-redacting a name like `x-idempotency-key` is cheap). */
export const CREDENTIAL_NAME = /key|token|secret|passw(or)?d|pwd|auth|signature|credential|cookie|session|(^|[-_.])sig($|[-_.])/i;
const PLAIN_REF = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/g;

/** True when `s` is nothing but `${VAR}` references, possibly after an auth scheme word. */
export function onlyReferences(s: string): boolean {
  if (!PLAIN_REF.test(s)) return false;
  PLAIN_REF.lastIndex = 0;
  return s.replace(PLAIN_REF, '').replace(/^\s*(Bearer|Basic|Token)\s*/i, '').trim() === '';
}

function urlCarriesSecret(s: string): boolean {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) return false;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  // The userinfo's secret: its password, or a user alone (a token as often as a name: `https://TOKEN@host/...`, which a
  // webhook sends as Basic). One that does not percent-decode (`50%off`) is a secret all the same.
  const secret = u.password !== '' ? u.password : u.username;
  if (secret !== '') {
    try {
      if (!onlyReferences(decodeURIComponent(secret))) return true;
    } catch {
      return true;
    }
  }
  for (const [k, v] of u.searchParams) if (CREDENTIAL_NAME.test(k) && !onlyReferences(v)) return true;
  return false;
}

const envName = (path: readonly string[]): string => `TOLLGATE_REDACTED_${path.join('_').toUpperCase().replace(/[^A-Z0-9_]/g, '_')}`;

function isSecret(keyName: string, parentKey: string | undefined, value: unknown): boolean {
  if (typeof value === 'number') return SECRET_KEYS.has(keyName) || (parentKey === 'headers' && CREDENTIAL_NAME.test(keyName));
  if (typeof value !== 'string' || value === '') return false;
  if (SECRET_KEYS.has(keyName) || (parentKey === 'headers' && CREDENTIAL_NAME.test(keyName))) return !onlyReferences(value);
  return urlCarriesSecret(value);
}

function redactNode(doc: Document, node: unknown, path: readonly string[], parentKey: string | undefined, redacted: string[]): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const keyName = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      let value: unknown = pair.value;
      if (isAlias(value)) value = value.resolve(doc);
      if (isScalar(value)) {
        if (isSecret(keyName, parentKey, value.value)) {
          const scalar = value as Scalar;
          scalar.value = `\${${envName([...path, keyName])}}`;
          scalar.type = 'QUOTE_DOUBLE';
          redacted.push([...path, keyName].join('.'));
        }
      } else redactNode(doc, value, [...path, keyName], keyName, redacted);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      const value = isAlias(item) ? item.resolve(doc) : item;
      if (isScalar(value) && urlCarriesSecret(String(value.value))) {
        value.value = `\${${envName([...path, String(i)])}}`;
        value.type = 'QUOTE_DOUBLE';
        redacted.push([...path, String(i)].join('.'));
      } else redactNode(doc, value, [...path, String(i)], parentKey, redacted);
    });
  }
}

export interface RedactedConfig {
  readonly text: string;
  /** Dotted paths of the values replaced. */
  readonly redacted: readonly string[];
}

/** `text` (YAML) with its literal secrets replaced by `${TOLLGATE_REDACTED_<PATH>}` references. */
export function redactConfigText(text: string): RedactedConfig {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`config is not valid YAML: ${doc.errors[0]!.message}`);
  return redactDocument(doc);
}

/** A YAML rendering of an effective config (no file to copy), redacted the same way. */
export function renderConfig(config: unknown): RedactedConfig {
  return redactDocument(new Document(config));
}

function redactDocument(doc: Document): RedactedConfig {
  const redacted: string[] = [];
  redactNode(doc, doc.contents as Node | null, [], undefined, redacted);
  return { text: doc.toString(), redacted };
}
