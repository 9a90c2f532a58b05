import { generateKeyPairSync, X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  exportCaKeyPem,
  generateDeploymentCa,
  loadDeploymentCa,
} from "../../../src/egress/tls/deployment-ca.js";
import { LeafCertificates } from "../../../src/egress/tls/leaf-certificates.js";

describe("the deployment CA", () => {
  it("is a P-256 CA that signs only leaves (pathLen 0), and survives a PEM round trip", async () => {
    const ca = await generateDeploymentCa("prod");
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toContain("sandpool egress CA (prod)");
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    const again = await loadDeploymentCa(ca.certPem, await exportCaKeyPem(ca));
    expect(again.certPem).toBe(ca.certPem);
  });

  it("refuses a key that is not its certificate's, and a certificate that is no CA", async () => {
    const ca = await generateDeploymentCa("a");
    const other = await generateDeploymentCa("b");
    await expect(loadDeploymentCa(ca.certPem, await exportCaKeyPem(other))).rejects.toThrow(
      /does not belong/,
    );
    const leaves = new LeafCertificates(ca);
    const leaf = await leaves.certificateFor("api.example.test");
    await expect(loadDeploymentCa(leaf, await exportCaKeyPem(ca))).rejects.toThrow(/not a CA/);
  });

  it("accepts an operator's key in SEC1 form", async () => {
    const ca = await generateDeploymentCa("a");
    const pkcs8 = await exportCaKeyPem(ca);
    const { createPrivateKey } = await import("node:crypto");
    const sec1 = createPrivateKey(pkcs8).export({ format: "pem", type: "sec1" }).toString();
    await expect(loadDeploymentCa(ca.certPem, sec1)).resolves.toBeDefined();
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
      format: "pem",
      type: "pkcs1",
    });
    await expect(loadDeploymentCa(ca.certPem, rsa.toString())).rejects.toThrow();
  });
});

describe("leaf certificates", () => {
  it("name the host alone, chain to the CA, and live a day", async () => {
    const ca = await generateDeploymentCa("a");
    const now = Date.now();
    const leaves = new LeafCertificates(ca, { now: () => now });
    const leaf = new X509Certificate(await leaves.certificateFor("API.Example.test"));
    expect(leaf.subjectAltName).toBe("DNS:api.example.test");
    expect(leaf.ca).toBe(false);
    expect(leaf.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    expect(leaf.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(new Date(leaf.validTo).getTime()).toBeLessThanOrEqual(now + 24 * 3600_000);
    const ip = new X509Certificate(await leaves.certificateFor("127.0.0.1"));
    expect(ip.subjectAltName).toBe("IP Address:127.0.0.1");
  });

  it("are cached, renewed near their end, and bounded in number", async () => {
    const ca = await generateDeploymentCa("a");
    let now = Date.now();
    const leaves = new LeafCertificates(ca, { now: () => now, maxEntries: 2 });
    const first = await leaves.certificateFor("a.test");
    expect(await leaves.certificateFor("a.test")).toBe(first);
    now += 23.5 * 3600_000;
    const renewed = await leaves.certificateFor("a.test");
    expect(renewed).not.toBe(first);
    await leaves.certificateFor("b.test");
    await leaves.certificateFor("c.test");
    // a.test was the least recently used: made anew.
    expect(await leaves.certificateFor("a.test")).not.toBe(renewed);
  });
});
