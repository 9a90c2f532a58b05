/**
 * Leaf certificates for the hosts the egress proxy terminates TLS for (only hosts a
 * credential is bound to): signed by the deployment CA, SAN = the host alone, valid for a
 * day. Each is kept as a ready TLS secure context, in an LRU of bounded size, and made
 * again once it has less than an hour left; concurrent asks for one host share one signing.
 */
import { webcrypto } from "node:crypto";
import { isIP } from "node:net";
import { createSecureContext, type SecureContext } from "node:tls";
import * as x509 from "@peculiar/x509";
import { type DeploymentCa, randomSerial } from "./deployment-ca.js";

export interface LeafCertificateOptions {
  /** Hosts kept at once; the least recently used goes first. */
  maxEntries?: number;
  validityMs?: number;
  now?: () => number;
}

interface Leaf {
  context: SecureContext;
  certPem: string;
  notAfter: number;
}

const DAY_MS = 24 * 3600_000;
const RENEW_BEFORE_MS = 3600_000;

export class LeafCertificates {
  private readonly leaves = new Map<string, Promise<Leaf>>();
  private readonly maxEntries: number;
  private readonly validityMs: number;
  private readonly now: () => number;

  constructor(
    private readonly ca: DeploymentCa,
    options: LeafCertificateOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? 1_000;
    this.validityMs = options.validityMs ?? DAY_MS;
    this.now = options.now ?? Date.now;
  }

  /** The CA certificate sandboxes trust. */
  get caPem(): string {
    return this.ca.certPem;
  }

  /** The TLS context presenting `host`'s leaf (and the CA after it). */
  async contextFor(host: string): Promise<SecureContext> {
    return (await this.leafFor(host)).context;
  }

  /** The leaf certificate's PEM (tests, diagnostics). */
  async certificateFor(host: string): Promise<string> {
    return (await this.leafFor(host)).certPem;
  }

  private async leafFor(host: string): Promise<Leaf> {
    const name = host.toLowerCase();
    const cached = this.leaves.get(name);
    if (cached) {
      const leaf = await cached.catch(() => undefined);
      if (leaf && leaf.notAfter - this.now() > RENEW_BEFORE_MS) {
        // Most recently used goes last: a Map iterates in insertion order.
        this.leaves.delete(name);
        this.leaves.set(name, cached);
        return leaf;
      }
      if (this.leaves.get(name) === cached) this.leaves.delete(name);
    }
    const made = this.issue(name);
    this.leaves.set(name, made);
    made.catch(() => this.leaves.get(name) === made && this.leaves.delete(name));
    while (this.leaves.size > this.maxEntries) this.leaves.delete(this.leaves.keys().next().value!);
    return made;
  }

  private async issue(host: string): Promise<Leaf> {
    const keys = (await webcrypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as webcrypto.CryptoKeyPair;
    const now = this.now();
    const notAfter = now + this.validityMs;
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: isIP(host) === 0 ? `CN=${host}` : "CN=sandpool egress",
      issuer: this.ca.cert.subject,
      // A little slack for clocks behind the gateway's.
      notBefore: new Date(now - 5 * 60_000),
      notAfter: new Date(notAfter),
      signingAlgorithm: this.ca.signing,
      signingKey: this.ca.privateKey,
      publicKey: keys.publicKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: isIP(host) === 0 ? "dns" : "ip", value: host }]),
        await x509.AuthorityKeyIdentifierExtension.create(this.ca.cert),
      ],
    });
    const keyDer = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
    const certPem = cert.toString("pem");
    const context = createSecureContext({
      cert: `${certPem}\n${this.ca.certPem}`,
      key: x509.PemConverter.encode(keyDer, "PRIVATE KEY"),
      minVersion: "TLSv1.2",
    });
    return { context, certPem, notAfter };
  }
}
