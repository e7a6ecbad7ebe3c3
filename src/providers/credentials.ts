// OAuth tokens at rest: one AES-256-GCM envelope per provider under `<data_dir>/credentials/<id>.json.enc`.
//
// The key comes from TOLLGATE_SECRET_KEY when it is set (any string; scrypt stretches it to 32 bytes with a random
// salt kept in each envelope, so no other file is needed to decrypt), else from `<data_dir>/secret.key`: 32 random
// bytes (base64) created once, mode 0600. The envelope records which of the two encrypted it, and the provider id is
// authenticated data, so a file copied to another provider's name does not decrypt. Every write is a temp file,
// fsync, rename; files are 0600, the credentials directory 0700. No message ever contains a token.

import { createCipheriv, createDecipheriv, randomBytes, scrypt } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { TollgateError } from '../core/errors.js';

export interface OAuthTokens {
  readonly access_token: string;
  readonly refresh_token?: string;
  readonly token_type: string;
  /** ms since the epoch; null when the token endpoint gave no expires_in. */
  readonly expires_at: number | null;
  readonly scope?: string;
  /** ms since the epoch. */
  readonly obtained_at: number;
}

type Env = Readonly<Record<string, string | undefined>>;
type KeySource = 'env' | 'file';

interface Envelope {
  readonly version: 1;
  readonly key: KeySource;
  /** base64; only for key 'env' (the scrypt salt). */
  readonly salt?: string;
  readonly iv: string;
  readonly tag: string;
  readonly ciphertext: string;
}

const PROVIDER_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const KEY_BYTES = 32;
const TAG_BYTES = 16;
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;

function authError(providerId: string, what: string): TollgateError {
  return new TollgateError('TOLLGATE_ERR_PROVIDER_AUTH', `stored credentials for provider '${providerId}' ${what}: run \`tollgate connect ${providerId}\` again`);
}

function deriveKey(secret: string, salt: Buffer): Promise<Buffer> {
  return new Promise((res, rej) => scrypt(secret, salt, KEY_BYTES, SCRYPT, (err, key) => (err ? rej(err) : res(key))));
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const optString = (v: unknown) => v === undefined || typeof v === 'string';

function isTokens(v: unknown): v is OAuthTokens {
  return (
    isRecord(v) &&
    typeof v.access_token === 'string' &&
    typeof v.token_type === 'string' &&
    (v.expires_at === null || typeof v.expires_at === 'number') &&
    typeof v.obtained_at === 'number' &&
    optString(v.refresh_token) &&
    optString(v.scope)
  );
}

function isEnvelope(v: unknown): v is Envelope {
  return (
    isRecord(v) &&
    v.version === 1 &&
    (v.key === 'env' || v.key === 'file') &&
    (v.key === 'file' || typeof v.salt === 'string') &&
    typeof v.iv === 'string' &&
    typeof v.tag === 'string' &&
    typeof v.ciphertext === 'string'
  );
}

/**
 * Write `data` to `path` through a synced temp file in the same directory, so a reader sees the old file or the new
 * one. 'replace' renames over `path`; 'create' links, which never replaces: a file another process made first wins
 * (EEXIST).
 */
async function writeAtomic(path: string, data: string, how: 'replace' | 'create'): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fh = await open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await (how === 'replace' ? rename(tmp, path) : link(tmp, path));
  } finally {
    await unlink(tmp).catch(() => undefined); // after a rename there is nothing left to remove
  }
  // so that the rename itself survives a crash (a rotated refresh token must not be lost); best effort
  const dir = await open(dirname(path), 'r').catch(() => null);
  await dir?.sync().catch(() => undefined);
  await dir?.close();
}

// The files as errors name them: relative to storage.data_dir, never the server's path (an error reaches API clients:
// a request to an OAuth provider, the console's sign-in). The operator knows data_dir; pathFor gives the whole path.
const SHOWN_DIR = 'storage.data_dir/credentials';
const SHOWN_KEY = 'storage.data_dir/secret.key';

export class CredentialStore {
  readonly #dataDir: string;
  readonly #dir: string;
  readonly #secret: string | undefined;
  #fileKey: Buffer | null = null;

  /** `dataDir` is `storage.data_dir` (relative paths resolve against the working directory, as the store's do). */
  constructor(dataDir: string, env: Env = process.env) {
    this.#dataDir = resolve(dataDir);
    this.#dir = join(this.#dataDir, 'credentials');
    const secret = env.TOLLGATE_SECRET_KEY;
    this.#secret = secret === undefined || secret === '' ? undefined : secret;
  }

