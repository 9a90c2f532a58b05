/**
 * Where the deployment's egress CA comes from, once per process at start-up:
 *
 *   - egress.caCertFile + egress.caKeyFile (a mounted secret): the operator's CA;
 *   - else the one stored in Postgres (egress_ca, its key sealed by the key ring), made by
 *     the first replica that needs one: every replica of a deployment shares it, so a
 *     sandbox trusts the proxy whichever replica serves its socket.
 *
 * And what upstreams are verified against: Node's root store plus egress.upstreamCaFiles.
 */
import { readFile } from "node:fs/promises";
import { rootCertificates } from "node:tls";
import type { Sealer } from "../../secrets/workspace-secrets.js";
import type { StoredEgressCa } from "../../store/sql/egress-ca-repository.js";
import {
  type DeploymentCa,
  exportCaKeyPem,
  generateDeploymentCa,
  loadDeploymentCa,
} from "./deployment-ca.js";
import { LeafCertificates } from "./leaf-certificates.js";

/** What the CA's private key is sealed under: no workspace secret's row opens as it. */
const EGRESS_CA_SEAL_CONTEXT = "egress-ca";

export interface EgressCaSettings {
  caCertFile?: string;
  caKeyFile?: string;
  /** Extra PEM files of CAs the proxy trusts for upstream servers (besides Node's roots). */
  upstreamCaFiles?: readonly string[];
}

/** The stored side (EgressCaRepository). */
export interface EgressCaStore {
  read(): Promise<StoredEgressCa | undefined>;
  insertOrRead(ca: StoredEgressCa): Promise<StoredEgressCa>;
}

export interface EgressCaSources {
  settings: EgressCaSettings;
  /** Names a generated CA. */
  deployment: string;
  /** Needed when no files are configured. */
  store?: EgressCaStore;
  sealer?: Sealer;
}

export async function loadEgressCa(sources: EgressCaSources): Promise<DeploymentCa> {
  const { caCertFile, caKeyFile } = sources.settings;
  if (caCertFile !== undefined || caKeyFile !== undefined) {
    if (caCertFile === undefined || caKeyFile === undefined)
      throw new Error("egress.caCertFile and egress.caKeyFile go together: set both, or neither");
    const [cert, key] = await Promise.all([readFile(caCertFile, "utf8"), readFile(caKeyFile, "utf8")]);
    return loadDeploymentCa(cert, key);
  }
  const { store, sealer } = sources;
  if (!store || !sealer)
    throw new Error(
      "no egress CA: set egress.caCertFile and egress.caKeyFile, or give a database and a key ring",
    );
  const stored = (await store.read()) ?? (await storeNewCa(sources.deployment, store, sealer));
  let keyPem: string;
  try {
    keyPem = sealer.open(stored.sealedKey, EGRESS_CA_SEAL_CONTEXT).toString("utf8");
  } catch (error) {
    throw new Error(
      `the stored egress CA's key cannot be opened with this key ring (${(error as Error).message}): ` +
        "was the key that sealed it removed?",
    );
  }
  return loadDeploymentCa(stored.certPem, keyPem);
}

async function storeNewCa(deployment: string, store: EgressCaStore, sealer: Sealer): Promise<StoredEgressCa> {
  const ca = await generateDeploymentCa(deployment);
  const sealedKey = sealer.seal(Buffer.from(await exportCaKeyPem(ca), "utf8"), EGRESS_CA_SEAL_CONTEXT);
  // Another replica may have stored its own meanwhile: then that one is everybody's.
  return store.insertOrRead({ certPem: ca.certPem, sealedKey });
}

/** Node's roots and the operator's extra CA files, as PEM strings. */
export async function upstreamCaOf(settings: EgressCaSettings): Promise<string[]> {
  const extra = await Promise.all((settings.upstreamCaFiles ?? []).map((file) => readFile(file, "utf8")));
  return [...rootCertificates, ...extra];
}

/** What EgressProxyOptions.injection takes, from a CA and the settings. */
export async function egressInjectionOf(
  ca: DeploymentCa,
  settings: EgressCaSettings,
): Promise<{ leaves: LeafCertificates; upstreamCa: string[] }> {
  return { leaves: new LeafCertificates(ca), upstreamCa: await upstreamCaOf(settings) };
}
