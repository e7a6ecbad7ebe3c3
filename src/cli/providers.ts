// `tollgate providers add <catalog-id>`: write a provider block taken from the catalog into the config file, comments
// and layout kept (config/edit-providers.ts). The result is validated as a start would validate it (with ${VAR}
// references standing for values set later) before the file is replaced, atomically; a running gateway picks the
// edit up by its live reload.

import { ConfigError, parseConfigText, readConfigText } from '../config/load.js';
import { replaceFileText } from '../config/edit.js';
import { addProvider, ConfigEditError, type AddProviderOptions } from '../config/edit-providers.js';

/** The environment, with a stand-in for each ${VAR} the text names that is not set: the shape is checked, not the secrets. */
function standInEnv(text: string): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)) if (!env[m[1]!]) env[m[1]!] = 'stand-in-for-validation-0123456789';
  return env;
}

export async function addProviderToFile(file: string, opts: AddProviderOptions, out: { write(s: string): void }): Promise<void> {
  let text: string;
  try {
    text = readConfigText(file); // a regular file of at most 4 MiB, as for a start (a FIFO blocked, /dev/zero grew without end)
  } catch (err) {
    throw new ConfigEditError(err instanceof ConfigError ? err.message : `cannot read ${file}: ${(err as Error).message}`);
  }
  const added = addProvider(text, opts);
  try {
    parseConfigText(added.text, standInEnv(added.text), file);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigEditError(`the file would not be valid with this provider, so it was not changed:\n${err.message}`);
    throw err;
  }
  try {
    replaceFileText(file, added.text);
  } catch (err) {
    throw new ConfigEditError(`${file} was not changed: ${(err as Error).message}`);
  }
  const key = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(added.text.slice(added.text.lastIndexOf(`${added.prefix}:`)))?.[1];
  out.write(`Added provider '${added.prefix}' with ${added.models.length} model${added.models.length === 1 ? '' : 's'} to ${file}${key ? `; its key is read from \${${key}}` : ''}.\n`);
}
