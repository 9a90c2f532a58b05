/**
 * Checks of one session through a gateway, shared by the suites that run them on different
 * deployments (two replicas, each isolation level): the whole contract (code, bash, the text
 * editor, files in and out, a path outside the workspace refused), that the session reaches
 * nothing (the gateway, Redis, Postgres, the Docker API, on loopback or the engine's bridge),
 * and whose kernel runs it. Every answer is validated against the OpenAPI document by
 * ContractClient.
 */
import { expect } from "vitest";
import type { ContractClient } from "./contract-client.js";

export async function newSessionOf(client: ContractClient, payload?: unknown): Promise<string> {
  const created = await client.createSession(payload);
  expect(created.status, created.text).toBe(201);
  return (created.body as { session_id: string }).session_id;
}

/** Code keeps its state between calls, bash and the editor work on the workspace, files go in and out. */
export async function expectWholeContract(client: ContractClient): Promise<void> {
  const id = await newSessionOf(client);
  await client.run(id, "code_execution", { code: "import os\nx = os.getuid()" });
  // User code runs as a uid of its sandbox's own (container-spec.ts), never root or 10001.
  expect(
    Number((await client.run(id, "code_execution", { code: "print(x)" })).stdout),
  ).toBeGreaterThanOrEqual(2 ** 20);
  expect(
    (await client.run(id, "bash_code_execution", { command: "echo -n hi > f.txt; cat f.txt" })).stdout,
  ).toBe("hi");
  const edited = await client.run(id, "text_editor_code_execution", {
    command: "str_replace",
    path: "f.txt",
    old_str: "hi",
    new_str: "hello",
  });
  expect(edited.return_code).toBe(0);
  expect((await client.putFile(id, "data", { path: "in/x.csv" })).status).toBe(201);
  expect(((await client.listFiles(id, "in")).body as { files: unknown[] }).files).toHaveLength(1);
  expect((await client.getFile(id, "f.txt")).text).toBe("hello");
  expect((await client.getFile(id, "../../../etc/passwd")).status).toBe(403);
  expect((await client.destroy(id)).status).toBe(204);
}

/** From inside: no interface but loopback, no connection to this host's services, no Docker socket. */
export async function expectReachesNothing(client: ContractClient, gatewayPort: number): Promise<void> {
  const id = await newSessionOf(client);
  // This host's loopback and docker0 address: each service's port, from inside the sandbox.
  const probe = `
import errno, socket
for host in ("127.0.0.1", "172.17.0.1"):
    for port in (${gatewayPort}, 6379, 5432, 2375, 2376):
        try:
            socket.create_connection((host, port), timeout=1).close()
            print(host, port, "connected")
        except OSError as e:
            print(host, port, errno.errorcode.get(e.errno, str(e)))
print(sorted(n for _, n in socket.if_nameindex()))
import os
print(os.path.exists("/var/run/docker.sock"), os.listdir("/run/sandpool"))
`;
  const lines = (await client.run(id, "code_execution", { code: probe })).stdout.trim().split("\n");
  expect(lines.slice(-2)).toEqual(["['lo']", "False ['sandbox.sock']"]);
  // Its own loopback refuses; anything else has no route (gVisor's netstack says EHOSTUNREACH).
  for (const line of lines.slice(0, -2)) expect(line).toMatch(/ (ECONNREFUSED|ENETUNREACH|EHOSTUNREACH)$/);
  expect((await client.destroy(id)).status).toBe(204);
}

/**
 * Whose kernel runs a new session's code: `gvisor` when the kernel log (readable by anyone
 * there, refused on the host's kernel) starts with gVisor's, else `host`.
 */
export async function kernelOfSession(client: ContractClient): Promise<"gvisor" | "host"> {
  const id = await newSessionOf(client);
  const code = [
    "import ctypes",
    "log = ctypes.create_string_buffer(4096)",
    "size = ctypes.CDLL(None).klogctl(3, log, 4096)",
    "print('gvisor' if size > 0 and b'Starting gVisor' in log.raw[:size] else 'host')",
  ].join("\n");
  const kernel = (await client.run(id, "code_execution", { code })).stdout.trim();
  expect((await client.destroy(id)).status).toBe(204);
  return kernel as "gvisor" | "host";
}
