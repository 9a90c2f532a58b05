/**
 * A gvisor pool's sandbox is the same hardened container as a container pool's (no network,
 * no capabilities but the two the server needs, read-only root, limits, the code's uid), on
 * gVisor's runtime: the spec differs in HostConfig.Runtime, the isolation label and the host's
 * pids limit (gVisor's own tasks count there; user code's cap inside is the same).
 */
import { describe, expect, it } from "vitest";
import type { Isolation } from "../../../src/policy-schema/isolation-levels.js";
import {
  buildContainerSpec,
  GVISOR_HOST_PIDS_PER_TASK,
  LABELS,
} from "../../../src/runtime/docker/container-spec.js";
import { dockerRuntimeOptionsSchema } from "../../../src/runtime/docker/docker-runtime-options.js";
import { specInput } from "../../support/container-spec-input.js";

function specFor(isolation: Isolation | undefined, settings: Record<string, unknown> = {}) {
  const options = dockerRuntimeOptionsSchema.parse({
    hosts: ["unix:///var/run/docker.sock"],
    deployment: "test",
    ...settings,
  });
  return buildContainerSpec(options, specInput(options, isolation === undefined ? {} : { isolation }));
}

describe("isolation in the container spec", () => {
  it("runs a container pool on the engine's default runtime, labelled container", () => {
    const spec = specFor(undefined);
    expect(spec.HostConfig?.Runtime).toBeUndefined();
    expect(spec.Labels?.[LABELS.isolation]).toBe("container");
    expect(specFor("container")).toEqual(spec);
  });

  it("runs a gvisor pool on runtime.docker.gvisorRuntime (default runsc), every hardening kept", () => {
    const plain = specFor("container");
    const gvisor = specFor("gvisor");
    expect(gvisor.HostConfig?.Runtime).toBe("runsc");
    expect(gvisor.Labels?.[LABELS.isolation]).toBe("gvisor");
    const { Runtime: _runtime, PidsLimit: hostPids, ...gvisorHost } = gvisor.HostConfig!;
    const { PidsLimit: plainPids, ...plainHost } = plain.HostConfig!;
    expect({ ...gvisor, HostConfig: gvisorHost, Labels: plain.Labels }).toEqual({
      ...plain,
      HostConfig: plainHost,
    });
    expect(plainPids).toBe(256);
    expect(hostPids).toBe(256 * GVISOR_HOST_PIDS_PER_TASK);
    expect(gvisorHost).toMatchObject({
      Privileged: false,
      CapDrop: ["ALL"],
      CapAdd: ["SETUID", "SETGID"],
      SecurityOpt: ["no-new-privileges"],
      ReadonlyRootfs: true,
      NetworkMode: "none",
      Binds: [],
    });
  });

  it("takes the gVisor runtime's name from the settings, and keeps a container pool on runtime.docker.runtime", () => {
    expect(specFor("gvisor", { gvisorRuntime: "runsc-kvm" }).HostConfig?.Runtime).toBe("runsc-kvm");
    expect(specFor("container", { runtime: "crun" }).HostConfig?.Runtime).toBe("crun");
    expect(specFor("gvisor", { runtime: "crun" }).HostConfig?.Runtime).toBe("runsc");
  });
});
