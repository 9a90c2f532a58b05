/**
 * The search of `egress.secret-unseen` never holds the value it looks for (it is sent
 * reversed), so the probe cannot find its own code wherever a sandbox keeps it. The search
 * itself runs in a sandbox in test/integration/serve/serve-secret-injection.test.ts.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { secretSearchProgram } from "../../../src/verify/probes/secret-checks.js";

describe("the secret-unseen probe's search", () => {
  it("never carries the value it looks for", () => {
    const value = `spv-value-${randomBytes(16).toString("hex")}`;
    const program = secretSearchProgram(value);
    expect(program).not.toContain(value);
    expect(program).toContain([...value].reverse().join(""));
  });
});
