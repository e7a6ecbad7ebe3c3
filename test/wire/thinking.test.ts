// Thinking levels (spec item 8): the `(level)` suffix, and the exact parameters every family gets for every level.
// The table below is docs/thinking.md's table; a change to one is a change to the other.

import t from 'tap';
import type { ModelConfig } from '../../src/config/types.js';
import { parseConfig } from '../../src/config/load.js';
import { anthropicCodec } from '../../src/wire/anthropic/index.js';
import type { CanonicalRequest, ThinkingLevel } from '../../src/wire/canonical.js';
import {
  applyThinking, budgetToLevel, isThinkingFamily, parseThinkingLevel, parseThinkingSuffix, THINKING_FAMILIES, type ThinkingFamily,
} from '../../src/wire/thinking.js';
import { wireJson } from '../helpers/wire.js';

const REASONING: ModelConfig = { kind: 'llm', capabilities: ['reasoning', 'tools'] };
const PLAIN: ModelConfig = { kind: 'llm', capabilities: ['vision', 'tools'], max_output_tokens: 16384 };
const withMax = (max_output_tokens: number): ModelConfig => ({ ...REASONING, max_output_tokens });

const lv = (level: Extract<ThinkingLevel, { kind: 'level' }>['level']): ThinkingLevel => ({ kind: 'level', level });
const budget = (tokens: number): ThinkingLevel => ({ kind: 'budget', tokens });

const COLUMNS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', 'auto', '8000'] as const;
const levelOf = (c: (typeof COLUMNS)[number]): ThinkingLevel => (c === '8000' ? budget(8000) : lv(c));

const on = { type: 'enabled' };
const off = { type: 'disabled' };
const ab = (budget_tokens: number) => ({ thinking: { type: 'enabled', budget_tokens } });
const aa = (effort?: string) => (effort === undefined ? { thinking: { type: 'adaptive' } } : { thinking: { type: 'adaptive' }, output_config: { effort } });
const qw = (thinking_budget: number) => ({ enable_thinking: true, thinking_budget });
const ds = (reasoning_effort: string) => ({ thinking: on, reasoning_effort });
const mm = (type: string) => ({ thinking: { type }, reasoning_split: true });

/** family -> one expected result per column (none, minimal, low, medium, high, xhigh, max, auto, 8000). */
const TABLE: Record<ThinkingFamily, unknown[]> = {
  openai: [{ effort: 'none' }, { effort: 'minimal' }, { effort: 'low' }, { effort: 'medium' }, { effort: 'high' }, { effort: 'xhigh' }, { effort: 'max' }, {}, { effort: 'medium' }],
  'anthropic-budget': [{ thinking: off }, ab(1024), ab(1024), ab(8192), ab(24576), ab(32000), ab(32000), ab(8192), ab(8000)],
  'anthropic-adaptive': [{ thinking: off }, aa('low'), aa('low'), aa('medium'), aa('high'), aa('xhigh'), aa('max'), aa(), aa('medium')],
  'gemini-budget': [{ thinkingBudget: 0 }, { thinkingBudget: 512 }, { thinkingBudget: 1024 }, { thinkingBudget: 8192 }, { thinkingBudget: 24576 }, { thinkingBudget: 24576 }, { thinkingBudget: 24576 }, { thinkingBudget: -1 }, { thinkingBudget: 8000 }],
  'gemini-level': [{ thinkingLevel: 'minimal' }, { thinkingLevel: 'minimal' }, { thinkingLevel: 'low' }, { thinkingLevel: 'medium' }, { thinkingLevel: 'high' }, { thinkingLevel: 'high' }, { thinkingLevel: 'high' }, {}, { thinkingLevel: 'medium' }],
  zai: [{ thinking: off }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }],
  qwen: [{ enable_thinking: false }, qw(512), qw(1024), qw(8192), qw(24576), qw(32768), qw(38912), { enable_thinking: true }, qw(8000)],
  deepseek: [{ thinking: off }, ds('low'), ds('low'), ds('high'), ds('high'), ds('high'), ds('max'), { thinking: on }, ds('high')],
  kimi: [{ thinking: off }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }, { thinking: on }],
  minimax: [mm('disabled'), mm('adaptive'), mm('adaptive'), mm('adaptive'), mm('adaptive'), mm('adaptive'), mm('adaptive'), mm('adaptive'), mm('adaptive')],
};

t.test('every family x every level: the exact parameters (reasoning model, no max_tokens, no max_output_tokens)', async (t) => {
  t.strictSame(Object.keys(TABLE).sort(), [...THINKING_FAMILIES].sort(), 'the table covers the ten families of DESIGN.md');
  for (const family of THINKING_FAMILIES) {
    COLUMNS.forEach((c, i) => {
      t.strictSame(applyThinking(family, levelOf(c), REASONING), TABLE[family][i], `${family} (${c})`);
      t.strictSame(applyThinking(family, levelOf(c), null), TABLE[family][i], `${family} (${c}), unlisted model: the caller's family is trusted`);
    });
  }
});

