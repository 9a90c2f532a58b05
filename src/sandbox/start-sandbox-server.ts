/** Builds and starts one sandbox server: its session registry, reaper and HTTP listener. */
import { mkdir, realpath } from "node:fs/promises";
import type { Logger } from "pino";
import { listen, type RunningServer } from "../http/common/listen.js";
import { type SandboxConfigInput, sandboxConfigSchema } from "./config.js";
import { createSandboxApp } from "./http/sandbox-app.js";
import { SessionRegistry } from "./sessions/session-registry.js";

export interface SandboxServer extends RunningServer {
  sessions: SessionRegistry;
}

export async function startSandboxServer(input: SandboxConfigInput, log: Logger): Promise<SandboxServer> {
  const parsed = sandboxConfigSchema.parse(input);
  await mkdir(parsed.root, { recursive: true, mode: 0o700 });
  const config = { ...parsed, root: await realpath(parsed.root) };
  const sessions = new SessionRegistry(config, log);
  const app = createSandboxApp(config, sessions, log);
  const running = await listen(app, {
    host: config.host,
    port: config.port,
    requestTimeoutMs: (config.maxExecTimeoutSeconds + 60) * 1000,
  });
  sessions.startReaper();
  return {
    ...running,
    sessions,
    close: async () => {
      // Stop accepting first, then end the sessions so calls still running return.
      const closing = running.close();
      await sessions.close();
      await closing;
    },
  };
}
