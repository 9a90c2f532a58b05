/**
 * The policy's decisions (src/policy/decide-access.ts, decide-limits.ts): each verdict names
 * the rule, the policy field and the value that decided, and a refusal carries the code the
 * gateway answers with; `enforce` throws exactly that refusal.
 */
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import {
  fileSizeAllowed,
  imageAllowed,
  toolAllowed,
  workspaceEnabled,
} from "../../../src/policy/decide-access.js";
import { execTimeout, grantedTimeoutSeconds, sessionTimeouts } from "../../../src/policy/decide-limits.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { enforce } from "../../../src/policy/verdict.js";
import type { WorkspacePolicyFields } from "../../../src/policy/workspace-policy-fields.js";
import { deployment } from "./deployment.js";

const policy = (row?: WorkspacePolicyFields) => effectivePolicy("ws", deployment(), row);

describe("workspaceEnabled", () => {
  it("passes an enabled workspace, refuses a disabled one with policy.workspace_disabled", () => {
    expect(workspaceEnabled(policy())).toEqual({
      allowed: true,
      rule: "workspace.enabled",
      field: "enabled",
      value: true,
    });
    const refused = workspaceEnabled(policy({ enabled: false }));
    expect(refused).toMatchObject({ allowed: false, field: "enabled", value: false });
    expect(refused.refusal?.code).toBe("policy.workspace_disabled");
  });
});

describe("imageAllowed", () => {
  it("chooses the workspace's default when none is asked for", () => {
    expect(imageAllowed(policy({ defaultImage: "img/b" }), undefined)).toEqual({
      allowed: true,
      rule: "image.default",
      field: "defaultImage",
      value: "img/b",
      image: "img/b",
      defaulted: true,
    });
    expect(imageAllowed(policy(), null).image).toBe("img/a");
  });

  it("allows an image among the allowed ones and names the list", () => {
    expect(imageAllowed(policy({ allowedImages: ["img/a", "img/c"] }), "img/c")).toMatchObject({
      allowed: true,
      rule: "image.allowed",
      field: "allowedImages",
      value: ["img/a", "img/c"],
      asked: "img/c",
      defaulted: false,
    });
  });

  it("refuses an image outside the list with policy.image_not_allowed", () => {
    const refused = imageAllowed(policy({ allowedImages: ["img/a"] }), "img/b");
    expect(refused).toMatchObject({
      allowed: false,
      field: "allowedImages",
      value: ["img/a"],
      asked: "img/b",
    });
    expect(refused.refusal).toEqual({
      code: "policy.image_not_allowed",
      message: "the image 'img/b' is not allowed for this workspace (allowed: img/a)",
    });
  });

  it("refuses by defaultImage when the row leaves no image at all", () => {
    const none = policy({ allowedImages: [] });
    const refused = imageAllowed(none, undefined);
    expect(refused).toMatchObject({
      allowed: false,
      field: "defaultImage",
      image: undefined,
      defaulted: true,
    });
    expect(refused.refusal?.code).toBe("policy.image_not_allowed");
  });
});

describe("toolAllowed", () => {
  it("allows a listed tool and refuses another with policy.tool_not_allowed", () => {
    const narrowed = policy({ allowedTools: ["bash_code_execution"] });
    expect(toolAllowed(narrowed, "bash_code_execution")).toMatchObject({
      allowed: true,
      field: "allowedTools",
      value: ["bash_code_execution"],
    });
    const refused = toolAllowed(narrowed, "code_execution");
    expect(refused).toMatchObject({ allowed: false, rule: "tool.allowed", asked: "code_execution" });
    expect(refused.refusal).toEqual({
      code: "policy.tool_not_allowed",
      message: "the tool 'code_execution' is not allowed for this workspace (allowed: bash_code_execution)",
    });
  });
});

describe("fileSizeAllowed", () => {
  it("refuses a declared size above the cap plus framing, allows an undeclared one", () => {
    const capped = policy({ maxFileBytes: 1000 });
    expect(fileSizeAllowed(capped, 1100, 100).allowed).toBe(true);
    const refused = fileSizeAllowed(capped, 1101, 100);
    expect(refused).toMatchObject({ allowed: false, field: "maxFileBytes", value: 1000, asked: 1101 });
    expect(refused.refusal?.code).toBe("file.too_large");
    expect(fileSizeAllowed(capped, undefined).allowed).toBe(true);
  });
});

describe("enforce", () => {
  it("returns an allowing verdict and throws a refusing one's code and message", () => {
    const allowed = workspaceEnabled(policy());
    expect(enforce(allowed)).toBe(allowed);
    let thrown: unknown;
    try {
      enforce(toolAllowed(policy({ allowedTools: ["bash_code_execution"] }), "code_execution"));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SandpoolError);
    expect((thrown as SandpoolError).code).toBe("policy.tool_not_allowed");
    expect((thrown as SandpoolError).status).toBe(403);
  });
});

describe("sessionTimeouts", () => {
  it("takes the hints under the ceilings, the defaults without hints", () => {
    const { idle, lifetime } = sessionTimeouts(policy(), { idle_timeout_seconds: 120 });
    expect(idle).toEqual({
      rule: "session.idle_timeout",
      field: "idleTimeoutCeilingSeconds",
      value: 120,
      limit: 1800,
      asked: 120,
      clamped: false,
    });
    expect(lifetime).toMatchObject({ value: 3600, asked: null, clamped: false, limit: 14_400 });
  });

  it("clamps a hint above the ceiling in force, a row's lower ceiling included", () => {
    const narrowed = policy({ idleTimeoutCeilingSeconds: 60, maxLifetimeCeilingSeconds: 600 });
    const { idle, lifetime } = sessionTimeouts(narrowed, {
      idle_timeout_seconds: 999,
      max_lifetime_seconds: 601,
    });
    expect(idle).toMatchObject({ value: 60, limit: 60, asked: 999, clamped: true });
    expect(lifetime).toMatchObject({ value: 600, limit: 600, asked: 601, clamped: true });
  });
});

describe("execTimeout and grantedTimeoutSeconds", () => {
  it("clamps to the ceiling, defaults without a request", () => {
    expect(execTimeout(policy({ execTimeoutCeilingSeconds: 30 }), 45)).toMatchObject({
      rule: "exec.timeout",
      field: "execTimeoutCeilingSeconds",
      value: 30,
      clamped: true,
    });
    expect(execTimeout(policy(), undefined)).toMatchObject({ value: 60, asked: null, clamped: false });
  });

  it("cuts the timeout to the whole seconds granted, one at least", () => {
    expect(grantedTimeoutSeconds(60, 60_000)).toBe(60);
    expect(grantedTimeoutSeconds(60, 12_999)).toBe(12);
    expect(grantedTimeoutSeconds(60, 400)).toBe(1);
  });
});
