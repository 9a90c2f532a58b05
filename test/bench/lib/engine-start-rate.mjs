/**
 * The Docker engine's own container start rate on this machine: the ceiling of any session
 * churn that needs a fresh container per session. `parallel` workers each loop create ->
 * start -> remove (forced, as the docker runtime removes a sandbox) for `durationMs`, with
 * the docker runtime's own container spec (src/runtime/docker/container-spec.ts: its
 * hardening, no network, its limits), its command replaced by `sleep`: what the engine
 * costs, without the sandbox server's start-up.
 */
import { randomBytes } from "node:crypto";
import { chmod } from "node:fs/promises";
import Docker from "dockerode";
import { buildContainerSpec } from "../../../dist/runtime/docker/container-spec.js";
import { dockerRuntimeOptionsSchema } from "../../../dist/runtime/docker/docker-runtime-options.js";
import { makeTempDir, onCleanup } from "./process.mjs";
import { removeLabelledContainers } from "./remove-containers.mjs";
import { median } from "./stats.mjs";
import { nowMs } from "./timing.mjs";

/**
 * `{ parallel, starts, elapsedMs, perSecond, startMs: p50 of create + start, removeMs: p50 }`
 * for `parallel` workers over `durationMs`.
 */
export async function measureEngineStartRate(image, { parallel, durationMs }) {
  const docker = new Docker();
  const deployment = `bench-engine-${randomBytes(4).toString("hex")}`;
  const socketDir = await makeTempDir("sandpool-bench-engine-");
  await chmod(socketDir, 0o777);
  const options = dockerRuntimeOptionsSchema.parse({
    deployment,
    socketDir,
    execTimeoutCeilingSeconds: 300,
    maxFileBytes: 16 * 1024 * 1024,
  });
  const unregister = onCleanup(() => removeLabelledContainers(deployment));
  const startMs = [];
  const removeMs = [];
  let next = 0;
  let failure;
  let elapsedMs = 0;
  const started = nowMs();
  const deadline = started + durationMs;
  try {
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (failure === undefined && nowMs() < deadline) {
          const spec = buildContainerSpec(options, {
            sandboxId: `engine-${next++}`,
            pool: "bench-engine",
            image,
            resourceClass: options.resourceClasses.standard,
            resourceClassName: "standard",
            engineHost: "local",
            socketDir,
            egress: false,
          });
          spec.Cmd = ["sleep", "3600"];
          try {
            const t0 = nowMs();
            const container = await docker.createContainer(spec);
            await container.start();
            const t1 = nowMs();
            await container.remove({ force: true, v: true });
            startMs.push(t1 - t0);
            removeMs.push(nowMs() - t1);
          } catch (error) {
            // Every worker stops at its next turn; what was left is removed below.
            failure ??= error;
          }
        }
      }),
    );
    elapsedMs = nowMs() - started;
    if (failure !== undefined) throw failure;
  } finally {
    await removeLabelledContainers(deployment).catch(() => undefined);
    unregister();
  }
  return {
    parallel,
    starts: startMs.length,
    elapsedMs,
    perSecond: startMs.length / (elapsedMs / 1000),
    startMs: median(startMs),
    removeMs: median(removeMs),
  };
}
