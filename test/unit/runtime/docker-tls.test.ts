/**
 * Remote Docker engines over TLS: cleartext tcp:// refused unless allowed, Docker's default
 * ports, the PEM files read and checked at start-up (each mistake named with its file), and
 * the client verifying the engine against the configured CA while presenting its own
 * certificate. The "engine" is an https server on 127.0.0.1 speaking a sliver of the Docker
 * API; nothing else is contacted. Certificates are made with openssl in a temp directory.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerEngine } from "../../../src/runtime/docker/docker-engine.js";
import {
  cleartextEngineIssues,
  dockerRuntimeOptionsSchema,
  parseDockerHost,
} from "../../../src/runtime/docker/docker-runtime-options.js";
import { readDockerTls } from "../../../src/runtime/docker/docker-tls.js";

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-docker-tls-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string) => path.join(dir, name);

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
}

/** A self-signed CA, as Docker's TLS guide makes one. */
function ca(name: string): void {
  openssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    "-keyout",
    `${name}-key.pem`,
    "-out",
    `${name}.pem`,
  );
}

/** A certificate for `name` signed by CA `by`, with the given X.509 extensions. */
function signed(name: string, by: string, extensions: string): void {
  writeFileSync(file(`${name}.ext`), `${extensions}\n`);
  openssl(
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-subj",
    `/CN=${name}`,
    "-keyout",
    `${name}-key.pem`,
    "-out",
    `${name}.csr`,
  );
  openssl(
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${by}.pem`,
    "-CAkey",
    `${by}-key.pem`,
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
    "-out",
    `${name}.pem`,
  );
}

const tlsFiles = (client = "client", caName = "ca") => ({
  caFile: file(`${caName}.pem`),
  certFile: file(`${client}.pem`),
  keyFile: file(`${client}-key.pem`),
});

beforeAll(() => {
  ca("ca");
  ca("other-ca");
  signed("engine", "ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth");
  signed("engine-wrong-name", "ca", "subjectAltName=DNS:engine.example\nextendedKeyUsage=serverAuth");
  signed("client", "ca", "extendedKeyUsage=clientAuth");
  signed("stranger", "other-ca", "extendedKeyUsage=clientAuth");
});

describe("cleartext tcp:// engines", () => {
  it("are refused unless TLS is configured or cleartext allowed explicitly", () => {
    const hosts = ["unix:///var/run/docker.sock", "tcp://engine.example:2375"];
    expect(cleartextEngineIssues({ hosts })).toEqual([
      expect.objectContaining({ path: ["hosts", 1], message: expect.stringMatching(/without TLS/) }),
    ]);
    expect(cleartextEngineIssues({ hosts, allowInsecureTcp: true })).toEqual([]);
    expect(cleartextEngineIssues({ hosts, tls: tlsFiles() })).toEqual([]);
    expect(cleartextEngineIssues({ hosts: ["unix:///var/run/docker.sock"] })).toEqual([]);
  });

  it("are refused by the runtime's own options too", () => {
    const refused = dockerRuntimeOptionsSchema.safeParse({
      deployment: "t",
      hosts: ["tcp://engine.example:2375"],
    });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues.map((issue) => issue.message).join("\n")).toMatch(
      /root on its host: set runtime\.docker\.tls .* or runtime\.docker\.allowInsecureTcp: true/,
    );
    const allowed = dockerRuntimeOptionsSchema.safeParse({
      deployment: "t",
      hosts: ["tcp://engine.example:2375"],
      allowInsecureTcp: true,
    });
    expect(allowed.success).toBe(true);
  });

  it("default to Docker's ports: 2376 with TLS, 2375 without", () => {
    expect(parseDockerHost("tcp://engine.example", { tls: true })).toEqual({
      kind: "tcp",
      host: "engine.example",
      port: 2376,
    });
    expect(parseDockerHost("tcp://engine.example")).toMatchObject({ port: 2375 });
    expect(parseDockerHost("tcp://engine.example:3000", { tls: true })).toMatchObject({ port: 3000 });
  });
});

describe("readDockerTls", () => {
  it("reads the CA, the client certificate and its key", () => {
    const material = readDockerTls(tlsFiles());
    expect(material.ca.toString()).toBe(readFileSync(file("ca.pem"), "utf8"));
    expect(material.cert.toString()).toMatch(/BEGIN CERTIFICATE/);
    expect(material.key.toString()).toMatch(/PRIVATE KEY/);
  });

  it("names a file it cannot read", () => {
    expect(() => readDockerTls({ ...tlsFiles(), caFile: file("missing-ca.pem") })).toThrow(
      /cannot read the Docker TLS CA certificate \(caFile\) .*missing-ca\.pem \(ENOENT\)/,
    );
  });

  it("refuses a key that is not the certificate's", () => {
    expect(() => readDockerTls({ ...tlsFiles(), keyFile: file("stranger-key.pem") })).toThrow(
      /Docker TLS files .* are not usable/,
    );
  });

  it("refuses a file that is not PEM", () => {
    expect(() => readDockerTls({ ...tlsFiles(), certFile: file("engine.ext") })).toThrow(/not usable/);
  });
});

describe("DockerEngine over TLS", () => {
  let server: https.Server;
  let port: number;
  const clientsSeen: string[] = [];

  beforeAll(async () => {
    server = https.createServer(
      {
        key: readFileSync(file("engine-key.pem")),
        cert: readFileSync(file("engine.pem")),
        ca: readFileSync(file("ca.pem")),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as import("node:tls").TLSSocket).getPeerCertificate();
        clientsSeen.push(String(peer.subject?.CN ?? ""));
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ Version: "27.0.0-test", ApiVersion: "1.46" }));
      },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function engine(tls = tlsFiles()): DockerEngine {
    return new DockerEngine(0, `tcp://127.0.0.1:${port}`, 30_000, 5_000, tls);
  }

  it("verifies the engine against the CA and presents the client certificate", async () => {
    const docker = engine();
    try {
      const version = await docker.call((client) => client.version());
      expect(version.Version).toBe("27.0.0-test");
      expect(clientsSeen.at(-1)).toBe("client");
    } finally {
      docker.close();
    }
  });

  it("refuses an engine whose certificate another CA signed", async () => {
    const docker = engine({ ...tlsFiles(), caFile: file("other-ca.pem") });
    try {
      await expect(docker.call((client) => client.version())).rejects.toThrow(
        /self[- ]signed|unable to verify|certificate/i,
      );
    } finally {
      docker.close();
    }
  });

  it("is refused by the engine without a client certificate its CA signed", async () => {
    const docker = engine({ ...tlsFiles("stranger"), caFile: file("ca.pem") });
    try {
      await expect(docker.call((client) => client.version())).rejects.toThrow();
    } finally {
      docker.close();
    }
  });

  it("checks the engine's name, not only its CA", async () => {
    const wrongName = https.createServer({
      key: readFileSync(file("engine-wrong-name-key.pem")),
      cert: readFileSync(file("engine-wrong-name.pem")),
    });
    wrongName.on("request", (_req, res) => res.end("{}"));
    await new Promise<void>((resolve) => wrongName.listen(0, "127.0.0.1", resolve));
    const docker = new DockerEngine(
      0,
      `tcp://127.0.0.1:${(wrongName.address() as AddressInfo).port}`,
      30_000,
      5_000,
      tlsFiles(),
    );
    try {
      await expect(docker.call((client) => client.version())).rejects.toThrow(/altnames|IP: 127\.0\.0\.1/i);
    } finally {
      docker.close();
      await new Promise<void>((resolve) => wrongName.close(() => resolve()));
    }
  });
});
