/**
 * The sandbox side of egress: a sandbox server started with an egress proxy socket offers
 * it on 127.0.0.1 as an ordinary HTTP proxy, which curl and Python use through their usual
 * proxy settings. The gateway's proxy (on a socket in a temp dir) and the destination (an
 * HTTP server on 127.0.0.1) are real; nothing here leaves loopback.
 */
import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EgressProxy } from "../../../src/egress/egress-proxy.js";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

const run = promisify(execFile);

let dir: string;
let target: Server;
let targetPort: number;
let proxy: EgressProxy;
let sandbox: TestSandbox;
let proxyUrl: string;

// Only this sandbox's proxy settings: an inherited NO_PROXY could make a client bypass it.
function proxyEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!/^(https?|all|no)_proxy$/i.test(name)) env[name] = value;
  return { ...env, HTTP_PROXY: proxyUrl, http_proxy: proxyUrl, NO_PROXY: "", no_proxy: "" };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sandpool-egress-fwd-"));
  target = createServer((req, res) => res.end(`reached ${req.url}`));
  target.listen(0, "127.0.0.1");
  await once(target, "listening");
  targetPort = (target.address() as AddressInfo).port;
  proxy = new EgressProxy({
    settings: { denyCidrs: [], maxTunnelsPerSandbox: 8, connectTimeoutMs: 2_000, idleTimeoutMs: 10_000 },
    log: pino({ level: "silent" }),
    resolve: async () => {
      throw Object.assign(new Error("no names in this test"), { code: "ENOTFOUND" });
    },
  });
  const socketPath = path.join(dir, "egress.sock");
  await proxy.open("sb-fwd", socketPath, async () => ({ allowCidrs: ["127.0.0.1/32"], allowHosts: [] }));
  sandbox = await startTestSandbox({ egressProxySocket: socketPath, egressProxyPort: 0 });
  expect(sandbox.server.egressProxyPort).toBeGreaterThan(0);
  proxyUrl = `http://127.0.0.1:${sandbox.server.egressProxyPort}`;
});

afterAll(async () => {
  await sandbox?.close();
  await proxy?.closeAll();
  target?.closeAllConnections();
  await new Promise((done) => target?.close(done));
  await rm(dir, { recursive: true, force: true });
});

describe("a sandbox server with --egress-proxy-socket", () => {
  it("forwards curl's plain HTTP proxy requests to the gateway's proxy", async () => {
    const { stdout } = await run(
      "curl",
      ["-sS", "--max-time", "10", "-w", " %{http_code}", `http://127.0.0.1:${targetPort}/by-curl`],
      { env: proxyEnv() },
    );
    expect(stdout).toBe("reached /by-curl 200");
  });

  it("forwards CONNECT tunnels (curl --proxytunnel)", async () => {
    const { stdout } = await run(
      "curl",
      ["-sS", "--max-time", "10", "-p", "-x", proxyUrl, `http://127.0.0.1:${targetPort}/tunnelled`],
      { env: proxyEnv() },
    );
    expect(stdout).toBe("reached /tunnelled");
  });

  it("passes the proxy's refusal through to the client", async () => {
    const { stdout } = await run(
      "curl",
      ["-sS", "--max-time", "10", "-w", " %{http_code}", `http://127.0.0.2:${targetPort}/refused`],
      { env: proxyEnv() },
    );
    expect(stdout).toBe("sandpool egress: 127.0.0.2 is in the loopback range (127.0.0.0/8)\n 403");
  });

  it("serves Python's urllib from a session's code", async () => {
    const id = await newSession(sandbox.client);
    const code = [
      "import urllib.request",
      `proxy = urllib.request.ProxyHandler({"http": "${proxyUrl}"})`,
      `print(urllib.request.build_opener(proxy).open("http://127.0.0.1:${targetPort}/from-python", timeout=10).read().decode())`,
    ].join("\n");
    const content = await sandbox.client.run(id, "code_execution", { code });
    expect(content.stderr).toBe("");
    expect(content.stdout).toBe("reached /from-python\n");
  });

  it("counts what went through at the gateway's proxy", () => {
    const usage = proxy.usage("sb-fwd")!;
    expect(usage.connections).toBeGreaterThanOrEqual(3);
    expect(usage.receivedBytes).toBeGreaterThan(0);
    expect(usage.refused).toBeGreaterThanOrEqual(1);
  });
});
