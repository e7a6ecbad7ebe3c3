// What a target could not carry, as a codec's build reports it (issue 14, item 2): a field dropped (listed in the
// `x-tollgate-dropped-params` header and on the request span, never silently) or refused (a 400 naming the client's
// parameter, when dropping it would change what the answer means: n > 1 to a format with one answer, a forced
// built-in tool the target does not have). Also the small helpers every codec shares for the fields that travel
// beside the conversation: cache_control markers and the unknown top-level keys of a client body; and for the parts
// no target but one can read: another family's file ids. Pure.

import { TollgateError } from '../core/errors.js';
import type { CacheControl, CanonicalField, CanonicalRequest, MediaSource, Origin, Part } from './canonical.js';

/** A field the target cannot carry without changing the answer's meaning. */
export interface Refusal {
  readonly field: CanonicalField;
  /** Completes "'<client parameter>' ...", e.g. "greater than 1 is not supported by an Anthropic provider". */
  readonly reason: string;
}

/** Collects, while one upstream request is built, what it dropped and what it refuses. */
export class BuildNotes {
  readonly #dropped = new Set<CanonicalField>();
  #refusal: Refusal | undefined;

  /** `field` was set on the request and is not sent. */
  drop(field: CanonicalField): void {
    this.#dropped.add(field);
  }

  /** The first refusal wins; the request is answered with a 400 and never sent. */
  refuse(field: CanonicalField, reason: string): void {
    this.#refusal ??= { field, reason };
  }

