/**
 * The docker runtime's options schema and the container spec built from it. No engine
 * needed (it sits here because test/integration/docker is the runtime's test folder).
 */
import { describe, expect, it } from "vitest";
import {
  buildContainerSpec,
  codeMaxProcesses,
  codeUidOf,
} from "../../../src/runtime/docker/container-spec.js";
import {
  dockerHostsFromEnv,
  dockerRuntimeOptionsSchema,
  parseDockerHost,
} from "../../../src/runtime/docker/docker-runtime-options.js";
import { specInput } from "../../support/container-spec-input.js";

const MIB = 1024 * 1024;

describe("dockerRuntimeOptionsSchema", () => {
  it("fills in safe defaults", () => {
    const options = dockerRuntimeOptionsSchema.parse({
      deployment: "prod",
      hosts: ["unix:///var/run/docker.sock"],
    });
    expect(options).toMatchObject({
      socketDir: "/run/sandpool",
      readOnlyRootFilesystem: true,
      user: "10001:10001",
      resourceClasses: {
        standard: {
          memoryBytes: 512 * MIB,
          cpus: 1,
          pidsLimit: 256,
          tmpfsBytes: 256 * MIB,
          tmpBytes: 64 * MIB,
        },
      },
    });
    expect(options.runtime).toBeUndefined();
  });

  it("refuses what would weaken isolation or cannot work", () => {
    const parse = (extra: Record<string, unknown>) =>
      dockerRuntimeOptionsSchema.safeParse({ deployment: "prod", hosts: ["unix:///x.sock"], ...extra });
    expect(parse({ user: "0:0" }).success).toBe(false);
    expect(parse({ user: "sandbox" }).success).toBe(false);
    // The ways around NetworkMode none that older versions had are gone, not ignored.
    expect(parse({ network: "sandpool-prod" }).success).toBe(false);
    expect(parse({ publishToLoopback: true }).success).toBe(false);
    // Linux caps a socket path at 107 bytes: a directory that makes longer ones is refused.
    expect(parse({ socketDir: "relative/dir" }).success).toBe(false);
    expect(parse({ socketDir: `/${"d".repeat(70)}` }).error?.issues[0]).toMatchObject({
      path: ["socketDir"],
      message: expect.stringContaining("over Linux's 107"),
    });
    expect(
      parse({
        resourceClasses: { large: { memoryBytes: MIB * 1024, cpus: 2, pidsLimit: 512, tmpfsBytes: MIB } },
      }).success,
    ).toBe(false);
    expect(parse({ hosts: ["ssh://me@host"] }).success).toBe(false);
    expect(parse({ hosts: [] }).success).toBe(false);
    expect(parse({ deployment: "Prod!" }).success).toBe(false);
    expect(parse({ privileged: true }).success).toBe(false);
  });

  it("takes the sandboxes' CPUs in Docker's cpuset syntax, and nothing else", () => {
    const parse = (sandboxCpus: string) =>
      dockerRuntimeOptionsSchema.safeParse({ deployment: "prod", hosts: ["unix:///x.sock"], sandboxCpus });
    for (const good of ["0", "1-3", "2,3", "1-3,6", "0-0"]) expect(parse(good).success, good).toBe(true);
    for (const bad of ["", "a", "1,,2", "-1", "3-1", "1-", "1 2", "0x1", "1-3;rm"])
      expect(parse(bad).success, bad).toBe(false);
    expect(parse("3-1").error?.issues[0]?.message).toContain("from a lower CPU to a higher one");
  });

  it("reads Docker endpoints", () => {
    expect(parseDockerHost("unix:///var/run/docker.sock")).toEqual({
      kind: "unix",
      socketPath: "/var/run/docker.sock",
    });
    expect(parseDockerHost("tcp://10.0.0.5:2376")).toEqual({ kind: "tcp", host: "10.0.0.5", port: 2376 });
    expect(parseDockerHost("tcp://[::1]:2375")).toEqual({ kind: "tcp", host: "::1", port: 2375 });
    expect(parseDockerHost("tcp://engine")).toEqual({ kind: "tcp", host: "engine", port: 2375 });
    expect(parseDockerHost("tcp://user:pw@engine:1")).toBeUndefined();
    expect(parseDockerHost("unix://relative.sock")).toBeUndefined();
    expect(parseDockerHost("http://engine:2375")).toBeUndefined();
    expect(dockerHostsFromEnv({})).toEqual(["unix:///var/run/docker.sock"]);
    expect(dockerHostsFromEnv({ DOCKER_HOST: "tcp://a:1, tcp://b:2" })).toEqual(["tcp://a:1", "tcp://b:2"]);
  });
});

