/**
 * `sandpool verify`: a hostile suite an operator runs against any deployment to check its
 * isolation claims (src/verify/). Exit codes: 0 every probe passed, 1 a probe failed or the
 * gateway could not be used, 2 bad usage.
 */
import { Command, Option } from "commander";
import { PROBES } from "../../verify/probe-catalog.js";
import { runVerify } from "../../verify/run-verify.js";
import { VerifyCallError } from "../../verify/verify-client.js";
import { reportJson, reportTable } from "../../verify/verify-report.js";
import { ADMIN_USAGE_EXIT_CODE, adminConnection } from "../admin/admin-client.js";
import { examples, usageExits } from "../admin/admin-command-kit.js";

interface VerifyFlags {
  url: string;
  token?: string;
  otherToken?: string;
  adminToken?: string;
  only?: string;
  json?: boolean;
  list?: boolean;
}

function usageError(message: string): void {
  process.stderr.write(`sandpool verify: ${message}\n(add --help for usage and examples)\n`);
  process.exitCode = ADMIN_USAGE_EXIT_CODE;
}

export function verifyCommand(): Command {
  return usageExits(
    new Command("verify")
      .summary("attack a deployment as a tenant would and check that its isolation holds")
      .description(
        "Run hostile probes against a deployment, as a tenant's code would: each plants something in a " +
          "session (files in every writable place, processes and threads in every state, IPC objects, " +
          "interpreter state, startup configuration) and looks for it from the workspace's next session " +
          "(the same sandbox, where sandboxes are reused) and from another workspace's; others try to " +
          "reach the sandbox server's API, the network, the gateway and the Docker API from inside, burn " +
          "CPU after a call, fork-bomb, use another workspace's session, forge tokens and oversize " +
          "requests. With --admin-token it also checks which sandbox each session ran on and that a " +
          "reused sandbox's next session is billed its own CPU and memory.\n\n" +
          "Use two workspaces that nothing else uses meanwhile (their sessions share sandboxes with the " +
          "probes'). Every session it opens is ended at the end.\n\n" +
          "Exit codes: 0 every probe passed, 1 a probe failed or the gateway could not be used, 2 bad usage.",
      )
      .addOption(
        new Option("--url <url>", "the gateway's URL").env("SANDPOOL_URL").default("http://127.0.0.1:8080"),
      )
      .addOption(new Option("--token <token>", "a token of the first workspace").env("SANDPOOL_TOKEN"))
      .option("--other-token <token>", "a token of a second, different workspace")
      .addOption(
        new Option(
          "--admin-token <token>",
          "an admin token: which sandbox ran each session, usage figures",
        ).env("SANDPOOL_ADMIN_TOKEN"),
      )
      .option("--only <names>", "only these probes (comma-separated names, see --list)")
      .option("--json", 'print {"probes": [{"name", "outcome", "evidence"}]} instead of a table')
      .option("--list", "list the probes and what each checks, and exit")
      .addHelpText(
        "after",
        examples(
          "sandpool verify --url http://127.0.0.1:8080 --token $T1 --other-token $T2",
          "sandpool verify --token $T1 --other-token $T2 --admin-token $A --json",
          "sandpool verify --token $T1 --other-token $T2 --only processes.zombie-leader-thread,server.socket",
          "sandpool verify --list",
        ),
      ),
  ).action(async (flags: VerifyFlags) => {
    if (flags.list) {
      const width = Math.max(...PROBES.map((p) => p.name.length));
      process.stdout.write(`${PROBES.map((p) => `${p.name.padEnd(width)}  ${p.claim}`).join("\n")}\n`);
      return;
    }
    if (!flags.token)
      return usageError("no token: pass --token (a token of the first workspace) or set SANDPOOL_TOKEN");
    if (!flags.otherToken) return usageError("no --other-token: the probes need a second workspace's token");
    if (flags.otherToken === flags.token)
      return usageError("--other-token must name another workspace than --token");
    try {
      adminConnection({ url: flags.url, token: flags.token });
    } catch (error) {
      return usageError((error as Error).message);
    }
    let only: string[] | undefined;
    if (flags.only)
      only = flags.only
        .split(",")
        .map((name) => name.trim())
        .filter(Boolean);
    const unknown = (only ?? []).filter((name) => !PROBES.some((p) => p.name === name));
    if (unknown.length > 0) return usageError(`no probe named ${unknown.join(", ")} (see --list)`);
    const started = Date.now();
    const results = await runVerify({
      url: flags.url,
      token: flags.token,
      otherToken: flags.otherToken,
      adminToken: flags.adminToken,
      only,
      progress: (line) =>
        process.stderr.write(`verify: ${line} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`),
    }).catch((error: unknown) => {
      // The gateway unreachable, or a token refused: said once, no report.
      if (!(error instanceof VerifyCallError)) throw error;
      process.stderr.write(`sandpool verify: ${error.message}\n`);
      process.exitCode = 1;
      return undefined;
    });
    if (!results) return;
    process.stdout.write(`${flags.json ? reportJson(results) : reportTable(results)}\n`);
    process.exitCode = results.every((r) => r.outcome === "pass") ? 0 : 1;
  });
}
