/**
 * docker-compose.yml as Compose itself reads it: `config -q` validates the file against the
 * schema of the Compose on this machine (v1 `docker-compose` or the v2 `docker compose`
 * plugin). Without either, the test skips with a loud line, or fails under CI=true (.ci/run
 * installs docker-compose). Compose v1 also insists that every build context exists, and the
 * sandbox image's context is the generated server bundle.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { requireService } from "../../support/require-service.js";
import { composeEnv, sandboxBundleDir } from "./compose-file.js";
import { repoPath } from "./deploy-files.js";

const run = promisify(execFile);

async function findCompose(): Promise<string[]> {
  for (const command of [["docker-compose"], ["docker", "compose"]]) {
    try {
      await run(command[0]!, [...command.slice(1), "version"], { timeout: 15_000 });
      return command;
    } catch {
      // not this one
    }
  }
  throw new Error("neither `docker-compose` nor `docker compose` is on PATH");
}

let compose: string[] = [];
const available =
  (await requireService(
    "docker-compose",
    async () => {
      compose = await findCompose();
      return true;
    },
    { start: "apt-get install docker-compose (as .ci/run does)" },
  )) &&
  (await requireService(
    "the sandbox bundle (the sandbox image's build context)",
    async () => {
      if (!existsSync(sandboxBundleDir()))
        throw new Error(`${path.relative(repoPath(), sandboxBundleDir())} does not exist`);
      return true;
    },
    { start: "npm run build:sandbox-bundle" },
  ));

describe("docker-compose.yml, as Compose reads it", () => {
  it.skipIf(!available)("passes `config -q`, the monitoring profile included", async () => {
    const args = [
      ...compose.slice(1),
      "-f",
      repoPath("docker-compose.yml"),
      "--profile",
      "monitoring",
      "config",
      "-q",
    ];
    const result = await run(compose[0]!, args, {
      cwd: repoPath(),
      env: { ...process.env, ...composeEnv },
      timeout: 60_000,
    }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code?: number; stderr?: string; message: string }) => ({
        code: error.code ?? 1,
        stderr: error.stderr || error.message,
      }),
    );
    expect(result, `${compose.join(" ")} ${args.join(" ")}`).toEqual({ code: 0, stderr: "" });
  });
});
