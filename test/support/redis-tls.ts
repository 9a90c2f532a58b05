/**
 * TLS material for throw-away Redis servers: a private CA and a server certificate for
 * 127.0.0.1 signed by it (openssl), and the redis-server flags that serve TLS only.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** Writes ca.pem, server.pem and server-key.pem into `dir`. */
export async function makeTlsFiles(dir: string): Promise<TlsFiles> {
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => run("openssl", args, { timeout: 30_000 });
  await openssl(
    ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"],
    ...["-subj", "/CN=sandpool test CA", "-keyout", file("ca-key.pem"), "-out", file("ca.pem")],
  );
  await openssl(
    ...["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1"],
    ...["-keyout", file("server-key.pem"), "-out", file("server.csr")],
  );
  await openssl(
    ...["x509", "-req", "-in", file("server.csr"), "-days", "2"],
    ...["-CA", file("ca.pem"), "-CAkey", file("ca-key.pem"), "-CAcreateserial"],
    ...["-extfile", await writeExtensions(dir), "-out", file("server.pem")],
  );
  return { caFile: file("ca.pem"), certFile: file("server.pem"), keyFile: file("server-key.pem") };
}

/** redis-server flags: TLS on `port`, no cleartext port, no client certificates asked. */
export function tlsServerFlags(tls: TlsFiles, port: number): string[] {
  return [
    ...["--port", "0", "--tls-port", String(port)],
    ...["--tls-cert-file", tls.certFile, "--tls-key-file", tls.keyFile, "--tls-ca-cert-file", tls.caFile],
    ...["--tls-auth-clients", "no"],
  ];
}

async function writeExtensions(dir: string): Promise<string> {
  const file = path.join(dir, "server.ext");
  await writeFile(file, "subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth, clientAuth\n");
  return file;
}
