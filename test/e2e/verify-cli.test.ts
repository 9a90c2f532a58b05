/**
 * `sandpool verify` as an operator runs it (the built CLI): its usage errors (exit 2), its
 * probe list, a deployment where the probes' weakness is real (`sandpool dev` on the process
 * runtime: sandboxes are the host's own processes, so /tmp, the process table and the
 * gateway's port are shared) failing with the probes named (exit 1), and `sandpool dev` with
 * Docker passing every probe. Needs `npm run build`; the Docker half needs the engine and
 * the sandbox image.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requireBuiltCli, runCli, startCliServer } from "../support/cli.js";
import { type DevCliGateway, freePort, startDevCliGateway } from "../support/dev-cli-gateway.js";
import { dockerAvailable, dockerImageAvailable, requireService } from "../support/require-service.js";

beforeAll(() => requireBuiltCli());

interface VerifyJson {
  probes: { name: string; outcome: "pass" | "fail"; evidence: string }[];
}

const token = async (dataDir: string, workspace: string) => {
  const minted = await runCli(["token", "--workspace", workspace, "--data-dir", dataDir]);
  expect(minted.code, minted.stderr).toBe(0);
  return minted.stdout.trim();
};

describe("sandpool verify: usage", () => {
  it("explains itself and lists at least 20 probes, each with its claim", async () => {
    const help = await runCli(["verify", "--help"]);
    expect(help.code).toBe(0);
    for (const flag of ["--url", "--token", "--other-token", "--admin-token", "--json", "--only", "--list"])
      expect(help.stdout).toContain(flag);
    expect(help.stdout).toMatch(/Exit codes: 0 every probe passed, 1 a probe failed/);
    const list = await runCli(["verify", "--list"]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(20);
    expect(list.stdout).toMatch(/^processes\.zombie-leader-thread\s+\S/m);
    expect(list.stdout).toMatch(/^server\.socket\s+\S/m);
  });

  it.each([
    [["verify", "--other-token", "b"], /no token: pass --token/],
    [["verify", "--token", "a"], /no --other-token/],
    [["verify", "--token", "a", "--other-token", "a"], /must name another workspace/],
    [["verify", "--token", "a", "--other-token", "b", "--only", "files.tmp,nope"], /no probe named nope/],
    [["verify", "--token", "a", "--other-token", "b", "--url", "ftp://x"], /must be an http/],
    [["verify", "--bogus"], /unknown option/],
  ])("refuses bad usage with exit 2: %s", async (args, message) => {
    const result = await runCli(args, { env: { SANDPOOL_TOKEN: "", SANDPOOL_ADMIN_TOKEN: "" } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it("says once that the gateway cannot be reached, exit 1, and prints no report", async () => {
    const port = await freePort();
    const result = await runCli(
      ["verify", "--url", `http://127.0.0.1:${port}`, "--token", "a", "--other-token", "b", "--json"],
      { timeoutMs: 60_000 },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^sandpool verify: cannot reach the gateway at http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/m,
    );
    expect(result.stdout).toBe("");
  });
});

describe("sandpool verify against a deployment that does not isolate (dev, process runtime)", () => {
  let dev: DevCliGateway;
  beforeAll(async () => {
    dev = await startDevCliGateway("verify-weak");
  }, 120_000);
  afterAll(() => dev?.stop());

  it("fails, naming each probe whose weakness is there, and plants nothing on the host", async () => {
    const result = await runCli(
      [
        ...["verify", "--url", dev.url, "--token", await token(dev.dataDir, "weak-one")],
        ...["--other-token", await token(dev.dataDir, "weak-two"), "--admin-token", dev.adminToken],
      ],
      { timeoutMs: 300_000 },
    );
    expect(result.code, result.stderr).toBe(1);
    const failed = (name: string) => new RegExp(`^FAIL\\s+${name.replace(".", "\\.")}\\s`, "m");
    // /tmp, the process table and the gateway's port are the host's.
    expect(result.stdout).toMatch(failed("files.tmp"));
    expect(result.stdout).toMatch(failed("processes.none-left"));
    expect(result.stdout).toMatch(failed("network.gateway-and-host"));
    // Probes that would start processes or write everywhere refuse to, on a host.
    expect(result.stdout).toMatch(/^FAIL\s+processes\.zombie-leader-thread\s+not a sandbox/m);
    expect(result.stdout).toMatch(/^FAIL\s+resources\.fork-bomb\s+could not run: .*not a sandbox/m);
    expect(result.stdout).toMatch(/^\d+ of \d+ probes failed: .*files\.tmp/m);
    // What it planted in the host's /tmp was cleaned up.
    expect((await readdir("/tmp")).filter((name) => /^\.?spv[0-9a-f]{8}x/.test(name))).toEqual([]);
  }, 300_000);
});

const docker =
  (await requireService("Docker", dockerAvailable, { start: "bash scripts/start-docker.sh" })) &&
  (await requireService("the sandbox image", () => dockerImageAvailable("sandpool/sandbox:dev"), {
    start: "npm run build:sandbox-image",
  }));

describe.skipIf(!docker)("sandpool verify against dev with Docker", () => {
  let dataDir: string;
  let stop: () => Promise<unknown>;
  let url: string;
  let adminToken: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "sandpool-verify-dev-e2e-"));
    const port = await freePort();
    const server = await startCliServer(
      ["dev", "--runtime", "docker", "--port", String(port), "--data-dir", dataDir, "--min-idle", "1"],
      /^SANDPOOL_ADMIN_TOKEN=(\S+)/,
      { timeoutMs: 120_000, env: { SANDPOOL_LOG_LEVEL: "warn" } },
    );
    url = `http://127.0.0.1:${port}`;
    adminToken = server.url;
    stop = () => server.stop(30_000);
  }, 180_000);
  afterAll(async () => {
    await stop?.();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("passes every probe", async () => {
    const result = await runCli(
      [
        ...["verify", "--url", url, "--token", await token(dataDir, "dev-one")],
        ...["--other-token", await token(dataDir, "dev-two"), "--admin-token", adminToken, "--json"],
      ],
      { timeoutMs: 300_000 },
    );
    const report = JSON.parse(result.stdout) as VerifyJson;
    expect(report.probes.filter((probe) => probe.outcome === "fail")).toEqual([]);
    expect(result.code).toBe(0);
    expect(report.probes.length).toBeGreaterThanOrEqual(20);
  }, 300_000);
});
