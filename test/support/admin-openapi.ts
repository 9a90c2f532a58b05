/**
 * Checks admin API answers against the gateway's own OpenAPI document (`openApiDocument("admin")`,
 * what `/openapi.json` serves an admin): the status must be one the operation declares, and a
 * JSON body must match that response's schema (an error, the `Error` schema).
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { expect } from "vitest";
import { openApiDocument } from "../../src/discovery/openapi-document.js";
import { mountedPath } from "../../src/operations/operation.js";
import { operations } from "../../src/operations/registry.js";
import type { Answer } from "./contract-client.js";

const document = openApiDocument("admin");
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(document as object, "admin-openapi");
const validators = new Map<string, ValidateFunction>();

/** `answer` is one `operationId` (`admin.secrets.put`) declares, its body of the declared shape. */
export function expectDeclaredAnswer(operationId: string, answer: Answer): void {
  const operation = operations.get(operationId);
  if (!operation) throw new Error(`no operation ${operationId}`);
  const path = mountedPath(operation).replaceAll("~", "~0").replaceAll("/", "~1");
  const method = operation.method.toLowerCase();
  const responses = (
    document.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>
  )[mountedPath(operation)]![method]!.responses;
  const declared = responses[String(answer.status)] as { content?: Record<string, unknown> } | undefined;
  expect(
    declared,
    `${operationId} answered ${answer.status}, which its document does not declare`,
  ).toBeDefined();
  if (!declared?.content?.["application/json"]) return;
  const pointer = `admin-openapi#/paths/${path}/${method}/responses/${answer.status}/content/application~1json/schema`;
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.getSchema(pointer);
    if (!validate) throw new Error(`no schema at ${pointer}`);
    validators.set(pointer, validate);
  }
  const valid = validate(answer.body);
  expect(valid, `${operationId} ${answer.status}: ${ajv.errorsText(validate.errors)}\n${answer.text}`).toBe(
    true,
  );
}
