/**
 * A stand-in for the docker runtime in unit tests of the node's pools: starts, destroys and
 * lists containers in a map, so a test sees what runs and what was destroyed.
 */
import type { SandboxRuntime } from "../../src/runtime/sandbox-runtime.js";

export function standInEngine() {
  let next = 0;
  /** Running containers: runtime id -> sandbox id. */
  const running = new Map<string, string>();
  const destroyed: string[] = [];
  /** A new running container of `sandboxId` (`prefix` c: a start, r: a restore), as the runtime answers. */
  const run = (sandboxId: string, prefix = "c") => {
    next += 1;
    const runtimeId = `${prefix}${next}`;
    running.set(runtimeId, sandboxId);
    return { runtimeId, endpoint: `http://sandbox/${sandboxId}/${runtimeId}` };
  };
  const runtime = {
    recyclable: true,
    async start({ sandboxId }: { sandboxId: string }) {
      return run(sandboxId);
    },
    async destroy(runtimeId: string) {
      running.delete(runtimeId);
      destroyed.push(runtimeId);
    },
    async list() {
      return [...running].map(([runtimeId, sandboxId]) => ({ runtimeId, sandboxId, running: true }));
    },
  } as unknown as SandboxRuntime;
  return { runtime, running, destroyed, run };
}
