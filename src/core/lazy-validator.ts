// Fastify's schema compilers loaded and built when something first needs them instead of at start.
//
// - `lazyCompilersFactory`, the app's `schemaController.compilersFactory`: fastify's own defaults
//   (@fastify/ajv-compiler and @fastify/fast-json-stringify-compiler, resolved as fastify resolves them), required by
//   the first route or request that needs one. Without it, fastify requires both when the app is created, and with
//   them Ajv: about 75 ms of every start (docs/benchmarks.md, "Where the start goes"), for compilers no route uses at
//   start. (Fastify then treats the validator compiler as custom, which changes one thing: a `headers` schema of a
//   route without its own compiler is not lower-cased for it: name the headers in lower case.)
// - `compileOnFirstUse`, a route's `validatorCompiler`: the route's schema compiled by its first request. Fastify
//   compiles every route's schema while the app boots: creating its Ajv instance and compiling the three settings
//   bodies took about 120 ms of CPU and 5 MiB of each start, for routes an admin calls now and then. The compiler is
//   the one fastify would have used (its default options: no `ajv` server option and no shared schemas here);
//   fastify's validation around it (the 400, its message, coercion, defaults, removed additional properties) is
//   unchanged.

import { createRequire } from 'node:module';
import type { FastifySchemaCompiler, FastifySchemaValidationError, FastifyServerOptions } from 'fastify';

type Validate = ((data: unknown, context?: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null; schemaEnv?: unknown };
type Compile = (route: Parameters<FastifySchemaCompiler<unknown>>[0]) => Validate;
/** Fastify's `compilersFactory` option; a factory: (the shared schemas, the server's compiler options) -> compiler. */
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type Factory = (externalSchemas: unknown, options: unknown) => unknown;

const fromFastify = (name: string): unknown => createRequire(createRequire(import.meta.url).resolve('fastify'))(name);
const selectors: { validator?: Factory; serializer?: Factory } = {};

const buildValidator: Factory = (externalSchemas, ajvOptions) =>
  (selectors.validator ??= (fromFastify('@fastify/ajv-compiler') as () => Factory)())(externalSchemas, ajvOptions);
const buildSerializer: Factory = (externalSchemas, serializerOptions) =>
  (selectors.serializer ??= (fromFastify('@fastify/fast-json-stringify-compiler') as () => Factory)())(externalSchemas, serializerOptions);

/** Fastify's default compilers factory (schema-controller.js), each part required on its first use. */
export const lazyCompilersFactory = {
  buildValidator: buildValidator as CompilersFactory['buildValidator'],
  buildSerializer: buildSerializer as CompilersFactory['buildSerializer'],
} satisfies CompilersFactory;

let compiler: Compile | null = null;

/** Fastify's default validator compiler, made once: what fastify.js passes by default (options.ajv). */
function fastifyCompiler(): Compile {
  compiler ??= buildValidator({}, { customOptions: {}, plugins: [] }) as Compile;
  return compiler;
}

export const compileOnFirstUse: FastifySchemaCompiler<unknown> = (route) => {
  let validate: Validate | null = null;
  const lazy: Validate = (data, context) => {
    validate ??= fastifyCompiler()(route);
    const ok = validate(data, context);
    lazy.errors = validate.errors;
    return ok;
  };
  // What fastify looks for on an Ajv function: it then passes the request as the parent of the value (so that a
  // coerced root value replaces it), as it would to the compiled function itself.
  lazy.schemaEnv = true;
  return lazy;
};
