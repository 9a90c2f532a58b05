/** Error bodies: a refused input lists its problems (`detail.problems`), every other error has none. */
import { describe, expect, it } from "vitest";
import { malformed, SandpoolError } from "../../../src/contract/error-codes.js";
import { createSessionRequest, issueProblems } from "../../../src/contract/schemas.js";

describe("error bodies", () => {
  it("lists every problem of a refused input, the message joining them", () => {
    expect(malformed(["a: too big", "b: missing"]).toBody()).toEqual({
      detail: {
        code: "request.malformed",
        message: "a: too big; b: missing",
        problems: ["a: too big", "b: missing"],
      },
    });
  });

  it("names each schema issue with its path", () => {
    const parsed = createSessionRequest.safeParse({ idle_timeout_seconds: "soon", max_lifetime_seconds: -1 });
    expect(parsed.success).toBe(false);
    const problems = issueProblems(parsed.error!);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^idle_timeout_seconds: /);
    expect(problems[1]).toMatch(/^max_lifetime_seconds: /);
  });

  it("gives a malformed input raised with a message alone that one problem, and other codes none", () => {
    expect(new SandpoolError("request.malformed", "limit must be >= 1").toBody().detail.problems).toEqual([
      "limit must be >= 1",
    ]);
    expect(new SandpoolError("session.not_found", "no such session").toBody()).toEqual({
      detail: { code: "session.not_found", message: "no such session" },
    });
  });
});
