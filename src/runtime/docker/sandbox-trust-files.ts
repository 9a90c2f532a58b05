/**
 * The trust an egress sandbox gets: the deployment's egress CA (ca.pem) and a bundle of the
 * system roots with it (ca-bundle.pem), written by the gateway in the sandbox's own socket
 * directory before its container exists. The directory is the gateway's and sealed once the
 * sandbox answers (socket-dirs.ts), so code in the box can read these files but never change
 * them; they are not in any directory a scrub empties, so a reused sandbox keeps them.
 *
 * "System roots" are Node's bundled Mozilla store (tls.rootCertificates), the same on every
 * host: the image's own /etc/ssl is not read, since the variables that name this bundle
 * replace the image's store for the programs that honour them (docs/security-model.md).
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { rootCertificates } from "node:tls";
import { EGRESS_CA_BUNDLE_NAME, EGRESS_CA_NAME } from "./container-spec.js";

export async function writeSandboxTrustFiles(dir: string, caPem: string): Promise<void> {
  const ca = caPem.endsWith("\n") ? caPem : `${caPem}\n`;
  // 0644: the code's uid reads them; only the gateway's may write (and the directory is its).
  await writeFile(path.join(dir, EGRESS_CA_NAME), ca, { mode: 0o644 });
  await writeFile(path.join(dir, EGRESS_CA_BUNDLE_NAME), `${rootCertificates.join("\n")}\n${ca}`, {
    mode: 0o644,
  });
}
