/**
 * Validates responses against the schemas of the contract's OpenAPI document
 * (src/contract/code-execution-openapi.yaml, which the gateway also serves from;
 * test/unit/contract/openapi-copy.test.ts keeps it equal to the shared contract). Every response a
 * test receives passes through here.
 */
import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { parse } from "yaml";
import { contractDocumentUrl } from "../../src/contract/contract-document.js";

export const openApiPath = contractDocumentUrl;

interface Operation {
  operationId: string;
  responses: Record<string, { $ref?: string; content?: Record<string, { schema?: unknown }> }>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, Operation["responses"][string]> };
}

const document = parse(readFileSync(openApiPath, "utf8")) as OpenApiDocument;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(document as object, "openapi");

/** operationId -> JSON pointer of its operation object in the document. */
const operations = new Map<string, { operation: Operation; pointer: string }>();
for (const [pathKey, item] of Object.entries(document.paths)) {
  for (const [method, operation] of Object.entries(item)) {
    if (operation && typeof operation === "object" && "operationId" in operation) {
      const escaped = pathKey.replaceAll("~", "~0").replaceAll("/", "~1");
      operations.set(operation.operationId, { operation, pointer: `/paths/${escaped}/${method}` });
    }
  }
}

const validators = new Map<string, ValidateFunction>();
function validatorFor(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.getSchema(`openapi#${pointer}`);
    if (!validate) throw new Error(`no schema at ${pointer} in the contract`);
    validators.set(pointer, validate);
  }
  return validate;
}

export function assertSchema(name: string, body: unknown): void {
  const validate = validatorFor(`/components/schemas/${name}`);
  if (!validate(body)) {
    throw new Error(
      `response does not match contract schema ${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
    );
  }
}

/**
 * Checks a JSON response of `operationId` with `status`: the status must be one the
 * contract declares for the operation, or an error status (>= 400) whose body is then
 * checked against the contract's `Error` schema.
 */
export function assertContractResponse(operationId: string, status: number, body: unknown): void {
  const found = operations.get(operationId);
  if (!found) throw new Error(`unknown operation ${operationId}`);
  const response = found.operation.responses[String(status)];
  if (!response && status < 400) {
    throw new Error(`${operationId} answered ${status}, which the contract does not declare`);
  }
  let pointer: string | undefined;
  if (!response || response.$ref) {
    pointer = "/components/schemas/Error"; // undeclared errors, and the shared Unauthorized
  } else if (response.content?.["application/json"]?.schema) {
    pointer = `${found.pointer}/responses/${status}/content/application~1json/schema`;
  }
  if (!pointer) return; // no JSON body declared (204, file bytes)
  const validate = validatorFor(pointer);
  if (!validate(body)) {
    throw new Error(
      `${operationId} ${status} does not match the contract: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
    );
  }
}
