/**
 * The start-up probe's sandbox id: replicas that start together probe at once, and two probes
 * of one id would share (and clear) one socket directory and one container name. Seen in CI: a
 * replica's probe failed with "bind source path does not exist" while another replica's probe
 * of the same millisecond recreated that directory.
 */
import { describe, expect, it } from "vitest";
import type { SandboxClient } from "../../../src/forward/sandbox-client.js";
import type { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { probeIsolation } from "../../../src/runtime/docker/isolation-check.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";

const POOL: PoolSpec = {
  name: "default",
  image: "img",
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 1,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 1_000,
};

describe("probeIsolation's sandbox", () => {
  it("has an id of its own for every probe, even of the same millisecond, as long as any sandbox's", async () => {
    const ids: string[] = [];
    const runtime = {
      start: async ({ sandboxId }: { sandboxId: string }) => {
        ids.push(sandboxId);
        throw new Error("stop here");
      },
    } as unknown as DockerRuntime;
    const probes = Array.from({ length: 50 }, () =>
      probeIsolation(runtime, {} as SandboxClient, POOL, 1_000).catch((error: Error) => error.message),
    );
    expect(await Promise.all(probes)).toEqual(Array(50).fill("stop here"));
    expect(new Set(ids).size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^probe[0-9a-f]{19}$/);
  });
});
