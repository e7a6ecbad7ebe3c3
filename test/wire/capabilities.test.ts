// The capability table: what a model's configured capabilities exclude is removed before the request is built.

import t from 'tap';
import type { ModelConfig } from '../../src/config/types.js';
import { fitCapabilities } from '../../src/wire/capabilities.js';
import type { CanonicalRequest } from '../../src/wire/canonical.js';

const png = { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } as const;
const pdf = { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0=' } as const;
const REQ: CanonicalRequest = {
  model: 'm',
  stream: false,
  system: [{ type: 'text', text: 'sys' }, { type: 'image', source: png }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: png }, { type: 'file', source: pdf }, { type: 'audio', source: png }] },
    { role: 'assistant', content: [{ type: 'tool_call', id: 'c1', name: 'f', arguments: '{}' }] },
    { role: 'user', content: [{ type: 'tool_result', callId: 'c1', content: [{ type: 'text', text: 'ok' }, { type: 'image', source: png }] }] },
  ],
  tools: [{ name: 'f', parameters: { type: 'object' } }],
  toolChoice: { type: 'required' },
  parallelToolCalls: true,
  responseFormat: { type: 'json_schema', name: 'x', schema: { type: 'object' } },
  thinking: { kind: 'level', level: 'high' },
};
const model = (capabilities: ModelConfig['capabilities']): ModelConfig => ({ kind: 'llm', capabilities });

t.test('a model that lists no capabilities (or an unlisted model) gets the request as written', async (t) => {
  t.equal(fitCapabilities(REQ, null), REQ);
  t.equal(fitCapabilities(REQ, model([])), REQ);
});

t.test('a model with every capability loses nothing', async (t) => {
  t.strictSame(fitCapabilities(REQ, model(['tools', 'vision', 'pdf', 'audio', 'structured_output', 'reasoning'])), REQ);
});

t.test('each missing capability removes its part of the request', async (t) => {
  const out = fitCapabilities(REQ, model(['tools']));
  t.ok(out.tools && out.toolChoice && out.parallelToolCalls, 'tools kept');
  t.notOk(out.thinking, 'no reasoning: no thinking level');
  t.strictSame(out.responseFormat, { type: 'json_object' }, 'no structured_output: json_schema becomes json_object');
  t.strictSame(out.system, [{ type: 'text', text: 'sys' }], 'no vision: system image removed');
  t.strictSame(out.messages[0]!.content, [{ type: 'text', text: 'look' }], 'no vision, pdf or audio: media parts removed');
  t.strictSame(out.messages[2]!.content, [{ type: 'tool_result', callId: 'c1', content: [{ type: 'text', text: 'ok' }] }], 'and inside tool results');
  t.equal(out.messages[1], REQ.messages[1], 'an untouched message is the same object');

  const noTools = fitCapabilities(REQ, model(['vision', 'pdf', 'audio', 'structured_output', 'reasoning']));
  t.notOk('tools' in noTools || 'toolChoice' in noTools || 'parallelToolCalls' in noTools, 'no tools capability: tool definitions and choice removed');
  t.strictSame(noTools.messages, REQ.messages, 'media kept');
  t.same(noTools.thinking, REQ.thinking);

  const vision = fitCapabilities(REQ, model(['tools', 'vision']));
  t.strictSame(vision.messages[0]!.content.map((p) => p.type), ['text', 'image'], 'vision only: the image stays, the PDF and audio go');
});
