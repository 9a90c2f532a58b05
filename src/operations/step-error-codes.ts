/**
 * Codes of the pipeline's steps that depend on how an operation is declared, shared by the
 * operations that declare them (their `errors`) and by discovery (src/discovery/error-codes-of.ts).
 */
import type { ErrorCode } from "../contract/error-codes.js";

/** Reading and checking a JSON body (the args step). */
export const jsonBodyCodes = [
  "request.bad_json",
  "request.bad_content_type",
  "request.too_large",
  "request.malformed",
] as const satisfies readonly ErrorCode[];

/** A call forwarded to the session's sandbox. */
export const forwardedCodes = [
  "session.not_found",
  "sandbox.unreachable",
  "sandbox.timeout",
  "sandbox.bad_answer",
] as const satisfies readonly ErrorCode[];