  get dropped(): readonly CanonicalField[] {
    return [...this.#dropped];
  }

  get refusal(): Refusal | undefined {
    return this.#refusal;
  }
}

/** The notes every build takes the same way: n > 1 goes only to a format that returns several answers, and never as a stream. */
export function noteChoices(req: CanonicalRequest, notes: BuildNotes, format: string, severalAnswers: boolean): void {
  if (req.n === undefined || req.n <= 1) return;
  if (!severalAnswers) notes.refuse('n', `greater than 1 is not supported by ${format} provider (it returns one answer)`);
  else if (req.stream) notes.refuse('n', 'greater than 1 is not supported on a streamed request that is translated (only whole answers carry several choices)');
}

/**
 * More stop sequences than the target takes (`limit`, the most its API documents) is refused: dropping some would
 * change where the answer ends, and sending them all draws the provider's 400.
 */
export function noteStopLimit(req: CanonicalRequest, notes: BuildNotes, target: { readonly limit: number; readonly format: string }): void {
  const n = req.stop?.length ?? 0;
  if (n > target.limit) notes.refuse('stop', `has ${n} stop sequences; ${target.format} provider takes at most ${target.limit}`);
}

/** Whether any part of the request (system, messages, tool results) or any tool carries a cache_control marker. */
export function hasCacheControl(req: CanonicalRequest): boolean {
  return anyPart(req, (p) => 'cacheControl' in p && p.cacheControl !== undefined) || (req.tools ?? []).some((t) => t.cacheControl !== undefined);
}

/**
 * Whether `test` holds for any part of the request: the system parts, the messages' parts and the content of their
 * tool results (walked in place, nothing copied: every translated request asks this several times).
 */
export function anyPart(req: CanonicalRequest, test: (p: Part) => boolean): boolean {
  const inParts = (parts: readonly Part[]): boolean => parts.some((p) => test(p) || (p.type === 'tool_result' && inParts(p.content)));
  return inParts(req.system) || req.messages.some((m) => inParts(m.content));
}

/** Whose files API holds a file: OpenAI Chat and Responses read the same one. */
const FILES_API: Readonly<Record<Origin, string>> = { openai: 'openai', 'openai-responses': 'openai', anthropic: 'anthropic', gemini: 'gemini' };

const foreignFile = (s: MediaSource, target: Origin): boolean => s.kind === 'file_id' && s.origin !== undefined && FILES_API[s.origin] !== FILES_API[target];

/** The media type a source states (a data: URL's too), lower case; undefined when it states none (a plain URL, a bare file id). */
function statedType(s: MediaSource): string | undefined {
  if (s.kind === 'url') return /^data:([^;,]+)[;,]/.exec(s.url)?.[1]?.toLowerCase();
  return s.mediaType?.toLowerCase();
}

const pdfTextOrImage = (type: string): boolean => type === 'application/pdf' || type.startsWith('text/') || type.startsWith('image/');

/**
 * The file types (of a `file` part) each target format takes. Anthropic documents are PDFs (base64) or plain text (a
 * text source); OpenAI Chat file parts are PDFs only (the Chat build sends a text file as text); both get an image
 * given as a file as an image. Responses' input_file takes documents, text, code and spreadsheets, not video or
 * audio. Gemini takes any.
 */
const TAKES_FILE: Readonly<Record<Origin, (type: string) => boolean>> = {
  anthropic: pdfTextOrImage,
  openai: pdfTextOrImage,
  'openai-responses': (type) => !type.startsWith('video/') && !type.startsWith('audio/'),
  gemini: () => true,
};

/** A file part whose stated type the target format does not take (a Gemini client's video to Anthropic). */
function unreadableFile(p: Part, target: Origin): boolean {
  if (p.type !== 'file') return false;
  const type = statedType(p.source);
  return type !== undefined && !TAKES_FILE[target](type);
}

/**
 * The request without the media parts the target cannot read: those that name another family's file (an OpenAI
 * file id, a Gemini Files API or gs:// URI, an Anthropic file id), and files of a type the target format does not
 * take (TAKES_FILE: a video or an audio file to Anthropic, OpenAI Chat or Responses). Sending either would draw a
 * 400. Each is dropped and listed by its kind (image, file, audio). A file id without an origin, and a file whose
 * type is not stated (a plain URL), are left to the build.
 */
export function withoutForeignFiles(req: CanonicalRequest, target: Origin, notes: BuildNotes): CanonicalRequest {
  const foreign = (p: Part): p is Extract<Part, { type: 'image' | 'file' | 'audio' }> =>
    (p.type === 'image' || p.type === 'file' || p.type === 'audio') && (foreignFile(p.source, target) || unreadableFile(p, target));
  if (!anyPart(req, foreign)) return req;
  const keep = (parts: readonly Part[]): Part[] =>
    parts.flatMap((p): Part[] => {
      if (p.type === 'tool_result') return [{ ...p, content: keep(p.content) }];
      if (!foreign(p)) return [p];
      notes.drop(p.type);
      return [];
    });
  return { ...req, system: keep(req.system), messages: req.messages.map((m) => ({ ...m, content: keep(m.content) })) };
}

/** A part without its cache_control marker (the part itself when it has none). */
export function withoutCacheControl<P extends Part>(p: P): P {
  if (!('cacheControl' in p) || p.cacheControl === undefined) return p;
  const { cacheControl: _dropped, ...rest } = p;
  return rest as P;
}

/**
 * A wire `cache_control` value -> the canonical marker; undefined when absent (null or undefined). Anything but
 * `{type: 'ephemeral'[, ttl: '5m' | '1h']}` is a 400 naming `param`, as Anthropic answers it.
 */
export function parseCacheControl(v: unknown, param: string): CacheControl | undefined {
  if (v === undefined || v === null) return undefined;
  const o = typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  if (o === null || o.type !== 'ephemeral' || (o.ttl !== undefined && o.ttl !== '5m' && o.ttl !== '1h')) {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `'${param}' must be {type: 'ephemeral'} with an optional ttl of '5m' or '1h'`, { param });
  }
  return o.ttl === undefined ? { type: 'ephemeral' } : { type: 'ephemeral', ttl: o.ttl };
}

/** A canonical marker as the wire `cache_control` object. */
export const cacheControlJson = (c: CacheControl): Record<string, string> => (c.ttl === undefined ? { type: c.type } : { type: c.type, ttl: c.ttl });

/**
 * The top-level keys of a client body that its codec does not read (null values are "not given"), sorted: they are
 * listed as dropped. `known` holds every key the codec reads or deliberately ignores.
 */
export function unknownKeys(body: Readonly<Record<string, unknown>>, known: ReadonlySet<string>): string[] {
  return Object.keys(body).filter((k) => !known.has(k) && body[k] !== null && body[k] !== undefined).sort();
}
