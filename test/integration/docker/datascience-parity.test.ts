/**
 * Parity with the reference sandbox (issue 11), through a gateway on the docker runtime:
 * a session on sandpool/sandbox-datascience:dev imports every module of Anthropic's
 * documented code-execution set but python-pptx (Debian has no package for it), runs every
 * tool (bash, curl, file, gawk, grep, jq, sed), and matplotlib writes a PNG that GetFile
 * returns. The pool is warm, so the lease also shows the preload at work: pandas, numpy and
 * matplotlib.pyplot are imported before the session's first call.
 *
 * Needs a Docker engine and the data-science image (`npm run build:sandbox-image`):
 * skipped with a warning locally, fails under CI=true.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { type DevGateway, startDevGateway } from "../../../src/gateway/start-dev-gateway.js";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../../src/runtime/docker/docker-runtime-options.js";
import type { Database } from "../../../src/store/sql/database-types.js";
import { PgliteDialect } from "../../../src/store/sql/pglite-dialect.js";
import { ContractClient } from "../../support/contract-client.js";
import {
  dockerSuiteAvailable,
  removeDeploymentContainers,
  SANDBOX_IMAGE,
} from "../../support/docker-suite.js";
import { TEST_SECRET } from "../../support/gateway-harness.js";
import { pgliteTemplate } from "../store/pglite-template.js";

const IMAGE = "sandpool/sandbox-datascience:dev";

/** Import names of the reference's Python packages (python-pptx aside). */
const MODULES = [
  "numpy",
  "pandas",
  "scipy",
  "sklearn",
  "matplotlib",
  "seaborn",
  "PIL",
  "sympy",
  "requests",
  "openpyxl",
  "xlrd",
  "xlsxwriter",
  "dateutil",
  "pytz",
  "bs4",
  "lxml",
  "pypdf",
  "docx",
];

const available = await dockerSuiteAvailable(IMAGE);
const deployment = `test-parity-${randomBytes(4).toString("hex")}`;

