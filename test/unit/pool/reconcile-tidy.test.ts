/**
 * Listing a runtime has no side effect: reconciliation asks the runtime to tidy what the host
 * keeps beside its sandboxes (socket directories, egress proxies) after a complete listing
 * only. A partial one (an engine away) says nothing of what is gone there.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { reconcile } from "../../../src/pool/reconcile.js";
import {
  PartialListError,
  type RuntimeSandbox,
  type SandboxRuntime,
} from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";

const listed: RuntimeSandbox[] = [{ runtimeId: "r1", sandboxId: "s1", pool: "p", createdAt: Date.now() }];

function runtimeListing(list: () => Promise<RuntimeSandbox[]>) {
  const tidied: (readonly RuntimeSandbox[])[] = [];
  const runtime: SandboxRuntime = {
    kind: "docker",
    isolated: true,
    start: async () => {
      throw new Error("not started here");
    },
    destroy: async () => {},
    list,
    close: async () => undefined,
    tidy: async (sandboxes) => {
      tidied.push(sandboxes);
    },
  };
  return { runtime, tidied };
}

const reconcileWith = (runtime: SandboxRuntime) =>
  reconcile({
    runtime,
    store: new MemoryCoordinationStore(),
    pools: { list: () => [] },
    sessions: { end: async () => false },
    log: pino({ level: "silent" }),
    orphanGraceMs: 60_000,
  });

describe("reconciliation tidies the host after a complete listing only", () => {
  it("hands the complete listing to the runtime's tidy", async () => {
    const { runtime, tidied } = runtimeListing(async () => listed);
    await reconcileWith(runtime);
    expect(tidied).toEqual([listed]);
  });

  it("does not tidy on a partial listing", async () => {
    const { runtime, tidied } = runtimeListing(async () => {
      throw new PartialListError("an engine is away", listed);
    });
    await reconcileWith(runtime);
    expect(tidied).toEqual([]);
  });
});
