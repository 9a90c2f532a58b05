/**
 * The drift test: the OpenAPI document generated from the registry against the contract
 * (src/contract/code-execution-openapi.yaml, held equal to the shared one by
 * test/unit/contract/openapi-copy.test.ts). The contract's part holds every path,
 * method and component schema unchanged (sandpool may only add optional fields, headers and
 * responses); the registry's contract operations and the contract's operations map one to
 * one; and each view is a valid OpenAPI 3.1 document.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { type JsonObject, readContractDocument } from "../../../src/contract/contract-document.js";
import { type DocumentViewer, openApiDocument } from "../../../src/discovery/openapi-document.js";
import { mountedPath } from "../../../src/operations/operation.js";
import { operations } from "../../../src/operations/registry.js";

const contract = readContractDocument();
const contractPaths = contract.paths as Record<string, Record<string, JsonObject>>;
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];
const viewers: DocumentViewer[] = ["public", "admin"];

/**
 * Where `actual` departs from `expected` other than by additions: every key of an object in
 * `expected` is in `actual` with a contained value; arrays and scalars are equal. Required
 * lists and enums must stay as they are, or an addition could tighten what a client may send.
 */
function departures(expected: unknown, actual: unknown, at = ""): string[] {
  if (Array.isArray(expected)) {
    return JSON.stringify(expected) === JSON.stringify(actual) ? [] : [`${at}: ${JSON.stringify(actual)}`];
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual))
      return [`${at}: not an object`];
    return Object.entries(expected).flatMap(([key, value]) =>
      key in actual
        ? departures(value, (actual as JsonObject)[key], `${at}/${key}`)
        : [`${at}/${key}: missing`],
    );
  }
  return Object.is(expected, actual)
    ? []
    : [`${at}: ${JSON.stringify(actual)} instead of ${JSON.stringify(expected)}`];
}

/**
 * A component with the annotations sandpool gives union variants (titled-variants.ts) taken
 * off again: a `title` and `type` beside a variant's `$ref`.
 */
function withoutVariantTitles(component: unknown): unknown {
  if (component === null || typeof component !== "object" || Array.isArray(component)) return component;
  const copy = { ...(component as JsonObject) };
  for (const keyword of ["oneOf", "anyOf"]) {
    const variants = copy[keyword];
    if (!Array.isArray(variants)) continue;
    copy[keyword] = variants.map((variant) => {
      if (variant === null || typeof variant !== "object" || !("$ref" in variant)) return variant;
      const { title: _title, type: _type, ...rest } = variant as JsonObject;
      return rest;
    });
  }
  return copy;
}

/** Keys an addition may not bring into a contract object: they would change what a client must send. */
function addedRequirements(expected: JsonObject, actual: JsonObject, at = ""): string[] {
  const found: string[] = [];
  for (const [key, value] of Object.entries(actual)) {
    const before = expected[key];
    if (before === undefined) {
      if (key === "required" && Array.isArray(value)) found.push(`${at}/required added`);
      if (key === "requestBody" && (value as JsonObject).required === true)
        found.push(`${at}/requestBody added`);
      if (key === "parameters") found.push(`${at}/parameters added`);
      continue;
    }
    if (before && value && typeof before === "object" && typeof value === "object" && !Array.isArray(value))
      found.push(...addedRequirements(before as JsonObject, value as JsonObject, `${at}/${key}`));
  }
  return found;
}

