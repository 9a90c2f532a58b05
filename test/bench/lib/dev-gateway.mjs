/** The built `sandpool dev` (dist/cli/main.js) for benches: start, tokens, memory. */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort } from "./client.mjs";
import { spawnTracked, stopProcess, tailOf, waitForLine } from "./process.mjs";
import { childrenMatching, rssMb } from "./rss.mjs";
import { nowMs, progress } from "./timing.mjs";

export const cliPath = fileURLToPath(new URL("../../../dist/cli/main.js", import.meta.url));
const TOKEN_LINE = /^SANDPOOL_TOKEN=(\S+)/;

/** A dev gateway whose pool keeps a fixed minimum (no demand): its cold leases stay cold. */
export async function startDev({ dataDir, python, minIdle, maxTotal, timeoutMs, runtime = "process" }) {
  const port = await freePort();
  const started = nowMs();
  const child = spawnTracked(
    process.execPath,
    [
      cliPath,
      "dev",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--data-dir",
      dataDir,
      "--python",
      python,
      "--min-idle",
      String(minIdle),
      "--max-total",
      String(maxTotal),
      "--runtime",
      runtime,
    ],
    { env: { ...process.env, SANDPOOL_POOL_DEMAND: "false" } },
  );
  const log = tailOf(child);
  const match = await waitForLine(child, TOKEN_LINE, timeoutMs);
  child.stdout.resume();
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    token: match[1],
    startMs: nowMs() - started,
    log,
    /** RSS (MB) of the gateway's process and of its database's (the PGlite host). */
    async rss() {
      const [database] = await childrenMatching(child.pid, "pglite-host.mjs");
      const gatewayMb = await rssMb(child.pid);
      const databaseMb = database === undefined ? Number.NaN : await rssMb(database);
      return { gatewayMb, databaseMb, totalMb: gatewayMb + databaseMb };
    },
    stop: async () => {
      const exit = await stopProcess(child, 15_000);
      if (exit.forced) progress(`warning: dev gateway needed SIGKILL\n${log()}`);
    },
  };
}

/** Bearer tokens for `count` workspaces, minted with the dev key in `dataDir`. */
export function mintDevTokens(dataDir, count) {
  return Array.from({ length: count }, (_, i) =>
    execFileSync(
      process.execPath,
      [cliPath, "token", "--workspace", `bench-${i}`, "--data-dir", dataDir, "--ttl", "3600"],
      { encoding: "utf8", timeout: 30_000 },
    ).trim(),
  );
}
