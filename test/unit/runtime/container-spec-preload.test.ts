/**
 * runtime.docker.preloadModules reaches every sandbox's server as `--preload-modules`, so
 * pooled sessions import the heavy modules at warm-up; an empty list sends no flag.
 */
import { describe, expect, it } from "vitest";
import { buildContainerSpec } from "../../../src/runtime/docker/container-spec.js";
import { dockerRuntimeOptionsSchema } from "../../../src/runtime/docker/docker-runtime-options.js";

const input = {
  sandboxId: "sbx1",
  pool: "datascience",
  image: "sandpool/sandbox-datascience:dev",
  resourceClassName: "standard",
  engineHost: "unix:///var/run/docker.sock",
  socketDir: "/run/sandpool/test/sbx1",
  egress: false,
};

function commandFor(settings: Record<string, unknown>): string[] {
  const options = dockerRuntimeOptionsSchema.parse({
    hosts: ["unix:///var/run/docker.sock"],
    deployment: "test",
    ...settings,
  });
  const spec = buildContainerSpec(options, { ...input, resourceClass: options.resourceClasses.standard! });
  return spec.Cmd as string[];
}

describe("preloadModules in the container command", () => {
  it("preloads numpy, pandas and pyplot by default", () => {
    const cmd = commandFor({});
    expect(cmd[cmd.indexOf("--preload-modules") + 1]).toBe("numpy,pandas,matplotlib.pyplot");
  });

  it("passes a configured list, and nothing for an empty one", () => {
    const cmd = commandFor({ preloadModules: ["polars"] });
    expect(cmd[cmd.indexOf("--preload-modules") + 1]).toBe("polars");
    expect(commandFor({ preloadModules: [] })).not.toContain("--preload-modules");
  });

  it("refuses what is not a module name (it becomes Python source)", () => {
    expect(() => commandFor({ preloadModules: ["os'); import evil"] })).toThrow(/a Python module name/);
  });
});