describe.each(viewers)("the %s OpenAPI document", (viewer) => {
  const document = openApiDocument(viewer);
  const paths = document.paths as Record<string, Record<string, JsonObject>>;

  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(structuredClone(document));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("holds every path and method of the contract, with only additions", () => {
    for (const [path, item] of Object.entries(contractPaths)) {
      expect(paths[path], `contract path ${path}`).toBeDefined();
      expect(departures(item, paths[path], path)).toEqual([]);
      expect(addedRequirements(item, paths[path]!, path)).toEqual([]);
    }
  });

  it("holds every component of the contract unchanged, but for the titles of union variants", () => {
    const generated = document.components as Record<string, Record<string, unknown>>;
    for (const [kind, entries] of Object.entries(
      contract.components as Record<string, Record<string, unknown>>,
    )) {
      for (const [name, value] of Object.entries(entries))
        expect(withoutVariantTitles(generated[kind]?.[name]), `components/${kind}/${name}`).toEqual(value);
    }
  });

  it("titles each variant of the tool union (Swagger UI reads an untitled $ref as any)", () => {
    const schemas = (document.components as Record<string, Record<string, JsonObject>>).schemas!;
    expect(schemas.ExecRequest?.oneOf).toEqual([
      { $ref: "#/components/schemas/CodeExecutionRequest", title: "CodeExecutionRequest", type: "object" },
      { $ref: "#/components/schemas/BashExecutionRequest", title: "BashExecutionRequest", type: "object" },
      { $ref: "#/components/schemas/TextEditorRequest", title: "TextEditorRequest", type: "object" },
    ]);
    // The contract's own document is read, never changed.
    expect(
      (contract.components as Record<string, Record<string, JsonObject>>).schemas!.ExecRequest?.oneOf,
    ).toEqual([
      { $ref: "#/components/schemas/CodeExecutionRequest" },
      { $ref: "#/components/schemas/BashExecutionRequest" },
      { $ref: "#/components/schemas/TextEditorRequest" },
    ]);
  });

  it("maps every contract operation of the registry to one contract path and method, and back", () => {
    const registryToContract = new Map<string, string>();
    for (const [path, item] of Object.entries(paths)) {
      for (const method of METHODS) {
        const operation = item[method];
        if (!operation) continue;
        const id = operation["x-sandpool-operation"] as string;
        expect(operations.get(id), `${method} ${path} names ${id}`).toBeDefined();
        if (operations.get(id)?.group !== "contract" || !contractPaths[path]?.[method]) continue;
        expect(registryToContract.has(id), `${id} appears twice`).toBe(false);
        registryToContract.set(id, `${method.toUpperCase()} ${path}`);
        // The contract's operationId is its own; the registry declares it as the operation's label.
        expect(operation.operationId).toBe(operations.get(id)?.label);
      }
    }
    // The contract group's operations the contract lacks are sandpool's extensions, each a deliberate choice.
    const extensions = operations
      .all("contract")
      .map((operation) => operation.id)
      .filter((id) => !registryToContract.has(id));
    expect(extensions).toEqual(["sessions.get"]);
    const contractOperations = Object.entries(contractPaths).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect([...registryToContract.values()].sort()).toEqual(contractOperations.sort());
  });

  it("answers Execute as JSON or as an event stream", () => {
    const responses = paths["/sessions/{session_id}/exec"]?.post?.responses as Record<string, JsonObject>;
    const content = responses["200"]?.content as JsonObject;
    expect(Object.keys(content).sort()).toEqual(["application/json", "text/event-stream"]);
  });

  it("gives each operation a unique operationId and names its registry id", () => {
    const ids = Object.values(paths).flatMap((item) =>
      METHODS.filter((method) => item[method]).map((method) => item[method]!.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("the views", () => {
  it("show an anonymous caller the contract and the open operations, an admin every operation", () => {
    const listed = (viewer: DocumentViewer) =>
      Object.entries(openApiDocument(viewer).paths as Record<string, Record<string, JsonObject>>)
        .flatMap(([, item]) =>
          METHODS.filter((method) => item[method]).map((method) => item[method]!["x-sandpool-operation"]),
        )
        .sort();
    const open = operations
      .all()
      .filter((operation) => operation.group === "contract" || operation.mountedFor === "anyone")
      .map((operation) => operation.id);
    expect(listed("public")).toEqual(open.sort());
    expect(listed("admin")).toEqual(
      operations
        .all()
        .map((operation) => operation.id)
        .sort(),
    );
    expect(listed("public").some((id) => String(id).startsWith("admin."))).toBe(false);
  });

  it("puts the admin API under /admin/v1 with bearer security, and its operationId is the registry id", () => {
    const paths = openApiDocument("admin").paths as Record<string, Record<string, JsonObject>>;
    for (const operation of operations.all("admin")) {
      const object = paths[mountedPath(operation)]?.[operation.method.toLowerCase()];
      expect(mountedPath(operation).startsWith("/admin/v1/")).toBe(true);
      expect(object?.operationId).toBe(operation.id);
      expect(object?.security).toEqual([{ bearerAuth: [] }]);
    }
  });
});
