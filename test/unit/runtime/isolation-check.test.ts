import { describe, expect, it } from "vitest";
import { isolationProblems, missingRuntimeProblems } from "../../../src/runtime/docker/isolation-check.js";

const local = { hosts: ["unix:///var/run/docker.sock"], socketDir: "/run/sandpool", user: "10001:10001" };

describe("isolationProblems", () => {
  it("has none for local engines and a gateway that is not the sandboxes' user", () => {
    expect(isolationProblems(local, 10000)).toEqual([]);
    expect(isolationProblems(local, 0)).toEqual([]);
  });

  it("refuses each remote engine, naming it", () => {
    const problems = isolationProblems({ ...local, hosts: [...local.hosts, "tcp://engine-b:2376"] }, 0);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/tcp:\/\/engine-b:2376 is a remote engine/);
  });

  it("refuses a gateway running as the sandboxes' user (it could unseal their directories)", () => {
    expect(isolationProblems(local, 10001)[0]).toMatch(/runs as uid 10001, the sandboxes' user/);
  });
});

describe("missingRuntimeProblems", () => {
  const engine = (runtimes: Record<string, object>) => ({ host: "unix:///var/run/docker.sock", runtimes });
  const pools = [
    { name: "py", isolation: "container" as const },
    { name: "py-gv", isolation: "gvisor" as const },
  ];

  it("has none when every engine has the runtimes the pools run on", () => {
    expect(
      missingRuntimeProblems([engine({ runc: {}, runsc: {} })], pools, { gvisorRuntime: "runsc" }),
    ).toEqual([]);
    // Without a gvisor pool, an engine without runsc is fine.
    expect(missingRuntimeProblems([engine({ runc: {} })], [pools[0]!], { gvisorRuntime: "runsc" })).toEqual(
      [],
    );
  });

  it("names the engine, the pools and the daemon.json lines for a missing gVisor runtime", () => {
    const problems = missingRuntimeProblems([engine({ runc: {} })], pools, { gvisorRuntime: "runsc" });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("unix:///var/run/docker.sock has no OCI runtime 'runsc' (it has: runc)");
    expect(problems[0]).toContain("pool(s) py-gv run on (isolation: gvisor)");
    expect(problems[0]).toContain(
      '"runtimes":{"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--platform=ptrace","--network=none","--host-uds=create"]}}',
    );
  });

  it("checks runtime.docker.runtime for container pools, and reports an engine that did not answer", () => {
    const problems = missingRuntimeProblems(
      [engine({ runc: {}, runsc: {} }), { host: "unix:///b.sock", problem: "ECONNREFUSED" }],
      pools,
      { gvisorRuntime: "runsc", runtime: "crun" },
    );
    expect(problems).toEqual([
      expect.stringContaining("has no OCI runtime 'crun'"),
      "runtime.docker.hosts: unix:///b.sock did not say its runtimes (ECONNREFUSED)",
    ]);
  });
});