// The table's promise reaches the upstream: the Anthropic codec, on a request with no max_tokens to a model with no
// max_output_tokens (configured or catalogued: claude-sonnet-4-5 before the catalog knew it), sends the table's budget
// and max_tokens 4096 on top of it (before, its own default max_tokens 4096 squeezed every budget to 4095).
t.test('anthropic-budget through the Anthropic codec: no max_tokens anywhere, the table budget plus 4096 for the answer', async (t) => {
  const provider = parseConfig({ providers: { a: { group: 'paid', format: 'anthropic', catalog: '', base_url: 'https://api.anthropic.com', auth: { type: 'api_key', key: 'k' }, models: {} } } }, {}).providers.a!;
  const send = (level: ThinkingLevel, model: ModelConfig, maxTokens?: number) => {
    const req: CanonicalRequest = { model: 'm', system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: false, thinking: level, ...(maxTokens === undefined ? {} : { maxTokens }) };
    const body = wireJson(anthropicCodec.buildRequest(req, { providerId: 'a', provider, modelId: 'claude-sonnet-4-5', model }).body);
    return { max_tokens: body.max_tokens, thinking: body.thinking };
  };
  const budget = { ...REASONING, thinking: 'anthropic-budget' } as ModelConfig;
  COLUMNS.forEach((c, i) => {
    const want = TABLE['anthropic-budget'][i] as { thinking: { type: string; budget_tokens?: number } };
    const max = want.thinking.budget_tokens === undefined ? 4096 : want.thinking.budget_tokens + 4096;
    t.strictSame(send(levelOf(c), budget), { max_tokens: max, thinking: want.thinking }, `(${c}): max_tokens ${max}`);
  });
  t.strictSame(send(lv('high'), budget, 2000), { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1999 } }, "the client's max_tokens stays the ceiling");
  t.strictSame(send(lv('max'), { ...budget, max_output_tokens: 16000 }), { max_tokens: 16000, thinking: { type: 'enabled', budget_tokens: 15999 } }, "the model's output limit caps both");
  t.strictSame(send(lv('medium'), { ...budget, max_output_tokens: 64000 }), { max_tokens: 64000, thinking: { type: 'enabled', budget_tokens: 8192 } }, 'a known limit stays the default');
});

t.test('a model without the reasoning capability gets no thinking fields, whatever the level', async (t) => {
  for (const family of THINKING_FAMILIES) {
    for (const c of COLUMNS) t.strictSame(applyThinking(family, levelOf(c), PLAIN, 4096), {}, `${family} (${c})`);
  }
  t.strictSame(applyThinking('openai', lv('high'), { kind: 'llm', capabilities: [] }), {}, 'no capabilities at all');
});

t.test('anthropic-budget: at least 1024 and below max_tokens', async (t) => {
  t.strictSame(applyThinking('anthropic-budget', lv('high'), REASONING, 4096), ab(4095), 'high is clamped below the request max_tokens');
  t.strictSame(applyThinking('anthropic-budget', lv('max'), REASONING, 4096), ab(4095));
  t.strictSame(applyThinking('anthropic-budget', lv('low'), REASONING, 4096), ab(1024));
  t.strictSame(applyThinking('anthropic-budget', budget(500), REASONING), ab(1024), 'a budget under the minimum is raised');
  t.strictSame(applyThinking('anthropic-budget', budget(100000), REASONING), ab(32000), 'a budget over the family maximum is lowered');
  t.strictSame(applyThinking('anthropic-budget', lv('max'), withMax(16000)), ab(15999), "the model's max_output_tokens caps it");
  t.strictSame(applyThinking('anthropic-budget', lv('medium'), withMax(16000), 2000), ab(1999), 'the smaller of the two wins');
  t.strictSame(applyThinking('anthropic-budget', lv('minimal'), REASONING, 1025), ab(1024), '1024 < 1025 fits');
  t.strictSame(applyThinking('anthropic-budget', lv('high'), REASONING, 1024), {}, 'max_tokens 1024 leaves no room: no thinking');
  t.strictSame(applyThinking('anthropic-budget', lv('none'), REASONING, 100), { thinking: off }, 'none needs no room');
  t.strictSame(applyThinking('anthropic-budget', lv('high'), REASONING, 0), ab(24576), 'a nonsense max_tokens is ignored');
});