  /** Where a provider's tokens are kept. */
  pathFor(providerId: string): string {
    if (!PROVIDER_ID.test(providerId)) {
      throw new TollgateError('TOLLGATE_ERR_PROVIDER_AUTH', `invalid provider id ${JSON.stringify(providerId)}`);
    }
    const path = join(this.#dir, `${providerId}.json.enc`);
    if (resolve(path, '..') !== this.#dir) throw new TollgateError('TOLLGATE_ERR_PROVIDER_AUTH', `invalid provider id ${JSON.stringify(providerId)}`);
    return path;
  }

  /**
   * Create the credentials directory and, without TOLLGATE_SECRET_KEY, the key file; `save` does it too. Called
   * before a user is asked to authorise, so that an unwritable data_dir fails first.
   */
  async init(): Promise<void> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    await chmod(this.#dir, 0o700);
    if (this.#secret === undefined) await this.#keyFromFile(true);
  }

  async load(providerId: string): Promise<OAuthTokens | null> {
    const path = this.pathFor(providerId);
    let raw: string;
    try {
      raw = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw authError(providerId, `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    let envelope: unknown;
    try {
      envelope = JSON.parse(raw);
    } catch {
      envelope = undefined;
    }
    if (!isEnvelope(envelope)) throw authError(providerId, `in ${SHOWN_DIR}/${providerId}.json.enc are not a credentials file this version understands`);
    if (envelope.key === 'env' && this.#secret === undefined) {
      throw authError(providerId, 'were encrypted with TOLLGATE_SECRET_KEY, which is not set');
    }
    if (envelope.key === 'file' && this.#secret !== undefined) {
      throw authError(providerId, `were encrypted with ${SHOWN_KEY}, but TOLLGATE_SECRET_KEY is set`);
    }
    const key = envelope.key === 'env' ? await deriveKey(this.#secret!, Buffer.from(envelope.salt!, 'base64')) : await this.#keyFromFile(false);
    if (key === null) throw authError(providerId, `cannot be decrypted: ${SHOWN_KEY} is missing`);
    let plain: string;
    try {
      // the tag length is fixed: a truncated tag must not be accepted
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(envelope.iv, 'base64'), { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(providerId));
      decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'));
      plain = Buffer.concat([decipher.update(Buffer.from(envelope.ciphertext, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      const which = envelope.key === 'env' ? 'TOLLGATE_SECRET_KEY' : SHOWN_KEY;
      throw authError(providerId, `cannot be decrypted (a different ${which}, or the file was modified)`);
    }
    let tokens: unknown;
    try {
      tokens = JSON.parse(plain);
    } catch {
      tokens = undefined; // the parse error would quote the plaintext
    }
    if (!isTokens(tokens)) throw authError(providerId, 'are not a valid token set');
    return tokens;
  }

  async save(providerId: string, tokens: OAuthTokens): Promise<void> {
    const path = this.pathFor(providerId);
    await this.init();
    const salt = this.#secret === undefined ? undefined : randomBytes(16);
    const key = salt === undefined ? (await this.#keyFromFile(true))! : await deriveKey(this.#secret!, salt);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(providerId));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(tokens), 'utf8'), cipher.final()]);
    const envelope: Envelope = {
      version: 1,
      key: salt === undefined ? 'file' : 'env',
      ...(salt === undefined ? {} : { salt: salt.toString('base64') }),
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      ciphertext: ciphertext.toString('base64'),
    };
    await writeAtomic(path, `${JSON.stringify(envelope)}\n`, 'replace');
  }

  /** The key in `<data_dir>/secret.key`; created when `create` and missing, null when missing otherwise. */
  async #keyFromFile(create: boolean): Promise<Buffer | null> {
    if (this.#fileKey !== null) return this.#fileKey;
    const path = join(this.#dataDir, 'secret.key');
    let text: string | null = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw new TollgateError('TOLLGATE_ERR_PROVIDER_AUTH', `${SHOWN_KEY} cannot be read (${err.code ?? 'error'})`, { cause: err });
    });
    if (text === null) {
      if (!create) return null;
      await mkdir(this.#dataDir, { recursive: true, mode: 0o700 });
      await writeAtomic(path, `${randomBytes(KEY_BYTES).toString('base64')}\n`, 'create').catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      text = await readFile(path, 'utf8');
    } else {
      await tighten(path);
    }
    const key = Buffer.from(text.trim(), 'base64');
    if (key.length !== KEY_BYTES) {
      throw new TollgateError(
        'TOLLGATE_ERR_PROVIDER_AUTH',
        `${SHOWN_KEY} does not hold a ${KEY_BYTES}-byte base64 key; remove it to have a new one made, then run \`tollgate connect\` again for every OAuth provider`,
      );
    }
    this.#fileKey = key; // only a key that exists is remembered: a missing one may be created later
    return key;
  }
}

/** A key file others may read (copied in, restored from a backup) is made the owner's alone; best effort. */
async function tighten(path: string): Promise<void> {
  const st = await stat(path).catch(() => null);
  if (st !== null && (st.mode & 0o077) !== 0) await chmod(path, 0o600).catch(() => undefined);
}

function aad(providerId: string): Buffer {
  return Buffer.from(`tollgate-credentials:v1:${providerId}`, 'utf8');
}
