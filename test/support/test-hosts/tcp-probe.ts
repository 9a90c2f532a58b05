/**
 * Can a TCP connection be opened? The answer is "connected" or why not ("ECONNREFUSED",
 * "EHOSTUNREACH", "timeout"...), so a test can tell a closed port from a cut link.
 */
import net from "node:net";

export type ProbeResult = "connected" | "timeout" | (string & {});

export function probeTcp(host: string, port: number, timeoutMs = 1_000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve("timeout");
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
  });
}

/** The same probe as a node one-liner, to run inside a namespace (prints the result). */
export function probeTcpScript(host: string, port: number, timeoutMs: number): string {
  return `
const s = require("node:net").connect({ host: ${JSON.stringify(host)}, port: ${port} });
const t = setTimeout(() => { console.log("timeout"); process.exit(0); }, ${timeoutMs});
s.once("connect", () => { console.log("connected"); process.exit(0); });
s.once("error", (e) => { console.log(e.code || e.message); process.exit(0); });
`;
}
