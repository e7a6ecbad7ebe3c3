// Whether a gateway run as root may replace a config file at a path: only when no other user can steer the write.
// Root writes wherever a path leads, and Node has no openat or renameat to pin a directory while it writes; so every
// link met resolving the path must be root's, and every directory a name is looked up in (the file's, each link's)
// root's and writable by no one else (a sticky one, as /tmp, excepted: others cannot move what they do not own in it). A path through a link or a
// directory another user controls let that user point the write (or swap a directory in during it) at any file:
// root's, /etc/shadow's. A gateway not run as root needs none of this: the kernel bounds what it may write.

import { lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';

/** Links a path may go through before it is taken for a loop (the kernel's own limit). */
const MAX_LINKS = 40;

/** Why root must not write `file` (a link or a directory another user controls on its path), else null. */
export function rootWriteProblem(file: string): string | null {
  let at = '/';
  let parts = (isAbsolute(file) ? file : `${process.cwd()}/${file}`).split('/').filter((p) => p !== '' && p !== '.');
  const checked = new Set<string>();
  for (let links = 0; parts.length > 0;) {
    const part = parts.shift()!;
    if (part === '..') {
      at = dirname(at);
      continue;
    }
    // Every directory a name is looked up in: one another user may write could swap the name (a link root made
    // included) for one of its own between this check and the write.
    if (!checked.has(at)) {
      const problem = directoryProblem(at);
      if (problem !== null) return problem;
      checked.add(at);
    }
    const next = join(at, part);
    const st = lstatSync(next);
    if (!st.isSymbolicLink()) {
      at = next;
      continue;
    }
    if (st.uid !== 0) return `the link ${next} on its path is another user's (uid ${st.uid})`;
    if (++links > MAX_LINKS) return 'its path goes through too many links';
    const to = readlinkSync(next);
    if (isAbsolute(to)) at = '/';
    parts = [...to.split('/').filter((p) => p !== '' && p !== '.'), ...parts];
  }
  return at === realpathSync(file) ? null : 'its path changed while it was being checked';
}

function directoryProblem(dir: string): string | null {
  const st = statSync(dir);
  const othersWrite = (st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0;
  if (st.uid !== 0) return `the directory ${dir} on its path is another user's (uid ${st.uid})`;
  return othersWrite ? `the directory ${dir} on its path is writable by other users` : null;
}
