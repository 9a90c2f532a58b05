/**
 * Dev mode's memory at rest (issue 13: under 250 MB for the gateway and its database
 * together, sandboxes aside), read as `ps -o rss` reads it: the first start (which creates
 * the database) and a restart on the same data dir.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requireBuiltCli, resolvePython, startCliServer } from "../support/cli.js";
import { freePort } from "../support/dev-cli-gateway.js";

const LIMIT_MB = 250;

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

/** The PGlite host among `pid`'s children. */
async function databaseProcess(pid: number): Promise<number> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (parent !== pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes("pglite-host.mjs")) return Number(entry);
  }
  throw new Error(`no PGlite host among the children of ${pid}`);
}

let dataDir: string;
beforeAll(async () => {
  requireBuiltCli();
  dataDir = await mkdtemp(path.join(tmpdir(), "sandpool-dev-footprint-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe("sandpool dev at rest", () => {
  it(`holds under ${LIMIT_MB} MB, gateway and database together, on its first start and after a restart`, async () => {
    for (const start of ["first", "restart"]) {
      const server = await startCliServer(
        [
          ...["dev", "--runtime", "process", "--port", String(await freePort()), "--data-dir", dataDir],
          ...["--min-idle", "0", "--python", resolvePython()],
        ],
        /^SANDPOOL_ADMIN_TOKEN=(\S+)/,
        { timeoutMs: 90_000, env: { SANDPOOL_LOG_LEVEL: "warn" } },
      );
      try {
        // At rest: the start-up's garbage collected, nothing in flight.
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        const pid = server.process.pid!;
        const gateway = await rssMb(pid);
        const database = await rssMb(await databaseProcess(pid));
        expect({ start, total: Math.round(gateway + database) }).toEqual({
          start,
          total: expect.toSatisfy((mb: number) => mb < LIMIT_MB),
        });
      } finally {
        await server.stop(20_000);
      }
    }
  }, 240_000);
});
