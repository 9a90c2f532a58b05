/**
 * Egress sandboxes outlive the replica that served their proxy socket: whichever replica
 * reconciles next takes the socket over, and closes the proxies of sandboxes gone.
 */
import type { Logger } from "pino";
import type { RuntimeSandbox } from "../sandbox-runtime.js";
import { attachEgressSocket, type SandboxEgress, socketAnswers } from "./sandbox-egress.js";
import type { SocketDirs } from "./socket-dirs.js";

export interface EgressTakeoverHost {
  egress: SandboxEgress | undefined;
  socketDirs: SocketDirs;
  /** Sandboxes being started here: their egress socket is open before their container exists. */
  starting: ReadonlySet<string>;
  log: Logger | undefined;
}

/**
 * Running egress sandboxes whose proxy socket nobody answers (the replica that served it is
 * gone) get it from this process. Called from the runtime's tidy(), so reconciliation heals them.
 */
export async function retakeEgress(
  host: EgressTakeoverHost,
  sandboxes: readonly RuntimeSandbox[],
): Promise<void> {
  const { egress, socketDirs, starting, log } = host;
  if (!egress) return;
  // Proxies of sandboxes gone (destroyed by another replica, or lost a takeover race) close.
  const running = new Set(
    sandboxes.filter((s) => s.egress === true && s.running !== false).map((s) => s.sandboxId),
  );
  for (const sandboxId of egress.served()) {
    if (!running.has(sandboxId) && !starting.has(sandboxId)) await egress.close(sandboxId);
  }
  for (const sandbox of sandboxes) {
    if (sandbox.egress !== true || sandbox.running === false || egress.serves(sandbox.sandboxId)) continue;
    const socketPath = socketDirs.egressSocketOf(sandbox.sandboxId);
    if (await socketAnswers(socketPath)) continue;
    try {
      const taken = await socketDirs.whileUnsealed(sandbox.sandboxId, () =>
        attachEgressSocket(egress, sandbox.sandboxId, socketPath),
      );
      if (taken) log?.info({ sandbox: sandbox.sandboxId }, "took over an egress sandbox's proxy socket");
    } catch (error) {
      log?.warn({ sandbox: sandbox.sandboxId, err: error }, "could not take over an egress proxy socket");
    }
  }
}
