/** Starts a real sandbox server on a free loopback port with a fresh root, for one suite. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import type { SandboxConfigInput } from "../../src/sandbox/config.js";
import { type SandboxServer, startSandboxServer } from "../../src/sandbox/start-sandbox-server.js";
import { ContractClient } from "./contract-client.js";

export interface TestSandbox {
  server: SandboxServer;
  client: ContractClient;
  root: string;
  close(): Promise<void>;
}

export async function startTestSandbox(overrides: Partial<SandboxConfigInput> = {}): Promise<TestSandbox> {
  const root = await mkdtemp(path.join(tmpdir(), "sandpool-sandbox-"));
  const server = await startSandboxServer(
    { host: "127.0.0.1", port: 0, root, interruptGraceMs: 500, ...overrides },
    pino({ level: "silent" }),
  );
  return {
    server,
    root: path.join(root),
    client: new ContractClient(server.url),
    close: async () => {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

export async function newSession(client: ContractClient, payload?: unknown): Promise<string> {
  const answer = await client.createSession(payload);
  if (answer.status !== 201) throw new Error(`CreateSession answered ${answer.status}: ${answer.text}`);
  return (answer.body as { session_id: string }).session_id;
}

/** True while a process with this pid exists. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export { waitFor } from "./wait-for.js";
