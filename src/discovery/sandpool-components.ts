/**
 * What sandpool adds to the contract's components: its error body (a narrowing of the
 * contract's free-form `Error`), the enum of its error codes, and the headers of its
 * answers. Additions only: the contract's own components are kept as they are.
 */
import type { JsonObject } from "../contract/contract-document.js";
import { type ErrorCode, errorStatus } from "../contract/error-codes.js";
import { VERSION_HEADER } from "../version.js";

export const ERROR_SCHEMA_REF = "#/components/schemas/SandpoolError";
export const VERSION_HEADER_REF = "#/components/headers/SandpoolVersion";
export const RETRY_AFTER_HEADER_REF = "#/components/headers/RetryAfter";
export const BEARER_SCHEME = "bearerAuth";

export const sandpoolSchemas: Record<string, JsonObject> = {
  SandpoolErrorCode: {
    type: "string",
    enum: Object.keys(errorStatus),
    description: "sandpool's stable error codes; each always answers with the same HTTP status.",
  },
  SandpoolError: {
    description:
      "sandpool's shape of the contract's `Error`: `detail` carries a stable code, a message safe to show, and for a refused input every problem.",
    allOf: [{ $ref: "#/components/schemas/Error" }],
    type: "object",
    required: ["detail"],
    properties: {
      detail: {
        type: "object",
        additionalProperties: true,
        required: ["code", "message"],
        properties: {
          code: { $ref: "#/components/schemas/SandpoolErrorCode" },
          message: { type: "string" },
          problems: { type: "array", items: { type: "string" } },
        },
      },
    },
  },
};

export const sandpoolHeaders: Record<string, JsonObject> = {
  SandpoolVersion: {
    description: `The gateway's version: every answer carries \`${VERSION_HEADER}\`.`,
    schema: { type: "string" },
  },
  RetryAfter: {
    description: "Seconds to wait before trying again (429 and 503 answers).",
    schema: { type: "integer", minimum: 0 },
  },
};

/** Headers of every answer; a 429 or 503 adds `Retry-After`. */
export function answerHeaders(status: number): Record<string, JsonObject> {
  const headers: Record<string, JsonObject> = { [VERSION_HEADER]: { $ref: VERSION_HEADER_REF } };
  if (status === 429 || status === 503) headers["Retry-After"] = { $ref: RETRY_AFTER_HEADER_REF };
  return headers;
}

/** Error codes grouped by the status they answer with. */
export function codesByStatus(codes: readonly ErrorCode[]): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes)
    byStatus.set(errorStatus[code], [...(byStatus.get(errorStatus[code]) ?? []), code]);
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}

/** A sandpool error answer the contract does not declare for the operation. */
export function undeclaredErrorResponse(status: number, codes: readonly ErrorCode[]): JsonObject {
  return {
    description: `sandpool: ${codes.map((code) => `\`${code}\``).join(", ")}.`,
    headers: answerHeaders(status),
    content: { "application/json": { schema: { $ref: ERROR_SCHEMA_REF } } },
    "x-sandpool-error-codes": [...codes],
  };
}
