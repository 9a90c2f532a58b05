/**
 * Checks admin API answers against the admin view of the gateway's own OpenAPI document
 * (`openApiDocument("admin")`, what `GET /openapi.json` serves an admin and what the console's
 * and the CLI's generated client are built from): the status must be one the operation
 * declares, and a JSON body must match that status's schema (an error, the `Error` schema).
 * `assertAdminResponse` names the call by method and route and throws; `expectDeclaredAnswer`
 * names it by operation id and fails through vitest's `expect`.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { expect } from "vitest";
import { openApiDocument } from "../../src/discovery/openapi-document.js";
import { mountedPath } from "../../src/operations/operation.js";
import { operations } from "../../src/operations/registry.js";
import type { Answer } from "./contract-client.js";

interface Response {
  content?: Record<string, { schema?: unknown }>;
}
type Operations = Record<string, Record<string, { responses: Record<string, Response> }>>;

const document = openApiDocument("admin") as unknown as { paths: Operations };
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(document as object, "admin");
const validators = new Map<string, ValidateFunction>();

const pointerPart = (part: string) => part.replaceAll("~", "~0").replaceAll("/", "~1");

/** The declared response of `route`'s `method` for `status`, or a message saying what is not declared. */
function declaredResponse(method: string, route: string, status: number): Response | string {
  const operation = document.paths[route]?.[method.toLowerCase()];
  if (!operation) return `the admin document has no ${method} ${route}`;
  return (
    operation.responses[String(status)] ??
    `${method} ${route} answered ${status}, which the document does not declare`
  );
}

/** The validator of the JSON body `route`'s `method` declares for `status`. */
function bodyValidator(method: string, route: string, status: number): ValidateFunction {
  const pointer = `admin#/paths/${pointerPart(route)}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.getSchema(pointer);
    if (!validate) throw new Error(`no schema at ${pointer}`);
    validators.set(pointer, validate);
  }
  return validate;
}

/** `method` and `route` as the document names them: `post`, `/admin/v1/sessions/{id}/resume`. */
export function assertAdminResponse(method: string, route: string, status: number, body: unknown): void {
  const response = declaredResponse(method, route, status);
  if (typeof response === "string") throw new Error(response);
  if (!response.content?.["application/json"]?.schema) return;
  const validate = bodyValidator(method, route, status);
  if (!validate(body)) {
    throw new Error(
      `${method} ${route} ${status} does not match the admin document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
    );
  }
}

/** `answer` is one `operationId` (`admin.secrets.put`) declares, its body of the declared shape. */
export function expectDeclaredAnswer(operationId: string, answer: Answer): void {
  const operation = operations.get(operationId);
  if (!operation) throw new Error(`no operation ${operationId}`);
  const route = mountedPath(operation);
  const response = declaredResponse(operation.method, route, answer.status);
  expect(
    typeof response === "string" ? undefined : response,
    `${operationId} answered ${answer.status}, which its document does not declare`,
  ).toBeDefined();
  if (typeof response === "string" || !response.content?.["application/json"]) return;
  const validate = bodyValidator(operation.method, route, answer.status);
  const valid = validate(answer.body);
  expect(valid, `${operationId} ${answer.status}: ${ajv.errorsText(validate.errors)}\n${answer.text}`).toBe(
    true,
  );
}
