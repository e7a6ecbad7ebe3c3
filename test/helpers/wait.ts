// Poll until a condition holds (bounded); for effects that land asynchronously, such as a row after an abort.

export async function waitFor(cond: () => Promise<boolean> | boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`condition not met within ${ms} ms`);
}
