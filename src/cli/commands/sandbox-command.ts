/** `sandpool sandbox`: serves contract v1 for many isolated sessions (the image's program). */
import { Command, InvalidArgumentError } from "commander";
import { integerOption } from "../parse-number.js";

export function sandboxCommand(): Command {
  return new Command("sandbox")
    .summary("serve contract v1 for many sessions (the sandbox image's program)")
    .description(
      "Serve contract v1 (the code-execution protocol) for many sessions, each in its own directory under --root.\n" +
        "This is the program inside sandpool's sandbox image; the gateway pools servers like it.",
    )
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (0 picks a free one)", integerOption(0, 65535), 8080)
    .option(
      "--socket <path>",
      "listen on this Unix socket instead of --host/--port (how the gateway reaches pooled sandboxes)",
    )
    .option("--root <dir>", "directory that holds one sub-directory per session", "./.sandpool/sandbox")
    .option("--python <path>", "Python interpreter for code_execution", "python3")
    .option("--max-sessions <n>", "sessions served at once; more are refused with 503", integerOption(1), 64)
    .option("--idle-timeout <s>", "idle timeout when the client sends none", integerOption(1), 300)
    .option("--max-idle-timeout <s>", "ceiling for a client's idle timeout hint", integerOption(1), 3600)
    .option("--max-lifetime <s>", "lifetime when the client sends none", integerOption(1), 3600)
    .option("--max-lifetime-ceiling <s>", "ceiling for a client's lifetime hint", integerOption(1), 86_400)
    .option("--exec-timeout <s>", "timeout_seconds when a call sends none", integerOption(1), 60)
    .option("--json", 'once listening, print one JSON line ({"url"}) instead of the text')
    .option(
      "--max-exec-timeout <s>",
      "ceiling for timeout_seconds (larger values are clamped)",
      integerOption(1),
      600,
    )
    .option(
      "--max-output-bytes <n>",
      "stdout/stderr kept per call and stream",
      integerOption(1024),
      1024 * 1024,
    )
    .option(
      "--max-upload-bytes <n>",
      "largest file PutFile accepts (413 above)",
      integerOption(1),
      100 * 1024 * 1024,
    )
    .option(
      "--egress-proxy-socket <path>",
      "the gateway's egress proxy socket, offered to programs as an HTTP proxy on 127.0.0.1:--egress-proxy-port",
    )
    .option(
      "--egress-proxy-port <port>",
      "port on 127.0.0.1 that forwards to --egress-proxy-socket (0 picks a free one)",
      integerOption(0, 65535),
      3128,
    )
    .option(
      "--preload-modules <list>",
      "comma-separated Python modules each new session's interpreter imports before the session is answered " +
        "(missing ones are skipped; sets MPLBACKEND=Agg), e.g. numpy,pandas,matplotlib.pyplot",
      commaList,
    )
    .option(
      "--no-fork-interpreters",
      "start each session's Python interpreter as a process of its own instead of forking it from one " +
        "pre-imported interpreter (the zygote; Linux only)",
    )
    .option(
      "--reap-strays",
      "after each call, kill every process but the server, its ancestors and the sessions' Python interpreters " +
        "(only in a PID namespace of its own, such as a container's)",
    )
    .option(
      "--scrub-dirs <list>",
      "comma-separated directories user code can write to besides --root (e.g. /tmp,/dev/shm), emptied when " +
        "the gateway recycles the sandbox for its workspace's next session (needs --reap-strays and --code-user)",
      commaList,
    )
    .option(
      "--code-user <uid:gid>",
      "run user code as this numeric uid:gid, never as the server, which must start as root and keeps root " +
        "only as its real uid (how docker sandboxes run it; see src/sandbox/user-code/code-user.ts)",
      parseCodeUser,
    )
    .option(
      "--code-max-processes <n>",
      "with --code-user: most processes (threads included) user code may hold at once (RLIMIT_NPROC)",
      integerOption(1),
    )
    .option(
      "--exit-with-stdin",
      "shut down when standard input closes (used when a parent process owns the server)",
    )
    .addHelpText(
      "after",
      "\nExample:\n  sandpool sandbox --port 8080 --root /tmp/sessions\n" +
        '  curl -s -XPOST localhost:8080/sessions   # -> {"session_id": ...}\n',
    )
    .action(async (options: Record<string, unknown>) => {
      const { runSandbox } = await import("../run-sandbox.js");
      await runSandbox(options);
    });
}

function commaList(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

function parseCodeUser(value: string): { uid: number; gid: number } {
  const match = /^(\d+):(\d+)$/.exec(value);
  const [uid, gid] = [Number(match?.[1]), Number(match?.[2])];
  if (!match || uid < 1 || gid < 1 || uid > 0xfffffffe || gid > 0xfffffffe) {
    throw new InvalidArgumentError("a numeric uid:gid, neither of them 0 (root)");
  }
  return { uid, gid };
}
