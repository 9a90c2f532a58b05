import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { ceilingFields, validatePolicyEdit } from "../../../src/policy/workspace-policy-fields.js";
import { deployment } from "./deployment.js";

const classes = ["standard", "large"];

function refusal(input: unknown, d = deployment()): SandpoolError {
  try {
    validatePolicyEdit(input, d, classes);
  } catch (error) {
    expect(error).toBeInstanceOf(SandpoolError);
    return error as SandpoolError;
  }
  throw new Error(`expected ${JSON.stringify(input)} to be refused`);
}

describe("validatePolicyEdit", () => {
  it("accepts an empty edit", () => {
    expect(validatePolicyEdit({}, deployment(), classes)).toEqual({});
  });

  it("accepts an edit that narrows every field and returns it as written", () => {
    const edit = {
      enabled: false,
      allowedImages: ["img/b", "img/c"],
      defaultImage: "img/c",
      allowedTools: ["code_execution"],
      execTimeoutCeilingSeconds: 30,
      idleTimeoutCeilingSeconds: 60,
      maxLifetimeCeilingSeconds: 600,
      maxConcurrentSessions: 2,
      sessionsPerMinute: 5,
      execSecondsPerDay: 3600,
      maxFileBytes: 1000,
      resourceClass: "large",
      egressAllowed: false,
    };
    expect(validatePolicyEdit(edit, deployment(), classes)).toEqual(edit);
  });

  it("accepts nulls, which clear a narrowing", () => {
    const edit = Object.fromEntries(
      [
        "allowedImages",
        "defaultImage",
        "allowedTools",
        ...ceilingFields,
        "resourceClass",
        "egressAllowed",
      ].map((f) => [f, null]),
    );
    expect(validatePolicyEdit(edit, deployment(), classes)).toEqual(edit);
  });

  describe.each(ceilingFields)("%s", (field) => {
    const d = deployment();

    it("accepts a value equal to the deployment ceiling", () => {
      expect(validatePolicyEdit({ [field]: d[field] }, d, classes)).toEqual({ [field]: d[field] });
    });

    it("refuses a value above the ceiling with a 422 naming the field and both numbers", () => {
      const error = refusal({ [field]: d[field] + 1 }, d);
      expect(error.code).toBe("request.malformed");
      expect(error.status).toBe(422);
      expect(error.message).toContain(field);
      expect(error.message).toContain(String(d[field] + 1));
      expect(error.message).toContain(String(d[field]));
    });

    it.each([0, -1, 1.5, "10", true])("refuses the malformed value %j", (value) => {
      const error = refusal({ [field]: value }, d);
      expect(error.code).toBe("request.malformed");
      expect(error.message).toContain(field);
    });
  });

  it("refuses an image the deployment does not allow", () => {
    const error = refusal({ allowedImages: ["img/a", "img/evil"] });
    expect(error.message).toContain("allowedImages");
    expect(error.message).toContain("img/evil");
    expect(error.message).not.toContain("'img/a'");
  });

  it("refuses a tool the deployment does not allow", () => {
    const d = deployment({ allowedTools: ["code_execution"] });
    const error = refusal({ allowedTools: ["code_execution", "bash_code_execution"] }, d);
    expect(error.message).toContain("allowedTools");
    expect(error.message).toContain("bash_code_execution");
  });

  it("refuses a tool kind that does not exist", () => {
    expect(refusal({ allowedTools: ["rm_rf"] }).message).toContain("allowedTools");
  });

  it("refuses a default image outside the edit's own image list", () => {
    const error = refusal({ allowedImages: ["img/b"], defaultImage: "img/a" });
    expect(error.message).toContain("defaultImage");
    expect(error.message).toContain("img/a");
  });

  it("refuses a default image outside the deployment's list when the edit has none", () => {
    expect(refusal({ defaultImage: "img/evil" }).message).toContain("defaultImage");
  });

  it("accepts a default image the deployment allows when the edit has no list", () => {
    expect(validatePolicyEdit({ defaultImage: "img/c" }, deployment(), classes)).toEqual({
      defaultImage: "img/c",
    });
  });

  it("refuses a resource class without a pool, listing the known ones", () => {
    const error = refusal({ resourceClass: "gpu" });
    expect(error.message).toContain("resourceClass");
    expect(error.message).toContain("gpu");
    expect(error.message).toContain("standard, large");
  });

  it("refuses egress when the deployment does not allow it", () => {
    const d = deployment({ egressAllowed: false });
    expect(refusal({ egressAllowed: true }, d).message).toContain("egressAllowed");
    // Narrowing (false) is always fine.
    expect(validatePolicyEdit({ egressAllowed: false }, d, classes)).toEqual({ egressAllowed: false });
  });

  it("lists every problem of one edit in one refusal", () => {
    const d = deployment({ egressAllowed: false, allowedTools: ["code_execution"] });
    const error = refusal(
      {
        execTimeoutCeilingSeconds: 301,
        idleTimeoutCeilingSeconds: 1801,
        maxLifetimeCeilingSeconds: 14_401,
        maxConcurrentSessions: 11,
        sessionsPerMinute: 61,
        execSecondsPerDay: 86_401,
        maxFileBytes: 1_000_001,
        allowedImages: ["img/x", "img/y"],
        allowedTools: ["bash_code_execution"],
        defaultImage: "img/a",
        resourceClass: "gpu",
        egressAllowed: true,
      },
      d,
    );
    const problems = error.message.split("; ");
    expect(problems).toHaveLength(7 + 2 + 1 + 1 + 1 + 1);
    for (const field of ceilingFields) expect(error.message).toContain(`${field}:`);
    for (const text of [
      "'img/x'",
      "'img/y'",
      "bash_code_execution",
      "defaultImage",
      "gpu",
      "egressAllowed",
    ]) {
      expect(error.message).toContain(text);
    }
  });

  it("refuses unknown fields, naming them, rather than ignoring them", () => {
    const error = refusal({ maxConcurrentSessions: 2, maxConcurentSessions: 1 });
    expect(error.code).toBe("request.malformed");
    expect(error.message).toContain("maxConcurentSessions");
  });

  it("refuses a deployment-only field (a row cannot set defaults)", () => {
    expect(refusal({ defaultExecTimeoutSeconds: 5 }).message).toContain("defaultExecTimeoutSeconds");
  });

  it.each([null, [], "enabled", 42])("refuses a body that is not an object: %j", (body) => {
    expect(refusal(body).code).toBe("request.malformed");
  });

  it("refuses empty strings for images and classes", () => {
    expect(refusal({ allowedImages: [""] }).message).toContain("allowedImages");
    expect(refusal({ defaultImage: "" }).message).toContain("defaultImage");
    expect(refusal({ resourceClass: "" }).message).toContain("resourceClass");
  });
});
