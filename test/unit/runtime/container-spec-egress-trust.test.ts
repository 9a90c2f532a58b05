/**
 * An egress sandbox whose proxy adds credentials is told to trust the deployment's egress
 * CA: the bundle and the CA in its (gateway-owned) directory; one without, and a sandbox
 * without egress, are told nothing (a variable naming a missing file would break TLS).
 */
import { describe, expect, it } from "vitest";
import { buildContainerSpec } from "../../../src/runtime/docker/container-spec.js";
import { dockerRuntimeOptionsSchema } from "../../../src/runtime/docker/docker-runtime-options.js";
import { sandboxEnvironment } from "../../../src/sandbox/tools/process-group.js";
import { specInput } from "../../support/container-spec-input.js";

const options = dockerRuntimeOptionsSchema.parse({ hosts: ["unix:///var/run/docker.sock"], deployment: "t" });
const envOf = (overrides: Parameters<typeof specInput>[1]) =>
  buildContainerSpec(options, specInput(options, overrides)).Env!;

describe("an egress sandbox's trust", () => {
  it("names the bundle and the CA when the proxy terminates TLS", () => {
    expect(envOf({ egress: true, egressTrust: true })).toEqual(
      expect.arrayContaining([
        "SSL_CERT_FILE=/run/sandpool/ca-bundle.pem",
        "REQUESTS_CA_BUNDLE=/run/sandpool/ca-bundle.pem",
        "CURL_CA_BUNDLE=/run/sandpool/ca-bundle.pem",
        "NODE_EXTRA_CA_CERTS=/run/sandpool/ca.pem",
      ]),
    );
  });

  it("puts the bundle, read-only, where OpenSSL looks by default (env is ignored under AT_SECURE)", () => {
    const spec = buildContainerSpec(options, specInput(options, { egress: true, egressTrust: true }));
    expect(spec.HostConfig!.Mounts).toEqual([
      { Type: "bind", Source: "/run/sandpool/test/sbx1", Target: "/run/sandpool", ReadOnly: false },
      {
        Type: "bind",
        Source: "/run/sandpool/test/sbx1/ca-bundle.pem",
        Target: "/usr/lib/ssl/cert.pem",
        ReadOnly: true,
      },
    ]);
    const plain = buildContainerSpec(options, specInput(options, { egress: true }));
    expect(plain.HostConfig!.Mounts).toHaveLength(1);
  });

  it("names nothing without a CA, or without egress", () => {
    for (const env of [envOf({ egress: true }), envOf({ egress: false, egressTrust: true })])
      expect(env.filter((line) => /CA_|CERT/.test(line))).toEqual([]);
  });

  it("reaches user code: the sandbox server passes the trust variables on", () => {
    const saved = { ...process.env };
    try {
      process.env.SSL_CERT_FILE = "/run/sandpool/ca-bundle.pem";
      process.env.NODE_EXTRA_CA_CERTS = "/run/sandpool/ca.pem";
      process.env.SANDPOOL_SECRET_THING = "x";
      const env = sandboxEnvironment("/home/sandbox");
      expect(env.SSL_CERT_FILE).toBe("/run/sandpool/ca-bundle.pem");
      expect(env.NODE_EXTRA_CA_CERTS).toBe("/run/sandpool/ca.pem");
      expect(env.SANDPOOL_SECRET_THING).toBeUndefined();
    } finally {
      process.env = saved;
    }
  });
});
