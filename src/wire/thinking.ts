// Thinking levels (spec item 8): the `<model>(<level>)` suffix, and what a level means for each of the ten thinking
// families of DESIGN.md. Pure: no I/O. The full family x level table is in docs/thinking.md; keep the two in step.
//
// A level is a name (none, minimal, low, medium, high, xhigh, max, auto) or a token budget. `applyThinking` turns it
// into the target family's own request parameters; the codec of the target's wire format places them (the `openai`
// family returns an abstract `{ effort }` that Chat Completions sends as `reasoning_effort` and Responses as
// `reasoning.effort`; the Gemini families return the fields of `generationConfig.thinkingConfig`).

import type { ModelConfig } from '../config/types.js';
import type { ThinkingLevel } from './canonical.js';

export const THINKING_FAMILIES = [
  'openai', 'anthropic-budget', 'anthropic-adaptive', 'gemini-budget', 'gemini-level',
  'zai', 'qwen', 'deepseek', 'kimi', 'minimax',
] as const;
export type ThinkingFamily = (typeof THINKING_FAMILIES)[number];

export function isThinkingFamily(v: unknown): v is ThinkingFamily {
  return typeof v === 'string' && (THINKING_FAMILIES as readonly string[]).includes(v);
}

export const LEVEL_NAMES = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', 'auto'] as const;
export type LevelName = (typeof LEVEL_NAMES)[number];

function isLevelName(v: string): v is LevelName {
  return (LEVEL_NAMES as readonly string[]).includes(v);
}

// ---------------------------------------------------------------------------------------------------------------
// The suffix
// ---------------------------------------------------------------------------------------------------------------

/**
 * A level as written in a suffix or a client's reasoning parameter: a level name (case-insensitive) or a positive
 * decimal integer (a token budget). Anything else is not a level.
 */
export function parseThinkingLevel(text: string): ThinkingLevel | undefined {
  const s = text.toLowerCase();
  if (isLevelName(s)) return { kind: 'level', level: s };
  if (/^[1-9][0-9]{0,8}$/.test(s)) return { kind: 'budget', tokens: Number(s) };
  return undefined;
}

/**
 * `<model>(<level>)` -> the model without the suffix, and the level. Only a trailing `(...)` counts, and only when
 * what is inside is a level; otherwise the name is returned unchanged (no error): `m(unknown)`, `m()`, `m(0)` and
 * `m(high) ` (trailing space) are model names of their own, as is `(high)` (nothing before the suffix).
 * `x/model(with)(low)` is `x/model(with)` at level low.
 */
export function parseThinkingSuffix(model: string): { model: string; thinking?: ThinkingLevel } {
  const m = /^(.+)\(([^()]*)\)$/s.exec(model);
  if (!m) return { model };
  const thinking = parseThinkingLevel(m[2]!);
  return thinking === undefined ? { model } : { model: m[1]!, thinking };
}

// ---------------------------------------------------------------------------------------------------------------
// Levels -> budgets and efforts
// ---------------------------------------------------------------------------------------------------------------

/** The token budget of each named level, for the families that take a budget (before clamping). */
export const LEVEL_BUDGET = { minimal: 512, low: 1024, medium: 8192, high: 24576, xhigh: 32768 } as const;

/** The budget range of each budget family when the model's config says nothing tighter (docs/thinking.md). */
export const FAMILY_BUDGET_RANGE = {
  /** Extended thinking: at least 1024, and below max_tokens. */
  'anthropic-budget': { min: 1024, max: 32000 },
  /** Gemini 2.5: 512..24576 is accepted by Pro (128..32768), Flash (0..24576) and Flash-Lite (512..24576). */
  'gemini-budget': { min: 512, max: 24576 },
  /** Qwen3 hybrid models: thinking_budget up to their maximum chain-of-thought length (38912 for qwen-plus). */
  qwen: { min: 1, max: 38912 },
} as const;

/** A budget given as a number, for families that take a named effort: <4096 low, <16384 medium, else high. */
export function budgetToLevel(tokens: number): 'low' | 'medium' | 'high' {
  if (tokens < 4096) return 'low';
  if (tokens < 16384) return 'medium';
  return 'high';
}

