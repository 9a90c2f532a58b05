/**
 * The contract's OpenAPI document (contract v1), `src/contract/code-execution-openapi.yaml`:
 * the project's one copy of the shared contract (test/unit/contract/openapi-copy.test.ts holds
 * it equal), shipped beside the compiled code (the build copies it into dist/contract/). The
 * gateway's own OpenAPI document takes the contract's paths and schemas from it unchanged; the
 * tests validate every contract answer against it.
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";

export const contractDocumentUrl = new URL("./code-execution-openapi.yaml", import.meta.url);

/** An OpenAPI document, or any part of one, as parsed JSON. */
export type JsonObject = Record<string, unknown>;

let parsed: JsonObject | undefined;

/** A fresh copy of the contract's document, parsed (callers may change it). */
export function readContractDocument(): JsonObject {
  parsed ??= parse(readFileSync(contractDocumentUrl, "utf8")) as JsonObject;
  return structuredClone(parsed);
}
