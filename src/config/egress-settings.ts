/**
 * `egress`: the filtering proxy egress pools reach the network through (src/egress), its
 * bounds per sandbox and the CA it signs with (gateway-config.ts).
 */
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";
import { cidrSchema } from "../policy-schema/egress-schemas.js";

const positive = z.number().int().min(1);

/**
 * The filtering proxy egress pools reach the network through (src/egress): what no
 * workspace's grant can open, and its bounds per sandbox.
 */
export const egressSettingsSchema = z
  .strictObject({
    denyCidrs: z.array(cidrSchema).default([]).register(settingDocs, {
      doc: "Ranges refused whatever a workspace allows, e.g. the cluster's pod and service ranges.",
    }),
    allowPorts: z.array(z.number().int().min(1).max(65_535)).default([]).register(settingDocs, {
      doc: "When non-empty, the only destination ports allowed (e.g. [80, 443]).",
    }),
    maxTunnelsPerSandbox: positive
      .default(64)
      .register(settingDocs, { doc: "Connections through the proxy one sandbox may hold open." }),
    connectTimeoutMs: positive
      .default(10_000)
      .register(settingDocs, { doc: "Deadline of resolving and connecting to a destination." }),
    idleTimeoutMs: positive
      .default(300_000)
      .register(settingDocs, { doc: "A connection idle this long in both directions is closed." }),
    /**
     * The CA the proxy signs leaf certificates with for hosts a credential is bound to
     * (src/egress/tls): both files, or neither (then one is made and kept in Postgres).
     */
    caCertFile: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "PEM certificate of the CA egress sandboxes trust, for hosts a credential is bound to; with caKeyFile, else one is made and kept in Postgres.",
        example: "/etc/sandpool/egress-ca/tls.crt",
        env: {
          name: "SANDPOOL_EGRESS_CA_CERT_FILE",
          description: "PEM certificate of the egress CA sandboxes trust (with SANDPOOL_EGRESS_CA_KEY_FILE)",
        },
      }),
    caKeyFile: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "PEM private key of egress.caCertFile (EC P-256/P-384 or RSA); it never leaves the gateway.",
        example: "/etc/sandpool/egress-ca/tls.key",
        env: { name: "SANDPOOL_EGRESS_CA_KEY_FILE", description: "PEM private key of the egress CA" },
      }),
    upstreamCaFiles: z
      .array(z.string().min(1))
      .default([])
      .register(settingDocs, {
        doc: "Extra PEM CA files the proxy verifies upstream servers against (besides Node's roots), where it adds credentials.",
        env: {
          name: "SANDPOOL_EGRESS_UPSTREAM_CA_FILES",
          description: "extra PEM CA files the egress proxy trusts for upstream servers, comma-separated",
        },
      }),
  })
  .refine((egress) => (egress.caCertFile === undefined) === (egress.caKeyFile === undefined), {
    message: "egress.caCertFile and egress.caKeyFile go together: set both, or neither",
  })
  .prefault({})
  .register(settingDocs, {
    doc: "The filtering proxy of egress pools: loopback, private, link-local, ULA and the host are refused unless a grant allows them.",
  });
