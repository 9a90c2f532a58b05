import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openApiPath } from "../../support/contract.js";

// The contract's OpenAPI document lives in ../shared; tests validate against a copy kept in
// the project so they run anywhere. Where the shared one is present, the copy must equal it.
const shared = fileURLToPath(
  new URL("../../../../shared/contract/code-execution-openapi.yaml", import.meta.url),
);

describe("the contract copy", () => {
  it.skipIf(!existsSync(shared))("is the shared OpenAPI document, byte for byte", () => {
    expect(readFileSync(openApiPath, "utf8")).toBe(readFileSync(shared, "utf8"));
  });

  it("is contract version 1", () => {
    expect(readFileSync(openApiPath, "utf8")).toMatch(/^info:\n(?:.*\n)*? {2}version: "1"$/m);
  });
});
