/**
 * An operation's JSON body checked as it declares (the pipeline's args step, and explain's):
 * with its own `parseBody` where it has the contract's own codes (Execute's 400
 * `tool.unknown`), else against its `body` schema (422 `request.malformed` listing every
 * problem). Returns the body the handler gets.
 */
import type { $ZodType } from "zod/v4/core";
import { safeParse } from "zod/v4/core";
import { malformed } from "../contract/error-codes.js";
import { issueProblems } from "../contract/schemas.js";
import type { OperationSpec } from "./operation.js";

export function parseBody(operation: OperationSpec, body: unknown): unknown {
  if (operation.parseBody) return operation.parseBody(body);
  if (!operation.body) return body;
  const schema: $ZodType = operation.body;
  const parsed = safeParse(schema, body);
  if (!parsed.success) throw malformed(issueProblems(parsed.error, schema));
  return parsed.data;
}
