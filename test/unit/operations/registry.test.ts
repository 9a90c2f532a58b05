import { describe, expect, it } from "vitest";
import type { OperationSpec } from "../../../src/operations/operation.js";
import { OperationRegistry, operations } from "../../../src/operations/registry.js";

const spec = (overrides: Partial<OperationSpec>): OperationSpec => ({
  id: "x.get",
  group: "contract",
  summary: "x",
  method: "GET",
  path: "/x/{id}",
  label: "X",
  mountedFor: "workspace",
  effects: ["read"],
  answers: ["json"],
  success: 200,
  ...overrides,
});

describe("operation registry", () => {
  it("refuses a second operation with the same id", () => {
    const registry = new OperationRegistry().register(spec({}));
    expect(() => registry.register(spec({ path: "/y" }))).toThrow(/registered twice/);
  });

  it("refuses a second binding of the same method and path, whatever its parameter is named", () => {
    const registry = new OperationRegistry().register(spec({}));
    expect(() => registry.register(spec({ id: "x.other", path: "/x/{name}" }))).toThrow(/already binds/);
  });

  it("refuses registration once frozen", () => {
    const registry = new OperationRegistry().freeze();
    expect(() => registry.register(spec({}))).toThrow(/frozen/);
  });

  it("lists the methods a path answers, for 405", () => {
    expect(operations.allowedMethods("contract", "/sessions/{id}").sort()).toEqual(["DELETE", "GET"]);
    expect(operations.allowedMethods("contract", "/sessions/{id}/files").sort()).toEqual(["GET", "POST"]);
  });

  it("declares every contract operation the contract defines, and a handful of service ones", () => {
    expect(
      operations
        .all("contract")
        .map((operation) => operation.id)
        .sort(),
    ).toEqual([
      "files.get",
      "files.list",
      "files.put",
      "sessions.create",
      "sessions.delete",
      "sessions.exec",
      "sessions.get",
    ]);
    expect(operations.get("service.healthz")?.mountedFor).toBe("anyone");
    expect(operations.get("sessions.exec")?.answers).toEqual(["json", "event-stream"]);
  });
});
