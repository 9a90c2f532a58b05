import { describe, expect, it } from "vitest";
import { toolKinds } from "../../../src/contract/schemas.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { ceilingFields, type WorkspacePolicyFields } from "../../../src/policy/workspace-policy-fields.js";
import { deployment } from "./deployment.js";

describe("effectivePolicy", () => {
  it("applies the deployment values when the workspace has no row (configured: false)", () => {
    const d = deployment();
    const policy = effectivePolicy("ws-1", d, undefined);
    expect(policy).toEqual({
      workspace: "ws-1",
      configured: false,
      enabled: true,
      allowedImages: d.allowedImages,
      defaultImage: d.defaultImage,
      allowedTools: d.allowedTools,
      execTimeoutCeilingSeconds: d.execTimeoutCeilingSeconds,
      defaultExecTimeoutSeconds: d.defaultExecTimeoutSeconds,
      idleTimeoutCeilingSeconds: d.idleTimeoutCeilingSeconds,
      maxLifetimeCeilingSeconds: d.maxLifetimeCeilingSeconds,
      defaultIdleTimeoutSeconds: d.defaultIdleTimeoutSeconds,
      defaultMaxLifetimeSeconds: d.defaultMaxLifetimeSeconds,
      maxConcurrentSessions: d.maxConcurrentSessions,
      sessionsPerMinute: d.sessionsPerMinute,
      execSecondsPerDay: d.execSecondsPerDay,
      maxFileBytes: d.maxFileBytes,
      resourceClass: d.resourceClass,
      isolation: "container",
      egressAllowed: d.egressAllowed,
      egressAllowCidrs: d.egressAllowCidrs,
      egressAllowHosts: d.egressAllowHosts,
      sandboxReuse: d.sandboxReuse,
      hibernateAfterIdleSeconds: null,
      maxHibernatedSessions: null,
    });
  });

  it("marks a workspace with a row as configured, even an empty one, and changes nothing else", () => {
    const d = deployment();
    const withRow = effectivePolicy("ws", d, {});
    const without = effectivePolicy("ws", d, undefined);
    expect(withRow.configured).toBe(true);
    expect({ ...withRow, configured: false }).toEqual(without);
  });

  it("does not share the deployment's lists with the result", () => {
    const d = deployment();
    const policy = effectivePolicy("ws", d, undefined);
    policy.allowedImages.push("img/evil");
    policy.allowedTools.pop();
    expect(d.allowedImages).toEqual(["img/a", "img/b", "img/c"]);
    expect(d.allowedTools).toEqual([...toolKinds]);
  });

  describe.each(ceilingFields)("%s", (field) => {
    const d = deployment();
    const ceiling = d[field];

    it("narrows to a lower row value", () => {
      const row: WorkspacePolicyFields = { [field]: ceiling - 1 };
      expect(effectivePolicy("ws", d, row)[field]).toBe(ceiling - 1);
    });

    it("never widens past the deployment ceiling (a row written before the ceiling was lowered)", () => {
      const row: WorkspacePolicyFields = { [field]: ceiling * 10 };
      expect(effectivePolicy("ws", d, row)[field]).toBe(ceiling);
    });

    it("keeps the ceiling for null and absent values", () => {
      expect(effectivePolicy("ws", d, { [field]: null })[field]).toBe(ceiling);
      expect(effectivePolicy("ws", d, {})[field]).toBe(ceiling);
    });
  });

  it("clamps the default timeouts and lifetime to the narrowed ceilings", () => {
    const d = deployment({
      defaultExecTimeoutSeconds: 60,
      defaultIdleTimeoutSeconds: 300,
      defaultMaxLifetimeSeconds: 3600,
    });
    const policy = effectivePolicy("ws", d, {
      execTimeoutCeilingSeconds: 10,
      idleTimeoutCeilingSeconds: 120,
      maxLifetimeCeilingSeconds: 600,
    });
    expect(policy.defaultExecTimeoutSeconds).toBe(10);
    expect(policy.defaultIdleTimeoutSeconds).toBe(120);
    expect(policy.defaultMaxLifetimeSeconds).toBe(600);
  });

  it("keeps the default values when the narrowed ceilings are still above them", () => {
    const policy = effectivePolicy("ws", deployment(), {
      execTimeoutCeilingSeconds: 200,
      idleTimeoutCeilingSeconds: 1000,
      maxLifetimeCeilingSeconds: 7200,
    });
    expect(policy.defaultExecTimeoutSeconds).toBe(60);
    expect(policy.defaultIdleTimeoutSeconds).toBe(300);
    expect(policy.defaultMaxLifetimeSeconds).toBe(3600);
  });

  describe("lists", () => {
    it("intersects the allowed images, in the deployment's order, never adding one", () => {
      const policy = effectivePolicy("ws", deployment(), { allowedImages: ["img/c", "img/x", "img/a"] });
      expect(policy.allowedImages).toEqual(["img/a", "img/c"]);
    });

    it("intersects the allowed tools, never adding one", () => {
      const d = deployment({ allowedTools: ["code_execution", "bash_code_execution"] });
      const policy = effectivePolicy("ws", d, {
        allowedTools: ["bash_code_execution", "text_editor_code_execution"],
      });
      expect(policy.allowedTools).toEqual(["bash_code_execution"]);
    });

    it("an empty row list allows nothing", () => {
      const policy = effectivePolicy("ws", deployment(), { allowedImages: [], allowedTools: [] });
      expect(policy.allowedImages).toEqual([]);
      expect(policy.allowedTools).toEqual([]);
      expect(policy.defaultImage).toBeUndefined();
    });

    it("a null row list keeps the deployment's list", () => {
      const d = deployment();
      const policy = effectivePolicy("ws", d, { allowedImages: null, allowedTools: null });
      expect(policy.allowedImages).toEqual(d.allowedImages);
      expect(policy.allowedTools).toEqual(d.allowedTools);
    });
  });

  describe("default image", () => {
    it("uses the row's default when it is allowed", () => {
      expect(effectivePolicy("ws", deployment(), { defaultImage: "img/b" }).defaultImage).toBe("img/b");
    });

    it("falls back to the first allowed image when the row narrows the deployment default away", () => {
      const policy = effectivePolicy("ws", deployment(), { allowedImages: ["img/c", "img/b"] });
      expect(policy.defaultImage).toBe("img/b");
    });

    it("never picks a row default that the deployment does not allow", () => {
      const policy = effectivePolicy("ws", deployment(), { defaultImage: "img/evil" });
      expect(policy.defaultImage).toBe("img/a");
      expect(policy.allowedImages).not.toContain("img/evil");
    });

    it("falls back when the row's own default is outside its narrowed list", () => {
      const policy = effectivePolicy("ws", deployment(), { allowedImages: ["img/c"], defaultImage: "img/b" });
      expect(policy.defaultImage).toBe("img/c");
    });

    it("is undefined when no image is left", () => {
      const policy = effectivePolicy("ws", deployment(), { allowedImages: ["img/x"] });
      expect(policy.allowedImages).toEqual([]);
      expect(policy.defaultImage).toBeUndefined();
    });
  });

  describe("enabled", () => {
    it("a row may disable the workspace", () => {
      expect(effectivePolicy("ws", deployment(), { enabled: false }).enabled).toBe(false);
    });

    it("is true for a row that says nothing and for no row", () => {
      expect(effectivePolicy("ws", deployment(), {}).enabled).toBe(true);
      expect(effectivePolicy("ws", deployment(), undefined).enabled).toBe(true);
    });
  });

  describe("egress", () => {
    it.each([
      [true, undefined, true],
      [true, null, true],
      [true, true, true],
      [true, false, false],
      [false, undefined, false],
      [false, null, false],
      [false, true, false],
      [false, false, false],
    ])("deployment %s, row %s -> %s (only when both allow)", (deploymentAllows, rowAllows, expected) => {
      const policy = effectivePolicy("ws", deployment({ egressAllowed: deploymentAllows }), {
        egressAllowed: rowAllows,
      });
      expect(policy.egressAllowed).toBe(expected);
    });

    it("no row means the deployment's value", () => {
      expect(effectivePolicy("ws", deployment({ egressAllowed: false }), undefined).egressAllowed).toBe(
        false,
      );
      expect(effectivePolicy("ws", deployment({ egressAllowed: true }), undefined).egressAllowed).toBe(true);
    });
  });

  it("takes the stronger isolation of the row and the deployment: a minimum a row may only raise", () => {
    const isolation = (deploymentLevel: "container" | "gvisor", row: "container" | "gvisor" | null) =>
      effectivePolicy("ws", deployment({ isolation: deploymentLevel }), { isolation: row }).isolation;
    expect(isolation("container", null)).toBe("container");
    expect(isolation("container", "gvisor")).toBe("gvisor");
    expect(isolation("gvisor", null)).toBe("gvisor");
    // Refused on write; a deployment that rose later still wins.
    expect(isolation("gvisor", "container")).toBe("gvisor");
  });

  it("takes the row's resource class, else the deployment's", () => {
    expect(effectivePolicy("ws", deployment(), { resourceClass: "large" }).resourceClass).toBe("large");
    expect(effectivePolicy("ws", deployment(), { resourceClass: null }).resourceClass).toBe("standard");
  });

  it("a row narrowing everything at once yields only the stricter values", () => {
    const d = deployment();
    const policy = effectivePolicy("ws", d, {
      enabled: true,
      allowedImages: ["img/b"],
      allowedTools: ["code_execution"],
      execTimeoutCeilingSeconds: 5,
      idleTimeoutCeilingSeconds: 6,
      maxLifetimeCeilingSeconds: 7,
      maxConcurrentSessions: 1,
      sessionsPerMinute: 2,
      execSecondsPerDay: 3,
      maxFileBytes: 4,
      egressAllowed: false,
    });
    for (const field of ceilingFields) expect(policy[field]).toBeLessThanOrEqual(d[field]);
    expect(policy).toMatchObject({
      configured: true,
      allowedImages: ["img/b"],
      defaultImage: "img/b",
      allowedTools: ["code_execution"],
      defaultExecTimeoutSeconds: 5,
      defaultIdleTimeoutSeconds: 6,
      defaultMaxLifetimeSeconds: 7,
      egressAllowed: false,
    });
  });
});
