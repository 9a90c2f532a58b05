/**
 * The egress allow-lists in policy: the deployment's lists are every workspace's grant and
 * the ceiling of a row; a row narrows, never widens (checked on write, and again on read
 * should the deployment narrow later).
 */
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { validatePolicyEdit } from "../../../src/policy/workspace-policy-fields.js";
import { deploymentPolicySchema } from "../../../src/policy-schema/deployment-policy.js";
import { deployment } from "./deployment.js";

const restricted = deployment({
  egressAllowCidrs: ["10.1.0.0/16", "fd00:1::/32"],
  egressAllowHosts: ["pypi.org", "*.pythonhosted.org", "*.example.com"],
});

function problemsOf(edit: unknown, policy = restricted): string[] {
  try {
    validatePolicyEdit(edit, policy, ["standard"]);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(SandpoolError);
    expect((error as SandpoolError).status).toBe(422);
    return (error as SandpoolError).message.split("; ");
  }
}

describe("the deployment's egress lists", () => {
  it("default to no exceptions and any host", () => {
    const parsed = deploymentPolicySchema.parse({ allowedImages: ["a"], defaultImage: "a" });
    expect(parsed.egressAllowCidrs).toEqual([]);
    expect(parsed.egressAllowHosts).toEqual([]);
  });
  it("refuse what is not a CIDR range or a host pattern", () => {
    const parsed = deploymentPolicySchema.safeParse({
      allowedImages: ["a"],
      defaultImage: "a",
      egressAllowCidrs: ["10.0.0.0/33"],
      egressAllowHosts: ["*.*.example.com"],
    });
    expect(parsed.success).toBe(false);
    const messages = parsed.error!.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    expect(messages.join("\n")).toMatch(/egressAllowCidrs\.0: '10\.0\.0\.0\/33' is not a CIDR range/);
    expect(messages.join("\n")).toMatch(/egressAllowHosts\.0: .* is not a host name/);
  });
});

describe("a workspace row's egress lists, on write", () => {
  it("accepts ranges inside the deployment's and hosts it covers", () => {
    expect(
      problemsOf({
        egressAllowCidrs: ["10.1.2.0/24", "fd00:1:2::/48"],
        egressAllowHosts: ["pypi.org", "files.pythonhosted.org", "*.api.example.com"],
      }),
    ).toEqual([]);
    expect(problemsOf({ egressAllowCidrs: [] })).toEqual([]);
    expect(problemsOf({ egressAllowCidrs: null, egressAllowHosts: null })).toEqual([]);
  });

  it("refuses ranges outside the deployment's, naming each", () => {
    expect(problemsOf({ egressAllowCidrs: ["10.0.0.0/8", "10.1.0.0/16", "169.254.169.254/32"] })).toEqual([
      "egressAllowCidrs: '10.0.0.0/8' is not within the deployment's egressAllowCidrs (10.1.0.0/16, fd00:1::/32)",
      "egressAllowCidrs: '169.254.169.254/32' is not within the deployment's egressAllowCidrs (10.1.0.0/16, fd00:1::/32)",
    ]);
    expect(problemsOf({ egressAllowCidrs: ["10.1.0.0/16"] }, deployment())).toEqual([
      "egressAllowCidrs: '10.1.0.0/16' is not within the deployment's egressAllowCidrs (none)",
    ]);
  });

  it("refuses hosts the deployment does not cover, and an empty list (any host) under a restricted one", () => {
    expect(problemsOf({ egressAllowHosts: ["evil.example", "*.org", "pythonhosted.org"] })).toEqual([
      "egressAllowHosts: 'evil.example' is not covered by the deployment's egressAllowHosts",
      "egressAllowHosts: '*.org' is not covered by the deployment's egressAllowHosts",
      "egressAllowHosts: 'pythonhosted.org' is not covered by the deployment's egressAllowHosts",
    ]);
    expect(problemsOf({ egressAllowHosts: [] })).toEqual([
      "egressAllowHosts: an empty list allows any host, wider than the deployment's list",
    ]);
  });

  it("under a deployment that allows any host, any list is a narrowing", () => {
    expect(problemsOf({ egressAllowHosts: ["anything.example", "*.org"] }, deployment())).toEqual([]);
    expect(problemsOf({ egressAllowHosts: [] }, deployment())).toEqual([]);
  });

  it("refuses malformed entries with the schema's reason", () => {
    const problems = problemsOf({ egressAllowCidrs: ["10.1.0.0"], egressAllowHosts: ["10.1.0.1"] });
    expect(problems.join("\n")).toMatch(/egressAllowCidrs\.0: '10\.1\.0\.0' is not a CIDR range/);
    expect(problems.join("\n")).toMatch(/egressAllowHosts\.0: '10\.1\.0\.1' is an address/);
  });
});

describe("the effective egress lists", () => {
  it("without a row: the deployment's", () => {
    expect(effectivePolicy("w", restricted, undefined)).toMatchObject({
      egressAllowed: true,
      egressAllowCidrs: ["10.1.0.0/16", "fd00:1::/32"],
      egressAllowHosts: ["pypi.org", "*.pythonhosted.org", "*.example.com"],
    });
  });

  it("a row's lists replace them", () => {
    expect(
      effectivePolicy("w", restricted, { egressAllowCidrs: ["10.1.2.0/24"], egressAllowHosts: ["pypi.org"] }),
    ).toMatchObject({
      egressAllowed: true,
      egressAllowCidrs: ["10.1.2.0/24"],
      egressAllowHosts: ["pypi.org"],
    });
    expect(effectivePolicy("w", restricted, { egressAllowCidrs: [] }).egressAllowCidrs).toEqual([]);
  });

  it("a row written before the deployment narrowed keeps only what the deployment still covers", () => {
    const effective = effectivePolicy("w", restricted, {
      egressAllowCidrs: ["10.0.0.0/8", "10.1.5.0/24"],
      egressAllowHosts: ["evil.example", "pypi.org"],
    });
    expect(effective).toMatchObject({
      egressAllowed: true,
      egressAllowCidrs: ["10.1.5.0/24"],
      egressAllowHosts: ["pypi.org"],
    });
  });

  it("a host list narrowed to nothing withdraws egress instead of meaning any host", () => {
    const effective = effectivePolicy("w", restricted, { egressAllowHosts: ["evil.example"] });
    expect(effective.egressAllowed).toBe(false);
    expect(effective.egressAllowHosts).toEqual([]);
    expect(effectivePolicy("w", restricted, { egressAllowHosts: [] }).egressAllowed).toBe(false);
  });

  it("under a deployment that allows any host, the row's list is the list", () => {
    expect(effectivePolicy("w", deployment(), { egressAllowHosts: ["a.example"] })).toMatchObject({
      egressAllowed: true,
      egressAllowHosts: ["a.example"],
    });
  });
});
