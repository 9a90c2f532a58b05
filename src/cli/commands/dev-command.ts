/** `sandpool dev`: the whole gateway in one process, nothing to install. */
import { Command, Option } from "commander";
import { integerOption } from "../parse-number.js";

export function devCommand(): Command {
  return new Command("dev")
    .summary("run the whole gateway in one process, nothing to install")
    .description(
      "Run the gateway in one process with nothing to install: PGlite for policy and usage,\n" +
        "in-memory coordination, in-process jobs. Sandboxes are docker containers when a Docker\n" +
        "engine has the sandbox image, else child processes (NOT isolated). Prints a bearer token\n" +
        "for workspace 'dev' and a curl line to start with.",
    )
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (env SANDPOOL_PORT)", integerOption(0, 65535))
    .option("--base-path <path>", "also serve the contract under this path (env SANDPOOL_BASE_PATH)")
    .option(
      "--data-dir <dir>",
      "where dev mode keeps its signing key, database and sandboxes",
      ".sandpool/dev",
    )
    .option("--min-idle <n>", "warm sandboxes kept ready (env SANDPOOL_MIN_IDLE)", integerOption(0))
    .option("--max-total <n>", "most sandboxes at once (env SANDPOOL_MAX_TOTAL)", integerOption(1))
    .addOption(
      new Option("--runtime <kind>", "where sandboxes run: docker if an engine has the image, else process")
        .choices(["auto", "docker", "process"])
        .default("auto"),
    )
    .option("--python <path>", "Python interpreter of the process runtime's sandboxes", "python3")
    .option("--json", "once ready, print one JSON line (url, tokens, runtime, pools) instead of the banner")
    .addHelpText(
      "after",
      "\nExample:\n  npx sandpool dev --port 8080\n  npx sandpool token --workspace team-a   # a token for another workspace\n",
    )
    .action(async (options: Record<string, unknown>) => {
      const { runDev } = await import("../run-dev.js");
      await runDev(options);
    });
}