describe("buildContainerSpec", () => {
  const options = dockerRuntimeOptionsSchema.parse({
    deployment: "prod",
    hosts: ["unix:///var/run/docker.sock"],
    runtime: "runsc",
    execTimeoutCeilingSeconds: 300,
    maxFileBytes: 5 * MIB,
  });
  const spec = buildContainerSpec(
    options,
    specInput(options, { sandboxId: "sbx/../1", socketDir: "/run/sandpool/prod/sbx1" }),
  );

  it("is hardened whatever the options say", () => {
    expect(spec.HostConfig).toMatchObject({
      Privileged: false,
      CapDrop: ["ALL"],
      CapAdd: ["SETUID", "SETGID"],
      SecurityOpt: ["no-new-privileges"],
      Binds: [],
      Mounts: [{ Type: "bind", Source: "/run/sandpool/prod/sbx1", Target: "/run/sandpool", ReadOnly: false }],
      Init: false,
      Memory: 512 * MIB,
      MemorySwap: 512 * MIB,
      NanoCpus: 1e9,
      PidsLimit: 256,
      ReadonlyRootfs: true,
      Runtime: "runsc",
      NetworkMode: "none",
      PortBindings: {},
    });
    expect(spec.Healthcheck).toEqual({ Test: ["NONE"] });
    // Root only to start: the server drops to the code's uid, which user code runs as.
    expect(spec.User).toBe("0:0");
    const uid = codeUidOf("sbx/../1");
    expect(spec.Cmd).toEqual(expect.arrayContaining(["--code-user", `${uid}:10001`]));
    expect(spec.Cmd).toEqual(expect.arrayContaining(["--code-max-processes", "224"]));
    expect(spec.HostConfig?.Tmpfs?.["/home/sandbox/sessions"]).toContain(`uid=${uid},gid=10001,mode=0700`);
    // A sandbox id is never trusted into a container name.
    expect(spec.name).toBe("sandpool-prod-sbx_.._1");
  });

  it("keeps sandboxes on the CPUs they are given, and on all when none are", () => {
    expect(spec.HostConfig?.CpusetCpus).toBeUndefined();
    const confinedOptions = dockerRuntimeOptionsSchema.parse({
      deployment: "prod",
      hosts: ["unix:///x.sock"],
      sandboxCpus: "1-3",
    });
    const confined = buildContainerSpec(confinedOptions, specInput(confinedOptions));
    expect(confined.HostConfig).toMatchObject({ CpusetCpus: "1-3", NanoCpus: 1e9 });
  });

  it("gives each sandbox's user code a uid of its own, never root's or the gateway's", () => {
    const uids = new Set(Array.from({ length: 200 }, (_, index) => codeUidOf(`sbx-${index}`)));
    expect(uids.size).toBe(200);
    for (const uid of uids) {
      expect(uid).toBeGreaterThanOrEqual(2 ** 20);
      expect(uid).toBeLessThan(2 ** 31);
    }
    expect(codeUidOf("sbx-1")).toBe(codeUidOf("sbx-1"));
    expect(codeUidOf("sbx-1", codeUidOf("sbx-1"))).not.toBe(codeUidOf("sbx-1"));
  });

  it("keeps processes for the server out of the pids limit", () => {
    expect(codeMaxProcesses(256)).toBe(224);
    expect(codeMaxProcesses(40)).toBe(20);
    expect(codeMaxProcesses(1)).toBe(1);
  });

  it("hands the ceilings to the sandbox server and keeps lifetimes with the gateway", () => {
    const cmd = spec.Cmd!.join(" ");
    expect(cmd).toContain("--max-exec-timeout 300");
    expect(cmd).toContain(`--max-upload-bytes ${5 * MIB}`);
    expect(cmd).toContain("--max-sessions 1");
    for (const flag of ["--idle-timeout", "--max-idle-timeout", "--max-lifetime", "--max-lifetime-ceiling"])
      expect(cmd).toContain(`${flag} 31536000`);
  });

  it("offers an egress sandbox the gateway's proxy, and only then", () => {
    expect(spec.Cmd).not.toContain("--egress-proxy-socket");
    expect(spec.Env?.some((variable) => /proxy/i.test(variable))).toBe(false);
    const egress = buildContainerSpec(options, {
      sandboxId: "s",
      pool: "web",
      image: "i",
      resourceClass: options.resourceClasses.standard!,
      resourceClassName: "standard",
      engineHost: "h",
      socketDir: "/run/sandpool/prod/s",
      egress: true,
    });
    expect(egress.Cmd).toEqual(
      expect.arrayContaining(["--egress-proxy-socket", "/run/sandpool/egress.sock"]),
    );
    expect(egress.Env).toEqual(
      expect.arrayContaining(["HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128"]),
    );
    expect(egress.Labels?.["sandpool.egress"]).toBe("true");
    // Still no network: the proxy is its only way out.
    expect(egress.HostConfig?.NetworkMode).toBe("none");
  });

  it("serves on the socket in its mounted directory, with no network to join", () => {
    expect(spec.Cmd).toEqual(expect.arrayContaining(["--socket", "/run/sandpool/sandbox.sock"]));
    expect(spec.Cmd).not.toContain("--port");
    expect(spec).not.toHaveProperty("NetworkingConfig");
    expect(spec).not.toHaveProperty("ExposedPorts");
  });
});