describe.skipIf(!available)("data-science image through the gateway (parity with the reference)", () => {
  let socketDir: string;
  let dev: DevGateway;
  let client: ContractClient;
  let token: string;
  let session: string;

  beforeAll(async () => {
    socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
    const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
    const config = gatewayConfigSchema.parse({
      host: "127.0.0.1",
      port: 0,
      auth: { jwtSecret: TEST_SECRET },
      policy: { allowedImages: [SANDBOX_IMAGE, IMAGE], defaultImage: SANDBOX_IMAGE },
      pools: [
        { name: "default", image: SANDBOX_IMAGE, minIdle: 0, maxTotal: 1 },
        { name: "datascience", image: IMAGE, minIdle: 1, maxTotal: 2, coldStartTimeoutMs: 60_000 },
      ],
      intervals: { orphanGraceMs: 70_000 },
    });
    const runtime = new DockerRuntime(
      {
        hosts: dockerHostsFromEnv(process.env),
        deployment,
        socketDir,
        execTimeoutCeilingSeconds: 60,
        maxFileBytes: 10 * 1024 * 1024,
      },
      log,
    );
    const db = new Kysely<Database>({
      dialect: new PgliteDialect(await PGlite.create({ loadDataDir: await pgliteTemplate() })),
    });
    // Returns once the pools are warm: the data-science sandbox has preloaded its modules.
    dev = await startDevGateway(config, { db, runtime }, log);
    expect(await dev.store.listIdle("datascience")).toHaveLength(1);
    const workspace = `parity-${randomBytes(4).toString("hex")}`;
    token = await mintToken({ secret: TEST_SECRET, workspace });
    client = new ContractClient(dev.gateway.url, token);
    const created = await client.createSession({ image: IMAGE });
    expect(created.status, created.text).toBe(201);
    session = (created.body as { session_id: string }).session_id;
  }, 120_000);

  afterAll(async () => {
    await dev?.close();
    await removeDeploymentContainers(deployment);
    if (socketDir) await rm(socketDir, { recursive: true, force: true });
  });

  it("leases a warm sandbox whose interpreter already imported numpy, pandas and pyplot (Agg)", async () => {
    // The preload wrote matplotlib's font cache beside the workspace: the lease starts empty.
    const listed = await client.listFiles(session, ".", "&recursive=true");
    expect(listed.status).toBe(200);
    expect((listed.body as { files: unknown[] }).files).toEqual([]);
    const result = await client.run(session, "code_execution", {
      code: [
        "import sys, os",
        "print(all(m in sys.modules for m in ('numpy', 'pandas', 'matplotlib.pyplot')))",
        "print(os.environ.get('MPLBACKEND'))",
        "import time",
        "t = time.perf_counter()",
        "import pandas as pd",
        "print(pd.__version__, time.perf_counter() - t < 0.05)",
      ].join("\n"),
    });
    expect(result.stderr).toBe("");
    expect(result.stdout.split("\n")).toEqual([
      "True",
      "Agg",
      expect.stringMatching(/^\d+\.\d+\.\d+ True$/),
      "",
    ]);
  });

  it("imports every module of the reference's set but python-pptx", async () => {
    const result = await client.run(session, "code_execution", {
      code: [
        "import importlib, json",
        "found = {}",
        `for name in ${JSON.stringify(MODULES)}:`,
        "    try:",
        "        module = importlib.import_module(name)",
        "        found[name] = str(getattr(module, '__version__', None) or getattr(module, 'VERSION', 'present'))",
        "    except Exception as error:",
        "        found[name] = 'FAILED: ' + repr(error)",
        "print(json.dumps(found))",
      ].join("\n"),
    });
    expect(result.return_code, result.stderr).toBe(0);
    const found = JSON.parse(result.stdout) as Record<string, string>;
    expect(Object.keys(found).sort()).toEqual([...MODULES].sort());
    for (const [name, version] of Object.entries(found)) expect(version, name).not.toMatch(/^FAILED/);
  });

  it("runs every tool of the reference's set", async () => {
    const result = await client.run(session, "bash_code_execution", {
      command: [
        "set -e",
        "bash --version | head -n 1",
        "curl --version | head -n 1",
        "printf 'a,b\\n1,2\\n' > t.csv && file t.csv",
        "gawk --version | head -n 1",
        "printf 'x\\ny\\n' | grep -c y",
        `echo '{"answer": 42}' | jq .answer`,
        "echo hello | sed s/hello/bye/",
        "printf '3 4\\n' | gawk '{ print $1 * $2 }'",
      ].join("\n"),
    });
    expect(result.stderr).toBe("");
    expect(result.return_code).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^GNU bash, version 5/);
    expect(lines[1]).toMatch(/^curl \d/);
    expect(lines[2]).toMatch(/^t\.csv: (CSV|ASCII) text/);
    expect(lines[3]).toMatch(/^GNU Awk 5/);
    expect(lines.slice(4)).toEqual(["1", "42", "bye", "12"]);
  });

  it("draws a chart with matplotlib that GetFile returns as a PNG", async () => {
    const result = await client.run(session, "code_execution", {
      code: [
        "import matplotlib.pyplot as plt, pandas as pd",
        "pd.DataFrame({'x': [1, 2, 3], 'y': [2, 4, 8]}).plot(x='x', y='y')",
        "plt.savefig('chart.png')",
        "print(plt.get_backend())",
      ].join("\n"),
    });
    expect(result.stderr).toBe("");
    expect(result.stdout.trim().toLowerCase()).toBe("agg");
    // The exec's answer lists the file it wrote, with the id GetFile takes.
    const listed = (result as unknown as { content: { type: string; file_id: string }[] }).content;
    expect(listed).toContainEqual(
      expect.objectContaining({ type: "code_execution_output", file_id: "chart.png" }),
    );
    // GetFile's bytes as they are (the contract client decodes answers as text).
    const file = await fetch(`${dev.gateway.url}/sessions/${session}/files?path=chart.png`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(file.status).toBe(200);
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  });
});
