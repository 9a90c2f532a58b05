import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { CodeLauncher } from "../../../src/sandbox/user-code/code-user.js";

describe("CodeLauncher", () => {
  it("starts programs directly, with nothing added, without a code user", () => {
    const launcher = new CodeLauncher();
    expect(launcher.command("bash", ["-c", "echo hi"])).toEqual({ file: "bash", args: ["-c", "echo hi"] });
    expect(launcher.environment()).toEqual({});
  });

  it("starts them through setpriv as the code's uid and gid, then sh, which bounds them and execs", () => {
    const launched = new CodeLauncher({ user: { uid: 1234567, gid: 10001 }, maxProcesses: 50 }).command(
      "bash",
      ["-c", "echo hi"],
    );
    expect(launched.file).toBe("setpriv");
    const separator = launched.args.indexOf("--");
    expect(launched.args.slice(0, separator)).toEqual(["--reuid=1234567", "--regid=10001", "--keep-groups"]);
    const [shell, dashC, script, program, ...rest] = launched.args.slice(separator + 1);
    expect([shell, dashC, program, rest]).toEqual(["/bin/sh", "-c", "bash", ["-c", "echo hi"]]);
    expect(script).toContain("ulimit -p 50");
  });

  it("its sh step raises the OOM score, caps processes and runs the program with its arguments", () => {
    // The part after setpriv, run for real (it needs no privilege: both only lower this process).
    const { args } = new CodeLauncher({ user: { uid: 1, gid: 1 }, maxProcesses: 50 }).command("bash", [
      "-c",
      'echo "$(cat /proc/self/oom_score_adj) $(ulimit -u) $1"',
      "bash",
      "an argument",
    ]);
    const shStep = args.slice(args.indexOf("--") + 1);
    const ran = spawnSync(shStep[0]!, shStep.slice(1), { encoding: "utf8" });
    expect(ran.stderr).toBe("");
    expect(ran.stdout).toBe("1000 50 an argument\n");
  });

  it("names the user for programs that look it up, since the code's uid has no passwd entry", () => {
    expect(new CodeLauncher({ user: { uid: 1234567, gid: 10001 } }).environment()).toEqual({
      USER: "sandbox",
      LOGNAME: "sandbox",
    });
  });
});
