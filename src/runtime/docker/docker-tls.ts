/**
 * The TLS material of a tcp:// Docker engine, read from its PEM files once at start-up and
 * checked there (the key matches the certificate, every file parses), so a mistake is named
 * with its file before any sandbox is started rather than as a handshake error later.
 */
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import type { DockerTlsFiles } from "./docker-runtime-options.js";

export interface DockerTlsMaterial {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

function readPem(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`cannot read the Docker TLS ${what} ${file} (${code})`);
  }
}

export function readDockerTls(files: DockerTlsFiles): DockerTlsMaterial {
  const material = {
    ca: readPem(files.caFile, "CA certificate (caFile)"),
    cert: readPem(files.certFile, "client certificate (certFile)"),
    key: readPem(files.keyFile, "client key (keyFile)"),
  };
  try {
    // Node's own parser: a malformed PEM, or a key that is not the certificate's, throws here.
    createSecureContext(material);
  } catch (error) {
    throw new Error(
      `the Docker TLS files ${files.caFile}, ${files.certFile}, ${files.keyFile} are not usable: ${(error as Error).message}`,
    );
  }
  return material;
}
