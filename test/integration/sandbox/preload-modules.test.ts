/**
 * `--preload-modules`: a new session's interpreter has imported the listed modules before
 * CreateSession answers, skips the missing ones, sets MPLBACKEND=Agg and leaves no names in
 * the user's namespace. `wave` and `fractions` stand in for pandas: standard library modules
 * the driver itself never imports, so finding them loaded proves the preload ran.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

const PROBE = [
  "import os, sys",
  "print(sorted(m for m in ('wave', 'fractions', 'colorsys') if m in sys.modules))",
  "print(os.environ.get('MPLBACKEND'))",
  "print('__sandpool_preload' in globals())",
  // matplotlib's cache and config go beside the workspace, not in it (HOME is the workspace).
  "d = os.environ.get('MPLCONFIGDIR')",
  "print(d is None or (os.path.isdir(d) and not d.startswith(os.getcwd())))",
].join("\n");

async function probe(sandbox: TestSandbox, sessionId: string): Promise<string[]> {
  const result = await sandbox.client.run(sessionId, "code_execution", { code: PROBE });
  expect(result.stderr).toBe("");
  expect(result.return_code).toBe(0);
  return result.stdout.trim().split("\n");
}

describe("preloadModules", () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ preloadModules: ["wave", "no_such_module_sandpool", "fractions"] });
  });
  afterAll(() => sandbox.close());

  it("imports the listed modules before the session is answered, skipping missing ones", async () => {
    const id = await newSession(sandbox.client);
    expect(await probe(sandbox, id)).toEqual(["['fractions', 'wave']", "Agg", "False", "True"]);
    // The workspace a lease starts from is empty, whatever the preload wrote.
    const listed = await sandbox.client.listFiles(id);
    expect(JSON.stringify(listed.body)).not.toMatch(/matplotlib|\.cache|\.config/);
  });
});

describe("without preloadModules", () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox();
  });
  afterAll(() => sandbox.close());

  it("imports nothing beyond the driver's own modules", async () => {
    const id = await newSession(sandbox.client);
    expect(await probe(sandbox, id)).toEqual(["[]", "None", "False", "True"]);
  });
});
