/**
 * `console.enabled` (docs/console.md): on by default, /console is the console's route beside
 * the admin API (run from src/, where it is not built, it says so, and wants no token); off,
 * /console is an unknown route like any other (401 before 404).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";

let on: TestGateway;
let off: TestGateway;

beforeAll(async () => {
  [on, off] = await Promise.all([startTestGateway(), startTestGateway({ console: { enabled: false } })]);
});
afterAll(async () => {
  await Promise.all([on?.close(), off?.close()]);
});

describe("console.enabled", () => {
  it("serves /console by default", async () => {
    const answer = await fetch(`${on.url}/console/`);
    expect(answer.status).toBe(404);
    expect(await answer.text()).toMatch(/console is not built/);
  });

  it("turns /console into an unknown route when false", async () => {
    for (const target of ["/console", "/console/", "/console/app.js"]) {
      const answer = await fetch(`${off.url}${target}`);
      expect(answer.status, target).toBe(401);
    }
  });
});
