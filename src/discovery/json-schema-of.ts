/**
 * A declared zod schema as the JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) of an
 * operation's parameters, body or answer. Arguments are documented as a client sends them
 * (`input`), answers as the gateway writes them (`output`); what JSON Schema cannot say
 * (a transform, a refinement) is documented as "anything" rather than failing the document.
 */
import { z } from "zod";
import type { $ZodType } from "zod/v4/core";
import type { JsonObject } from "../contract/contract-document.js";

export function jsonSchemaOf(schema: $ZodType, io: "input" | "output"): JsonObject {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  }) as JsonObject;
  return rest;
}

/** The properties and required names of an object schema (path or query parameters). */
export function objectProperties(schema: $ZodType | undefined): {
  properties: Record<string, JsonObject>;
  required: ReadonlySet<string>;
} {
  if (!schema) return { properties: {}, required: new Set() };
  const json = jsonSchemaOf(schema, "input");
  return {
    properties: (json.properties ?? {}) as Record<string, JsonObject>,
    required: new Set((json.required ?? []) as string[]),
  };
}
