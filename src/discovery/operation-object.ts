/**
 * The OpenAPI operation object of one registry operation. A contract operation starts from
 * the contract's own object, kept as it is, and only gains what sandpool adds (optional
 * fields, headers, responses the contract does not declare); the admin and service
 * operations are built from their declarations (schemas, answer kinds, success status).
 */
import type { JsonObject } from "../contract/contract-document.js";
import type { AnswerKind, OperationSpec } from "../operations/operation.js";
import { errorCodesOf } from "./error-codes-of.js";
import { jsonSchemaOf, objectProperties } from "./json-schema-of.js";
import {
  answerHeaders,
  BEARER_SCHEME,
  codesByStatus,
  undeclaredErrorResponse,
} from "./sandpool-components.js";

/** The registry id of the operation, on every operation object (a contract one keeps its own operationId). */
export const OPERATION_ID_FIELD = "x-sandpool-operation";

/** Extends the contract's operation object (a copy) with sandpool's additions. */
export function extendContractOperation(contractOperation: JsonObject, operation: OperationSpec): JsonObject {
  const extended: JsonObject = {
    ...contractOperation,
    [OPERATION_ID_FIELD]: operation.id,
    "x-sandpool-effects": operation.effects,
    tags: [...((contractOperation.tags as string[] | undefined) ?? []), "contract"],
    // The contract accepts calls with or without a credential; sandpool requires one.
    security: contractOperation.security ?? [{ [BEARER_SCHEME]: [] }],
  };
  const responses = { ...(contractOperation.responses as Record<string, JsonObject>) };
  const success = responses[String(operation.success)];
  if (success && !("$ref" in success))
    responses[String(operation.success)] = withAnswerKinds(success, operation);
  for (const [status, response] of Object.entries(responses)) {
    if (!("$ref" in response) && !response.headers)
      responses[status] = { ...responses[status], headers: answerHeaders(Number(status)) };
  }
  for (const [status, codes] of codesByStatus(errorCodesOf(operation))) {
    const declared = responses[String(status)];
    if (!declared) responses[String(status)] = undeclaredErrorResponse(status, codes);
    else if (!("$ref" in declared))
      responses[String(status)] = { ...declared, "x-sandpool-error-codes": codes };
  }
  extended.responses = responses;
  return extended;
}

/** An event-stream Execute is an answer kind of the operation: the contract's 200 gains its content type. */
function withAnswerKinds(response: JsonObject, operation: OperationSpec): JsonObject {
  const content = { ...((response.content as Record<string, JsonObject> | undefined) ?? {}) };
  for (const kind of operation.answers) {
    const type = contentTypeOf(operation, kind);
    if (type && !content[type]) content[type] = { schema: answerSchema(operation, kind) };
  }
  return Object.keys(content).length > 0 ? { ...response, content } : response;
}

/** The operation object of an admin or service operation, from its declaration. */
export function declaredOperation(
  operation: OperationSpec,
  options: { pathParameters?: boolean } = {},
): JsonObject {
  const object: JsonObject = {
    operationId: operation.id,
    [OPERATION_ID_FIELD]: operation.id,
    summary: operation.summary,
    tags: [operation.group],
    "x-sandpool-effects": operation.effects,
    security: securityOf(operation),
  };
  // An operation on a path item that declares its path parameters (the contract's) shares them.
  const parameters = [
    ...(options.pathParameters === false ? [] : pathParameters(operation)),
    ...queryParameters(operation),
  ];
  if (parameters.length > 0) object.parameters = parameters;
  if (operation.body) {
    object.requestBody = {
      required: true,
      content: { "application/json": { schema: jsonSchemaOf(operation.body, "input") } },
    };
  }
  const responses: Record<string, JsonObject> = { [String(operation.success)]: successResponse(operation) };
  if (operation.alsoSuccess !== undefined)
    responses[String(operation.alsoSuccess)] = successResponse(operation, operation.alsoSuccess);
  for (const [status, codes] of codesByStatus(errorCodesOf(operation)))
    responses[String(status)] = undeclaredErrorResponse(status, codes);
  object.responses = responses;
  return object;
}

function securityOf(operation: OperationSpec): JsonObject[] {
  if (operation.mountedFor !== "anyone") return [{ [BEARER_SCHEME]: [] }];
  // /openapi.json answers anyone, and more with an admin token.
  if (operation.id === "service.openapi") return [{}, { [BEARER_SCHEME]: [] }];
  return [{}];
}

function pathParameters(operation: OperationSpec): JsonObject[] {
  const declared = objectProperties(operation.params);
  return [...operation.path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => ({
    name,
    in: "path",
    required: true,
    schema: declared.properties[name!] ?? { type: "string", minLength: 1 },
  }));
}

function queryParameters(operation: OperationSpec): JsonObject[] {
  const declared = objectProperties(operation.query);
  return Object.entries(declared.properties).map(([name, schema]) => {
    const { description, ...rest } = schema;
    return {
      name,
      in: "query",
      required: declared.required.has(name),
      ...(description === undefined ? {} : { description }),
      schema: rest,
    };
  });
}

function successResponse(operation: OperationSpec, status = operation.success): JsonObject {
  const content: Record<string, JsonObject> = {};
  for (const kind of operation.answers) {
    const type = contentTypeOf(operation, kind);
    if (type) content[type] = { schema: answerSchema(operation, kind) };
  }
  return {
    description: operation.summary,
    headers: answerHeaders(status),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

/** The content type of an answer kind (none for an empty answer). */
function contentTypeOf(operation: OperationSpec, kind: AnswerKind): string | undefined {
  switch (kind) {
    case "json":
      return "application/json";
    case "bytes":
      return "application/octet-stream";
    case "event-stream":
      return "text/event-stream";
    case "text":
      return textTypes[operation.id] ?? "text/plain";
    case "empty":
      return undefined;
  }
}

/** Text answers that are not plain text. */
const textTypes: Readonly<Record<string, string>> = { "service.docs": "text/html" };

function answerSchema(operation: OperationSpec, kind: AnswerKind): JsonObject {
  if (kind === "json") return operation.result ? jsonSchemaOf(operation.result, "output") : {};
  if (kind === "event-stream")
    return {
      type: "string",
      description: "Server-sent events: the run's output as it comes, then its ExecResponse.",
    };
  if (kind === "bytes") return { type: "string", contentMediaType: "application/octet-stream" };
  return { type: "string" };
}
