// Route schemas compiled by the first request that needs them instead of at start. Fastify compiles every route's
// schema while the app boots: creating its Ajv instance and compiling the three settings bodies took about 120 ms of
// CPU and 5 MiB of each start (docs/benchmarks.md, "Where the start goes"), for routes an admin calls now and then.
//
// A route given `validatorCompiler: compileOnFirstUse` is validated by the compiler fastify would have used itself
// (@fastify/ajv-compiler as fastify resolves it, with fastify's default options: no `ajv` server option and no shared
// schemas here), built on the route's first request; fastify's validation around it (the 400, its message, coercion,
// defaults, removed additional properties) is unchanged.

import { createRequire } from 'node:module';
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';

type Validate = ((data: unknown, context?: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null; schemaEnv?: unknown };
type Compile = (route: Parameters<FastifySchemaCompiler<unknown>>[0]) => Validate;
type Builder = () => (externalSchemas: object, options: { customOptions: object; plugins: unknown[] }) => Compile;

let compiler: Compile | null = null;

/** Fastify's default validator compiler, made once. */
function fastifyCompiler(): Compile {
  if (compiler === null) {
    const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
    // what fastify.js passes by default (options.ajv) and schema-controller.js builds from it
    compiler = (fromFastify('@fastify/ajv-compiler') as Builder)()({}, { customOptions: {}, plugins: [] });
  }
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
