/**
 * Opens a TCP connection to one of the addresses the egress rules checked, in order, within
 * one deadline. It connects to IP literals only: nothing here resolves a name again, so what
 * was checked is what is reached.
 */
import { connect, isIP, type Socket } from "node:net";

export class ConnectFailure extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

export async function connectCheckedAddress(
  addresses: readonly string[],
  port: number,
  timeoutMs: number,
): Promise<Socket> {
  const deadline = Date.now() + timeoutMs;
  let last: ConnectFailure = new ConnectFailure("no address to connect to", "ENOADDRESS");
  for (const address of addresses) {
    if (isIP(address) === 0) throw new ConnectFailure(`'${address}' is not an IP address`, "EINVAL");
    const left = deadline - Date.now();
    if (left <= 0) throw new ConnectFailure("timed out", "ETIMEDOUT");
    try {
      return await connectOne(address, port, left);
    } catch (error) {
      last = error instanceof ConnectFailure ? error : new ConnectFailure(String(error), "ECONNECT");
    }
  }
  throw last;
}

function connectOne(address: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new ConnectFailure("timed out", "ETIMEDOUT"));
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      reject(new ConnectFailure(error.code ?? error.message, error.code ?? "ECONNECT"));
    });
  });
}
