/** A declared operation without a handler is named, and stops the gateway from starting. */
import { describe, expect, it } from "vitest";
import type { OperationHandlers } from "../../../src/operations/handler.js";
import { operations } from "../../../src/operations/registry.js";
import {
  assertEveryOperationHandled,
  unhandledOperations,
} from "../../../src/operations/unhandled-operations.js";

const answer: OperationHandlers[string] = async () => ({ kind: "empty", status: 204 });
const everyOf = (group: "contract" | "admin" | "service"): OperationHandlers =>
  Object.fromEntries(operations.all(group).map((operation) => [operation.id, answer]));

describe("unhandledOperations", () => {
  it("is empty for a full map and names each operation a map leaves out", () => {
    expect(unhandledOperations("contract", everyOf("contract"))).toEqual([]);
    const { "sessions.exec": _left, ...rest } = everyOf("contract");
    expect(unhandledOperations("contract", rest)).toEqual(["sessions.exec (POST /sessions/{id}/exec)"]);
  });

  it("refuses, naming them, when a group lacks any", () => {
    expect(() =>
      assertEveryOperationHandled({ contract: everyOf("contract"), admin: everyOf("admin"), service: {} }),
    ).toThrow(/without a handler: .*service\./);
    expect(() =>
      assertEveryOperationHandled({
        contract: everyOf("contract"),
        admin: everyOf("admin"),
        service: everyOf("service"),
      }),
    ).not.toThrow();
  });
});
