import { describe, expect, it } from "vitest";
import { isolationProblems } from "../../../src/runtime/docker/isolation-check.js";

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
