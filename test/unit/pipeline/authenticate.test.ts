import { describe, expect, it } from "vitest";
import { operations } from "../../../src/operations/registry.js";
import { authenticateCaller } from "../../../src/pipeline/steps/authenticate.js";
import { bearer, check, workspaceCaller } from "./fixtures.js";

const exec = operations.get("sessions.exec")!;
const healthz = operations.get("service.healthz")!;

describe("pipeline step authenticate", () => {
  it("verifies the bearer credential into the caller it speaks for", async () => {
    const caller = await authenticateCaller(check(), exec, {
      authorization: await bearer({ workspace: "ws-9" }),
    });
    expect(caller).toMatchObject({ workspace: "ws-9" });
  });

  it("refuses a missing or bad credential with 401, and a credential that keeps failing with 429", async () => {
    const deps = check();
    await expect(authenticateCaller(deps, exec, {})).rejects.toMatchObject({ code: "auth.missing" });
    const bad = { authorization: "Bearer not-a-token", address: "10.0.0.1" };
    let last: unknown;
    for (let i = 0; i < 30; i++) last = await authenticateCaller(deps, exec, bad).catch((error) => error);
    expect(last).toMatchObject({ code: "auth.rate_limited", status: 429 });
  });

  it("takes a caller authenticated already as it is, and asks nothing of an operation open to anyone", async () => {
    expect(await authenticateCaller(check(), exec, { caller: workspaceCaller })).toBe(workspaceCaller);
    expect(await authenticateCaller(check(), healthz, { authorization: "Bearer junk" })).toBeUndefined();
  });
});
