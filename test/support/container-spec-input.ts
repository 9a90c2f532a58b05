/**
 * What the docker runtime hands buildContainerSpec for one sandbox, for the spec's tests: a
 * standard-class sandbox of pool `py` on the local engine, no egress; `overrides` change any part.
 */
import type { ContainerSpecInput } from "../../src/runtime/docker/container-spec.js";
import type { DockerRuntimeOptions } from "../../src/runtime/docker/docker-runtime-options.js";

export function specInput(
  options: DockerRuntimeOptions,
  overrides: Partial<ContainerSpecInput> = {},
): ContainerSpecInput {
  return {
    sandboxId: "sbx1",
    pool: "py",
    image: "sandpool/sandbox:dev",
    resourceClass: options.resourceClasses.standard!,
    resourceClassName: "standard",
    engineHost: "unix:///var/run/docker.sock",
    socketDir: "/run/sandpool/test/sbx1",
    egress: false,
    ...overrides,
  };
}
