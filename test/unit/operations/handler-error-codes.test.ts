/**
 * Each operation's own error codes live on its spec (`errors`), which the OpenAPI document
 * lists: every code its handler can throw must be there, and every operation has a handler.
 */
import { describe, expect, it } from "vitest";
import { operations } from "../../../src/operations/registry.js";
import { thrownCodesByOperation } from "./thrown-codes.js";

const thrown = thrownCodesByOperation();

describe("the error codes on each operation's spec", () => {
  it("find every handler, and the codes it throws (the reading is not vacuous)", () => {
    expect([...thrown.keys()].sort()).toEqual(
      operations
        .all()
        .map((operation) => operation.id)
        .sort(),
    );
    expect(thrown.get("admin.nodes.drain")?.codes).toContain("request.not_found");
    expect(thrown.get("admin.policies.apply")?.codes).toContain("request.malformed");
    expect(thrown.get("service.docs.asset")?.codes).toContain("request.not_found");
  });

  it("list every code its handler throws", () => {
    const unlisted = [...thrown].flatMap(([id, { file, codes }]) => {
      const listed: readonly string[] = operations.get(id)?.errors ?? [];
      return codes.filter((code) => !listed.includes(code)).map((code) => `${id} (${file}) throws ${code}`);
    });
    expect(unlisted).toEqual([]);
  });
});
