/**
 * sandpool's OpenAPI 3.1 document, generated from the operation registry, per viewer: the
 * public view (no credential, or a workspace token) holds
 * the contract's operations and those open to anyone; the admin view (an admin token) holds
 * every operation, the admin API under `/admin/v1`.
 *
 * The contract's part is the contract's own document: its path items and component schemas
 * are copied unchanged (the drift test, test/unit/discovery/openapi-drift.test.ts, holds them
 * to it), and a contract operation keeps the contract's `operationId` (`CreateSession`, the
 * name clients generated from the contract use); its registry id is `x-sandpool-operation`.
 * sandpool only adds: optional fields, headers, the responses the contract does not
 * declare, components of its own, and titles on the variants of the contract's unions
 * (titled-variants.ts).
 */
import { type JsonObject, readContractDocument } from "../contract/contract-document.js";
import { mountedPath, type OperationSpec } from "../operations/operation.js";
import { type OperationRegistry, operations } from "../operations/registry.js";
import { SANDPOOL_VERSION } from "../version.js";
import { declaredOperation, extendContractOperation } from "./operation-object.js";
import { sandpoolHeaders, sandpoolSchemas } from "./sandpool-components.js";
import { titledVariants } from "./titled-variants.js";

/** Who reads the document: anyone (no credential or a workspace token), or an operator (an admin token). */
export type DocumentViewer = "public" | "admin";

export function visibleTo(viewer: DocumentViewer, operation: OperationSpec): boolean {
  return viewer === "admin" || operation.group === "contract" || operation.mountedFor === "anyone";
}

export function openApiDocument(
  viewer: DocumentViewer,
  registry: OperationRegistry = operations,
): JsonObject {
  const contract = readContractDocument();
  const contractPaths = contract.paths as Record<string, JsonObject>;
  const paths: Record<string, JsonObject> = {};
  for (const operation of registry.all()) {
    if (!visibleTo(viewer, operation)) continue;
    const method = operation.method.toLowerCase();
    const key = operation.group === "contract" ? contractPathOf(contractPaths, operation) : undefined;
    if (key) {
      const item = paths[key] ?? { ...contractPaths[key] };
      item[method] = item[method]
        ? extendContractOperation(item[method] as JsonObject, operation)
        : contractExtension(operation, item);
      paths[key] = item;
    } else {
      const path = mountedPath(operation);
      paths[path] = { ...paths[path], [method]: declaredOperation(operation) };
    }
  }
  const components = contract.components as Record<string, Record<string, unknown>>;
  return {
    openapi: "3.1.0",
    info: {
      title: viewer === "admin" ? "sandpool: contract, admin API and service endpoints" : "sandpool",
      version: SANDPOOL_VERSION,
      summary:
        "A multi-tenant, pool-backed gateway for the Otari code-execution protocol, contract version 1.",
      description:
        "The contract's operations are served at `/` and under the deployment's base path, with a bearer token naming a workspace. " +
        (viewer === "admin"
          ? "The admin API lives at `/admin/v1` and needs an admin token."
          : "An admin token sees the admin API too, at `GET /openapi.json`."),
      license: contract.info && (contract.info as JsonObject).license,
      "x-contract-version": (contract.info as JsonObject).version,
    },
    servers: [{ url: "/", description: "The gateway that serves this document." }],
    security: contract.security,
    tags: tagsOf(viewer),
    paths,
    components: {
      ...components,
      schemas: { ...titledVariants(components.schemas as Record<string, JsonObject>), ...sandpoolSchemas },
      headers: { ...components.headers, ...sandpoolHeaders },
    },
  };
}

/**
 * The contract's path key of a contract operation (`/sessions/{session_id}` for
 * `/sessions/{id}`): OpenAPI allows one templated path per shape, so an operation the
 * contract lacks on a contract path joins the contract's path item.
 */
function contractPathOf(
  contractPaths: Record<string, JsonObject>,
  operation: OperationSpec,
): string | undefined {
  const shape = (path: string) => path.replace(/\{[^}]+\}/g, "{}");
  return Object.keys(contractPaths).find((path) => shape(path) === shape(operation.path));
}

/**
 * A contract-group operation the contract does not have (`GET /sessions/{id}`): sandpool's
 * extension, named like the contract's operations (its label), on the contract's path
 * item, whose path parameters it shares.
 */
function contractExtension(operation: OperationSpec, item: JsonObject): JsonObject {
  const declared = declaredOperation(operation, { pathParameters: item.parameters === undefined });
  return { ...declared, operationId: operation.label, "x-sandpool-extension": true };
}

function tagsOf(viewer: DocumentViewer): JsonObject[] {
  const tags = [
    { name: "contract", description: "The code-execution protocol, contract version 1." },
    { name: "service", description: "Health, metrics and discovery: no credential needed." },
  ];
  if (viewer === "admin") tags.splice(1, 0, { name: "admin", description: "The admin API: an admin token." });
  return tags;
}
