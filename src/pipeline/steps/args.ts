/**
 * Pipeline step "args": the call's arguments checked against the operation's declarations
 * (path parameters, query, body) and handed on admitted. A refused input is 422
 * `request.malformed` listing every problem (`detail.problems`), except where the operation
 * checks its body with the contract's own codes (`parseBody`: Execute's 400 `tool.unknown`).
 * A JSON body is read here, under the parse rules of the transport (415, 400, depth), and an
 * operation that takes a byte stream refuses a call without one.
 */

import type { $ZodType } from "zod/v4/core";
import { safeParse } from "zod/v4/core";
import { malformed, SandpoolError } from "../../contract/error-codes.js";
import type { SchemaIssues } from "../../contract/schemas.js";
import type { CallArgs } from "../../operations/handler.js";
import type { OperationSpec } from "../../operations/operation.js";
import { parseBody } from "../../operations/parse-body.js";

/** The arguments as the transport (or an in-process caller) gave them, not yet admitted. */
export interface RawArgs {
  params: Record<string, string>;
  query: Record<string, string>;
  /** Reads the JSON body (`optional`: an empty one is `{}`); absent when there is none to read. */
  readBody?: (optional: boolean) => Promise<unknown>;
  stream?: CallArgs["stream"];
  answer?: CallArgs["answer"];
}

export async function parseArgs(operation: OperationSpec, raw: RawArgs): Promise<CallArgs> {
  const params = operation.params
    ? checked<CallArgs["params"]>(operation.params, raw.params, sentences)
    : raw.params;
  const query = operation.query
    ? checked<CallArgs["query"]>(operation.query, raw.query, sentences)
    : raw.query;
  const args: CallArgs = { params, query, answer: raw.answer };
  const input = inputOf(operation);
  if (input === "json" || input === "optional-json") {
    const optional = input === "optional-json";
    const body = raw.readBody ? await raw.readBody(optional) : optional ? {} : undefined;
    if (body === undefined) throw new SandpoolError("request.bad_json", "the request body is not valid JSON");
    args.body = parseBody(operation, body);
  } else if (input === "stream") {
    if (!raw.stream)
      throw new SandpoolError("request.malformed", `${operation.label} needs a multipart body`);
    args.stream = raw.stream;
  }
  return args;
}

/** How an operation takes its body: as it declares, else JSON when it declares a body schema. */
export function inputOf(operation: OperationSpec): OperationSpec["input"] {
  return operation.input ?? (operation.body ? "json" : undefined);
}

const sentences = (error: SchemaIssues): string[] => error.issues.map((issue) => issue.message);

function checked<T>(schema: $ZodType, value: unknown, problems: (error: SchemaIssues) => string[]): T {
  const parsed = safeParse(schema, value);
  if (!parsed.success) throw malformed(problems(parsed.error));
  return parsed.data as T;
}
