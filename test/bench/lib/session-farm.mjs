#!/usr/bin/env node
/**
 * A few sandbox servers (src/sandbox, the program every sandbox runs) in one process, for the
 * light gateway's thousand sessions: no interpreter is started before a call
 * (prewarmInterpreter false), so an idle session is a directory and a record.
 *
 * Usage: node session-farm.mjs SERVERS ROOT PYTHON   prints `farm listening on URL,URL,...`
 */
import path from "node:path";
import { createLogger } from "../../../dist/logging/create-logger.js";
import { startSandboxServer } from "../../../dist/sandbox/start-sandbox-server.js";

const [count, root, python] = process.argv.slice(2);
const log = createLogger("bench-farm", "warn");
const servers = [];
for (let i = 0; i < Number(count); i++) {
  servers.push(
    await startSandboxServer(
      {
        host: "127.0.0.1",
        port: 0,
        root: path.join(root, `server-${i}`),
        python,
        maxSessions: 10_000,
        defaultIdleTimeoutSeconds: 3600,
        prewarmInterpreter: false,
      },
      log,
    ),
  );
}
process.stdout.write(`farm listening on ${servers.map((server) => server.url).join(",")}\n`);
process.on("SIGTERM", () => {
  void Promise.all(servers.map((server) => server.close())).finally(() => process.exit(0));
});
