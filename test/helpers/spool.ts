// A spool's leftovers (src/store/leftovers.ts) are read in the background after it opens: what it found, once read.

import type { Leftovers } from '../../src/store/leftovers.js';

export async function leftoversRead<Row>(spool: { readonly leftovers: Leftovers<Row> }): Promise<{ segments: number; rows: number; interrupted: number }> {
  if (!(await spool.leftovers.done)) throw new Error('the spool closed before its leftovers were read');
  return spool.leftovers.counts();
}

