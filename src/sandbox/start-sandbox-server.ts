/** Builds and starts one sandbox server: its session registry, reaper and HTTP listener. */
import { mkdir, realpath } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import { listen, type RunningServer } from "../http/common/listen.js";
import { type SandboxConfigInput, sandboxConfigSchema } from "./config.js";
import { type EgressForwarder, startEgressForwarder } from "./egress-forwarder.js";
import { ListenerPause } from "./hibernate/listener-pause.js";
import { createSandboxApp } from "./http/sandbox-app.js";
import { SessionRegistry } from "./sessions/session-registry.js";
import { adoptCodeUser } from "./user-code/code-user.js";
import { bindAsDirectoryOwner } from "./user-code/socket-owner.js";

export interface SandboxServer extends RunningServer {
  sessions: SessionRegistry;
  /** The port on 127.0.0.1 that forwards to the egress proxy socket, when one is configured. */
  egressProxyPort?: number;
}

export async function startSandboxServer(input: SandboxConfigInput, log: Logger): Promise<SandboxServer> {
  const parsed = sandboxConfigSchema.parse(input);
  // First of all: every file the server makes is made as the code's uid (its socket aside: below).
  if (parsed.codeUser) adoptCodeUser(parsed.codeUser);
  await mkdir(parsed.root, { recursive: true, mode: 0o700 });
  const config = { ...parsed, root: await realpath(parsed.root) };
  const sessions = new SessionRegistry(config, log);
  // With a code user, the socket is its directory owner's (the gateway's), never the code's.
  const bindSocket =
    config.socket && config.codeUser
      ? bindAsDirectoryOwner(path.dirname(config.socket), config.codeUser)
      : undefined;
  const listenerPause = config.socket ? new ListenerPause(config.socket, log, bindSocket) : undefined;
  const app = createSandboxApp(config, sessions, log, listenerPause);
  const running = await listen(app, {
    host: config.host,
    port: config.port,
    socketPath: config.socket,
    bindSocket,
    requestTimeoutMs: (config.maxExecTimeoutSeconds + 60) * 1000,
  });
  listenerPause?.attach(running.server);
  let egress: EgressForwarder | undefined;
  if (config.egressProxySocket) {
    egress = await startEgressForwarder(
      { socketPath: config.egressProxySocket, port: config.egressProxyPort },
      log,
    ).catch(async (error: unknown) => {
      await running.close();
      throw error;
    });
  }
  sessions.startReaper();
  return {
    ...running,
    sessions,
    egressProxyPort: egress?.port,
    close: async () => {
      listenerPause?.close();
      await egress?.close();
      // Stop accepting first, then end the sessions so calls still running return.
      const closing = running.close();
      await sessions.close();
      await closing;
    },
  };
}
