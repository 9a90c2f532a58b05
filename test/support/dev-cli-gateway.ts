/**
 * A real `sandpool dev` from the built CLI for the operator commands' end-to-end tests:
 * process runtime, no warm sandboxes, its own data directory, on a free loopback port, with
 * the admin and workspace tokens its banner prints.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { requireBuiltCli, resolvePython, startCliServer } from "./cli.js";

export interface DevCliGateway {
  url: string;
  /** Its data directory: a scratch place for a test's own files too, removed on stop. */
  dataDir: string;
  adminToken: string;
  /** Workspace `dev`'s token. */
  devToken: string;
  stop(): Promise<void>;
}

/** A port nothing listens on right now (the OS's pick, released at once). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startDevCliGateway(name: string): Promise<DevCliGateway> {
  requireBuiltCli();
  const dataDir = await mkdtemp(path.join(tmpdir(), `sandpool-${name}-e2e-`));
  const port = await freePort();
  // The first start in a fresh data directory runs PGlite's initdb: allow for a slow machine.
  const server = await startCliServer(
    [
      ...["dev", "--runtime", "process", "--port", String(port), "--data-dir", dataDir],
      ...["--min-idle", "0", "--python", resolvePython()],
    ],
    /^SANDPOOL_ADMIN_TOKEN=(\S+)/,
    { timeoutMs: 90_000, env: { SANDPOOL_LOG_LEVEL: "warn" } },
  ).catch(async (error: unknown) => {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  });
  return {
    url: `http://127.0.0.1:${port}`,
    dataDir,
    adminToken: server.url,
    devToken: /^SANDPOOL_TOKEN=(\S+)$/m.exec(server.output().stdout)?.[1] ?? "",
    stop: async () => {
      await server.stop(20_000);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