/** The named level, with a budget turned into one. */
function named(level: ThinkingLevel): LevelName {
  return level.kind === 'level' ? level.level : budgetToLevel(level.tokens);
}

// ---------------------------------------------------------------------------------------------------------------
// Per-family parameters
// ---------------------------------------------------------------------------------------------------------------

export type OpenAIEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';
export type AnthropicEffort = 'low' | 'medium' | 'high' | 'xhigh' | 'max';
export type GeminiThinkingLevel = 'minimal' | 'low' | 'medium' | 'high';
type OnOff = { readonly type: 'enabled' | 'disabled' };

/** What each family sends. An empty object: send nothing (the provider's default). */
export interface ThinkingParamsByFamily {
  /** Abstract: Chat Completions `reasoning_effort`, Responses `reasoning.effort`. */
  openai: { readonly effort?: OpenAIEffort };
  'anthropic-budget': { readonly thinking?: { readonly type: 'enabled'; readonly budget_tokens: number } | { readonly type: 'disabled' } };
  'anthropic-adaptive': {
    readonly thinking?: { readonly type: 'adaptive' } | { readonly type: 'disabled' };
    readonly output_config?: { readonly effort: AnthropicEffort };
  };
  /** Fields of Gemini `generationConfig.thinkingConfig`. */
  'gemini-budget': { readonly thinkingBudget?: number };
  'gemini-level': { readonly thinkingLevel?: GeminiThinkingLevel };
  zai: { readonly thinking?: OnOff };
  qwen: { readonly enable_thinking?: boolean; readonly thinking_budget?: number };
  deepseek: { readonly thinking?: OnOff; readonly reasoning_effort?: 'low' | 'high' | 'max' };
  kimi: { readonly thinking?: OnOff };
  minimax: { readonly thinking?: { readonly type: 'adaptive' | 'disabled' }; readonly reasoning_split?: boolean };
}
export type ThinkingParams = ThinkingParamsByFamily[ThinkingFamily];

/** Upper and lower bounds a budget is clamped into. */
interface Limits {
  /** The model's max_output_tokens, when configured. */
  readonly modelMax: number | undefined;
  /** The max_tokens the request will be sent with, when known. */
  readonly requestMax: number | undefined;
}

const positive = (n: number | undefined): number | undefined => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : undefined);
const minOf = (...ns: (number | undefined)[]): number => Math.min(...ns.filter((n): n is number => n !== undefined));

/** The level's budget (or the number given), clamped into [min, max]; the lower bound wins when they cross. */
function clampBudget(level: ThinkingLevel, min: number, max: number): number {
  const want = level.kind === 'budget' ? level.tokens : level.level === 'max' ? max : LEVEL_BUDGET[level.level as keyof typeof LEVEL_BUDGET];
  return Math.max(min, Math.min(want, max));
}

const ON: OnOff = { type: 'enabled' };
const OFF: OnOff = { type: 'disabled' };

type Apply<F extends ThinkingFamily> = (level: ThinkingLevel, lim: Limits) => ThinkingParamsByFamily[F];

