import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { mountedCaller } from "../../../src/pipeline/steps/mounted.js";
import { adminCaller, authFailures, check, workspaceCaller } from "./fixtures.js";

describe("pipeline step mounted", () => {
  it("mounts contract operations for workspace tokens, and refuses a token naming none with 401", async () => {
    const { metrics } = check();
    expect(mountedCaller("workspace", workspaceCaller, metrics)).toBe(workspaceCaller);
    expect(() => mountedCaller("workspace", adminCaller, metrics)).toThrow(
      expect.objectContaining({ code: "auth.invalid", status: 401 }),
    );
    expect(await authFailures(metrics, "no_workspace")).toBe(1);
  });

  it("mounts admin operations for admin tokens only: any other is 403 auth.forbidden", async () => {
    const { metrics } = check();
    expect(mountedCaller("admin", adminCaller, metrics)).toBe(adminCaller);
    let refusal: unknown;
    try {
      mountedCaller("admin", workspaceCaller, metrics);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(SandpoolError);
    expect((refusal as SandpoolError).toBody()).toEqual({
      detail: { code: "auth.forbidden", message: "the admin API needs an admin token" },
    });
    expect(await authFailures(metrics, "not_admin")).toBe(1);
  });

  it("needs no credential for operations open to anyone, and refuses none for the others", () => {
    const { metrics } = check();
    expect(mountedCaller("anyone", undefined, metrics)).toBeUndefined();
    expect(() => mountedCaller("workspace", undefined, metrics)).toThrow(
      expect.objectContaining({ code: "auth.missing" }),
    );
  });
});
