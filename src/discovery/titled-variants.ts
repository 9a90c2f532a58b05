/**
 * Names for the variants of a union in the contract's schemas. Swagger UI shows a union's
 * variants by their `title` and types a `$ref` it has not resolved as "any", so the contract's
 * ExecRequest (a oneOf of three bare `$ref`s) read as `(any | any | any)`. Each variant that is
 * a bare reference gets the referenced schema's name as its `title` and that schema's `type`:
 * annotations beside the `$ref` (JSON Schema 2020-12 allows them), which change nothing a client
 * may send. The contract's own document is not touched: a copy is returned.
 */
import type { JsonObject } from "../contract/contract-document.js";

const SCHEMA_REF = /^#\/components\/schemas\/([^/]+)$/;

export function titledVariants(schemas: Record<string, JsonObject>): Record<string, JsonObject> {
  const titled: Record<string, JsonObject> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    let copy = schema;
    for (const keyword of ["oneOf", "anyOf"] as const) {
      const variants = copy[keyword];
      if (!Array.isArray(variants)) continue;
      copy = { ...copy, [keyword]: variants.map((variant) => titledVariant(variant, schemas)) };
    }
    titled[name] = copy;
  }
  return titled;
}

function titledVariant(variant: unknown, schemas: Record<string, JsonObject>): unknown {
  if (variant === null || typeof variant !== "object" || Array.isArray(variant)) return variant;
  const { $ref, ...rest } = variant as JsonObject;
  const name = typeof $ref === "string" ? SCHEMA_REF.exec($ref)?.[1] : undefined;
  // Only a bare reference to a schema of this document: anything else is left as it is.
  if (name === undefined || Object.keys(rest).length > 0 || !Object.hasOwn(schemas, name)) return variant;
  const type = schemas[name]!.type;
  return { $ref, title: name, ...(type === undefined ? {} : { type }) };
}