t.test('gemini-budget: 512..24576, within maxOutputTokens; 0 and -1 are not clamped', async (t) => {
  t.strictSame(applyThinking('gemini-budget', lv('high'), REASONING, 2000), { thinkingBudget: 2000 });
  t.strictSame(applyThinking('gemini-budget', lv('low'), REASONING, 300), { thinkingBudget: 512 }, 'the family minimum wins over a tiny max_tokens');
  t.strictSame(applyThinking('gemini-budget', lv('max'), withMax(8192)), { thinkingBudget: 8192 });
  t.strictSame(applyThinking('gemini-budget', budget(100), REASONING), { thinkingBudget: 512 });
  t.strictSame(applyThinking('gemini-budget', budget(99999), REASONING), { thinkingBudget: 24576 });
  t.strictSame(applyThinking('gemini-budget', lv('none'), withMax(8192), 100), { thinkingBudget: 0 });
  t.strictSame(applyThinking('gemini-budget', lv('auto'), withMax(8192), 100), { thinkingBudget: -1 });
});

t.test("qwen: 1..38912, the model's max_output_tokens caps it, the request's max_tokens does not", async (t) => {
  t.strictSame(applyThinking('qwen', lv('high'), REASONING, 100), qw(24576));
  t.strictSame(applyThinking('qwen', lv('max'), withMax(16384)), qw(16384));
  t.strictSame(applyThinking('qwen', lv('xhigh'), withMax(16384)), qw(16384));
  t.strictSame(applyThinking('qwen', budget(50000), REASONING), qw(38912));
  t.strictSame(applyThinking('qwen', budget(1), REASONING), qw(1));
});

t.test('budgets for effort families: <4096 low, <16384 medium, else high', async (t) => {
  t.strictSame([1, 4095, 4096, 16383, 16384, 10 ** 6].map(budgetToLevel), ['low', 'low', 'medium', 'medium', 'high', 'high']);
  t.strictSame(applyThinking('openai', budget(1), REASONING), { effort: 'low' });
  t.strictSame(applyThinking('openai', budget(20000), REASONING), { effort: 'high' });
  t.strictSame(applyThinking('deepseek', budget(1000), REASONING), ds('low'));
  t.strictSame(applyThinking('anthropic-adaptive', budget(64000), REASONING), aa('high'));
  t.strictSame(applyThinking('gemini-level', budget(1000), REASONING), { thinkingLevel: 'low' });
});

t.test('parseThinkingSuffix', async (t) => {
  const cases: [string, { model: string; thinking?: ThinkingLevel }][] = [
    ['openai/o3(high)', { model: 'openai/o3', thinking: lv('high') }],
    ['anthropic/claude(8000)', { model: 'anthropic/claude', thinking: budget(8000) }],
    ['x/model(with)(low)', { model: 'x/model(with)', thinking: lv('low') }],
    ['m(unknown)', { model: 'm(unknown)' }],
    ['m()', { model: 'm()' }],
    ['m', { model: 'm' }],
    ['', { model: '' }],
    ['m(none)', { model: 'm', thinking: lv('none') }],
    ['m(minimal)', { model: 'm', thinking: lv('minimal') }],
    ['m(medium)', { model: 'm', thinking: lv('medium') }],
    ['m(xhigh)', { model: 'm', thinking: lv('xhigh') }],
    ['m(max)', { model: 'm', thinking: lv('max') }],
    ['m(auto)', { model: 'm', thinking: lv('auto') }],
    ['m(HIGH)', { model: 'm', thinking: lv('high') }],
    ['m(1)', { model: 'm', thinking: budget(1) }],
    ['m(999999999)', { model: 'm', thinking: budget(999999999) }],
    ['m(1000000000)', { model: 'm(1000000000)' }],
    ['m(0)', { model: 'm(0)' }],
    ['m(-5)', { model: 'm(-5)' }],
    ['m(08000)', { model: 'm(08000)' }],
    ['m(1.5)', { model: 'm(1.5)' }],
    ['m( high)', { model: 'm( high)' }],
    ['m(high) ', { model: 'm(high) ' }],
    ['m(high)x', { model: 'm(high)x' }],
    ['m(high', { model: 'm(high' }],
    ['(high)', { model: '(high)' }],
    ['m((high))', { model: 'm((high))' }],
    ['m(low)(high)', { model: 'm(low)', thinking: lv('high') }],
    ['vendor/Qwen3-235B-A22B(thinking)(max)', { model: 'vendor/Qwen3-235B-A22B(thinking)', thinking: lv('max') }],
  ];
  for (const [input, want] of cases) t.strictSame(parseThinkingSuffix(input), want, JSON.stringify(input));
  t.notOk('thinking' in parseThinkingSuffix('m(unknown)'), 'no thinking key at all when there is no level');
});

t.test('parseThinkingLevel and isThinkingFamily', async (t) => {
  t.strictSame(parseThinkingLevel('Low'), lv('low'));
  t.equal(parseThinkingLevel('ultra'), undefined);
  t.equal(parseThinkingLevel(''), undefined);
  t.ok(isThinkingFamily('anthropic-adaptive'));
  t.notOk(isThinkingFamily('anthropic'));
  t.notOk(isThinkingFamily(undefined));
});
