/**
 * Checks admin API answers against the admin view of the gateway's own OpenAPI document
 * (`openApiDocument("admin")`, what `GET /openapi.json` serves an admin and what the console's
 * and the CLI's generated client are built from): the status must be one the operation
 * declares, and the body must match that status's schema.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { openApiDocument } from "../../src/discovery/openapi-document.js";

interface Response {
  content?: Record<string, { schema?: unknown }>;
}
type Operations = Record<string, Record<string, { responses: Record<string, Response> }>>;

const document = openApiDocument("admin") as unknown as { paths: Operations };
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(document as object, "admin");
const validators = new Map<string, ValidateFunction>();

const pointerPart = (part: string) => part.replaceAll("~", "~0").replaceAll("/", "~1");

/** `method` and `route` as the document names them: `post`, `/admin/v1/sessions/{id}/resume`. */
export function assertAdminResponse(method: string, route: string, status: number, body: unknown): void {
  const operation = document.paths[route]?.[method.toLowerCase()];
  if (!operation) throw new Error(`the admin document has no ${method} ${route}`);
  const response = operation.responses[String(status)];
  if (!response)
    throw new Error(`${method} ${route} answered ${status}, which the document does not declare`);
  if (!response.content?.["application/json"]?.schema) return;
  const pointer = `admin#/paths/${pointerPart(route)}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.getSchema(pointer);
    if (!validate) throw new Error(`no schema at ${pointer}`);
    validators.set(pointer, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `${method} ${route} ${status} does not match the admin document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
    );
  }
}
