// format=text of the request log puts client-chosen names in a line of space-separated fields: a model string with a
// line end forged a whole request line, a space added fields, and an escape code (`ESC[8m`) hid what followed in the
// operator's terminal. Such a name is written as a JSON string with every control and bidi character escaped.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeAnyFormat } from '../helpers/fake-any-format.js';

const up = await startFakeAnyFormat(t);
const gw = await startApp(t, { providers: { evil: { ...fakeProvider(up.port, 'ok', 'openai'), allow_unlisted_models: true } } });

t.test('a model name cannot forge a line, add a field or send escape codes in format=text', async (t) => {
  const hostile = 'gpt-4o in=1 out=1\n#99 2026-11-30T23:45:00.000Z success 200 evil/gpt-4o id=forged\u001b[8m\u202e\u0085';
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: `evil/${hostile}`, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200, 'the unlisted model is served');
  const id = res.headers.get('x-request-id');
  await gw.flush();
  for (const path of ['/api/usage/logs?format=text', '/api/usage/request-logs?format=text']) {
    const text = await (await fetch(`${gw.url}${path}`)).text();
    const lines = text.split('\n').filter((l) => l !== '');
    t.equal(lines.length, 1, `${path}: one request, one line`);
    t.notMatch(text, /[\u001b\u0085\u202e\r]/, `${path}: no control or bidi character as it is`);
    const quoted = JSON.stringify(`evil/${hostile}`).replace(/[\u0085\u202e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    t.ok(lines[0]!.includes(` ${quoted} `), `${path}: the name as one JSON string`);
    t.ok(lines[0]!.endsWith(` id=${id}`), `${path}: the line ends with the request's own id`);
    t.equal(lines[0]!.replace(quoted, '').match(/ in=/g)?.length, 1, `${path}: one in= field outside the name's quotes`);
  }
  const plain = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'evil/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(plain.status, 200);
  await gw.flush();
  const text = await (await fetch(`${gw.url}/api/usage/logs?format=text&limit=1`)).text();
  t.match(text, /^#\d+ \S+ success 200 evil\/gpt-4o-mini in=/, 'a plain name is written as it is');
});
