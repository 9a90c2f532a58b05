/**
 * The deployment's egress CA: the certificate every egress sandbox trusts, and the key the
 * proxy signs leaf certificates with for the hosts a credential is bound to (leaf-
 * certificates.ts). The key never leaves the gateway: sandboxes get the certificate only.
 *
 * Certificates are built by @peculiar/x509 over Node's WebCrypto (no hand-written ASN.1).
 * A generated CA is ECDSA P-256; an operator's CA (egress.caCertFile / caKeyFile) may be
 * EC (P-256, P-384) or RSA.
 */
import "reflect-metadata"; // @peculiar/x509's dependency injection needs it, before its import
import type { webcrypto as WebCrypto } from "node:crypto";
import { createPrivateKey, randomBytes, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as WebCrypto.Crypto);

export interface DeploymentCa {
  /** The CA certificate, PEM: what sandboxes trust. */
  certPem: string;
  cert: x509.X509Certificate;
  /** Signs leaf certificates; never exported but to be sealed at rest. */
  privateKey: WebCrypto.CryptoKey;
  /** The signature algorithm its key signs with. */
  signing: WebCrypto.EcdsaParams | WebCrypto.Algorithm;
}

/** Ten years: the CA is replaced by an operator, not by expiry (leaves live a day). */
const CA_VALIDITY_MS = 10 * 365 * 24 * 3600_000;

const P256: WebCrypto.EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const ECDSA_SHA256: WebCrypto.EcdsaParams = { name: "ECDSA", hash: "SHA-256" };

/** A positive serial number of 16 random bytes (RFC 5280: at most 20 octets, positive). */
export function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString("hex");
}

/** A new CA: ECDSA P-256, self-signed, for signing server certificates only. */
export async function generateDeploymentCa(deployment: string, now = new Date()): Promise<DeploymentCa> {
  const keys = (await webcrypto.subtle.generateKey(P256, true, [
    "sign",
    "verify",
  ])) as WebCrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=sandpool egress CA (${deployment.replace(/[,+="<>#;\\]/g, "_")}), O=sandpool`,
    notBefore: new Date(now.getTime() - 5 * 60_000),
    notAfter: new Date(now.getTime() + CA_VALIDITY_MS),
    keys,
    signingAlgorithm: ECDSA_SHA256,
    extensions: [
      // pathLen 0: it signs leaves, never another CA.
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem"), cert, privateKey: keys.privateKey, signing: ECDSA_SHA256 };
}

/** The key as PKCS#8 PEM: only ever handed to a Sealer, never written in clear. */
export async function exportCaKeyPem(ca: DeploymentCa): Promise<string> {
  const der = await webcrypto.subtle.exportKey("pkcs8", ca.privateKey);
  return x509.PemConverter.encode(der, "PRIVATE KEY");
}

/**
 * A CA from its PEM certificate and key (PKCS#8, SEC1 or PKCS#1). Refuses a certificate that
 * is not a CA, or a key that is not the certificate's.
 */
export async function loadDeploymentCa(certPem: string, keyPem: string): Promise<DeploymentCa> {
  const cert = new x509.X509Certificate(certPem);
  const basic = cert.getExtension(x509.BasicConstraintsExtension);
  if (!basic?.ca) throw new Error("the egress CA certificate is not a CA (basicConstraints cA is not set)");
  const keyObject = createPrivateKey(keyPem);
  const pkcs8 = keyObject.export({ format: "der", type: "pkcs8" });
  const { importAlgorithm, signing } = algorithmsOf(keyObject.asymmetricKeyType, keyObject);
  const privateKey = await webcrypto.subtle.importKey("pkcs8", pkcs8, importAlgorithm, true, ["sign"]);
  const ca: DeploymentCa = { certPem: cert.toString("pem"), cert, privateKey, signing };
  await assertKeyMatches(ca);
  return ca;
}

function algorithmsOf(
  type: string | undefined,
  keyObject: ReturnType<typeof createPrivateKey>,
): {
  importAlgorithm: WebCrypto.EcKeyImportParams | WebCrypto.RsaHashedImportParams;
  signing: WebCrypto.EcdsaParams | WebCrypto.Algorithm;
} {
  if (type === "ec") {
    const curve = keyObject.asymmetricKeyDetails?.namedCurve;
    const namedCurve = curve === "prime256v1" ? "P-256" : curve === "secp384r1" ? "P-384" : undefined;
    if (!namedCurve) throw new Error(`the egress CA key's curve ${curve} is not supported (P-256 or P-384)`);
    const hash = namedCurve === "P-256" ? "SHA-256" : "SHA-384";
    return {
      importAlgorithm: { name: "ECDSA", namedCurve },
      signing: { name: "ECDSA", hash } as WebCrypto.EcdsaParams,
    };
  }
  if (type === "rsa") {
    const rsa = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    return { importAlgorithm: rsa, signing: rsa };
  }
  throw new Error(`the egress CA key's type ${type} is not supported (EC or RSA)`);
}

/** Signs a probe and checks it with the certificate's public key. */
async function assertKeyMatches(ca: DeploymentCa): Promise<void> {
  const probe = randomBytes(32);
  const signature = await webcrypto.subtle.sign(ca.signing, ca.privateKey, probe);
  const publicKey = await ca.cert.publicKey.export(
    ca.privateKey.algorithm as WebCrypto.EcKeyImportParams | WebCrypto.RsaHashedImportParams,
    ["verify"],
    webcrypto as unknown as WebCrypto.Crypto,
  );
  if (!(await webcrypto.subtle.verify(ca.signing, publicKey, signature, probe)))
    throw new Error("the egress CA key does not belong to its certificate");
}