const APPLY: { readonly [F in ThinkingFamily]: Apply<F> } = {
  openai(level) {
    const n = named(level);
    return n === 'auto' ? {} : { effort: n };
  },

  'anthropic-budget'(level, lim) {
    if (level.kind === 'level' && level.level === 'none') return { thinking: { type: 'disabled' } };
    const r = FAMILY_BUDGET_RANGE['anthropic-budget'];
    // budget_tokens must stay below max_tokens (the request's, else the model's most).
    const below = (n: number | undefined) => (n === undefined ? undefined : n - 1);
    const max = minOf(r.max, below(lim.modelMax), below(lim.requestMax));
    if (max < r.min) return {}; // max_tokens leaves no room for the 1024 minimum: no thinking
    // auto: Anthropic has no dynamic budget; the medium budget.
    const l: ThinkingLevel = level.kind === 'level' && level.level === 'auto' ? { kind: 'level', level: 'medium' } : level;
    return { thinking: { type: 'enabled', budget_tokens: clampBudget(l, r.min, max) } };
  },

  'anthropic-adaptive'(level) {
    const n = named(level);
    if (n === 'none') return { thinking: { type: 'disabled' } };
    if (n === 'auto') return { thinking: { type: 'adaptive' } };
    const effort: AnthropicEffort = n === 'minimal' ? 'low' : n;
    return { thinking: { type: 'adaptive' }, output_config: { effort } };
  },

  'gemini-budget'(level, lim) {
    if (level.kind === 'level' && level.level === 'none') return { thinkingBudget: 0 };
    if (level.kind === 'level' && level.level === 'auto') return { thinkingBudget: -1 };
    const r = FAMILY_BUDGET_RANGE['gemini-budget'];
    // Thinking tokens count toward maxOutputTokens.
    return { thinkingBudget: clampBudget(level, r.min, minOf(r.max, lim.modelMax, lim.requestMax)) };
  },

  'gemini-level'(level) {
    const n = named(level);
    switch (n) {
      case 'auto':
        return {};
      case 'none': // Gemini 3 cannot turn thinking off; minimal is the least
      case 'minimal':
        return { thinkingLevel: 'minimal' };
      case 'low':
      case 'medium':
        return { thinkingLevel: n };
      default:
        return { thinkingLevel: 'high' };
    }
  },

  zai(level) {
    return { thinking: named(level) === 'none' ? OFF : ON };
  },

  qwen(level, lim) {
    const n = named(level);
    if (n === 'none') return { enable_thinking: false };
    if (n === 'auto') return { enable_thinking: true };
    const r = FAMILY_BUDGET_RANGE.qwen;
    // DashScope's max_tokens limits the answer, not the thinking: only the model's configured maximum applies.
    return { enable_thinking: true, thinking_budget: clampBudget(level, r.min, minOf(r.max, lim.modelMax)) };
  },

  deepseek(level) {
    const n = named(level);
    if (n === 'none') return { thinking: OFF };
    if (n === 'auto') return { thinking: ON };
    return { thinking: ON, reasoning_effort: n === 'minimal' || n === 'low' ? 'low' : n === 'max' ? 'max' : 'high' };
  },

  kimi(level) {
    return { thinking: named(level) === 'none' ? OFF : ON };
  },

  minimax(level) {
    // reasoning_split always: thinking comes back in reasoning_details, never as <think> tags inside the content.
    return { thinking: { type: named(level) === 'none' ? 'disabled' : 'adaptive' }, reasoning_split: true };
  },
};

/**
 * The target's own parameters for a thinking level. A model whose config does not list the `reasoning` capability
 * gets none (`{}`), whatever the level; `model: null` (an unlisted model) is trusted to reason, since the caller
 * chose the family. `maxTokens` is the max_tokens the request will carry, when it carries one: Anthropic budgets
 * stay below it and Gemini budgets within it. Every budget is clamped into the family's range (FAMILY_BUDGET_RANGE),
 * capped by the model's `max_output_tokens` when configured.
 */
export function applyThinking<F extends ThinkingFamily>(family: F, level: ThinkingLevel, model: ModelConfig | null, maxTokens?: number): ThinkingParamsByFamily[F] {
  if (model !== null && !model.capabilities.includes('reasoning')) return {} as ThinkingParamsByFamily[F];
  const apply: Apply<F> = APPLY[family];
  return apply(level, { modelMax: positive(model?.max_output_tokens), requestMax: positive(maxTokens) });
}

/**
 * Whether the thinking level a request set was lost on the way to a target: the parameters built for it (`sent`)
 * are empty, and that is not what the level means. Only `auto` to a model that reasons (`reasons`, as the codec
 * decides it) means "send nothing": the provider's default effort. A lost level is listed as dropped under the
 * client's name (reasoning_effort, thinking, reasoning, generationConfig.thinkingConfig), never dropped silently.
 */
export function thinkingLost(level: ThinkingLevel | undefined, sent: object, target: { readonly reasons: boolean }): boolean {
  if (level === undefined || Object.keys(sent).length > 0) return false;
  return !(target.reasons && level.kind === 'level' && level.level === 'auto');
}
