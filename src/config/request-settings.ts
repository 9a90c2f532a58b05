/**
 * The gateway's own listeners and what they take: the admin listener, request limits, the
 * Host and Origin checks and the throttle on failed authentications (gateway-config.ts).
 */
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";
import { DEFAULT_CALLS_IN_FLIGHT_PER_WORKSPACE } from "../http/middleware/calls-in-flight.js";

const positive = z.number().int().min(1);

/** `*`, a host name (`sandpool.example`), a domain and its subdomains (`.example`), or an IP address. */
const hostPattern = z
  .string()
  .regex(/^(\*|\.?[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])$/, "a host name, .domain, an IP address or *");
/** `*`, or an origin as a browser sends it: scheme://host[:port], nothing after it. */
const originPattern = z
  .string()
  .regex(/^(\*|https?:\/\/[A-Za-z0-9_.\-[\]:]+)$/, "an origin (https://host[:port]) or *");

/**
 * The admin API (`/admin/v1`) on a listener of its own, e.g. loopback or a private
 * interface only; the public listener then answers those paths as unknown routes.
 * Unset: the admin API shares the public listener.
 */
export const adminListenerSettingsSchema = z
  .strictObject({
    host: z
      .string()
      .min(1)
      .default("127.0.0.1")
      .register(settingDocs, {
        doc: "Address of the admin listener (keep it private).",
        env: {
          name: "SANDPOOL_ADMIN_HOST",
          description: "serve the admin API on its own listener, at this address",
        },
      }),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .default(8081)
      .register(settingDocs, {
        doc: "Port of the admin listener; must differ from port.",
        env: {
          name: "SANDPOOL_ADMIN_PORT",
          description: "serve the admin API on its own listener, on this port (a whole number)",
        },
      }),
  })
  .optional()
  .register(settingDocs, {
    doc: "Serve the admin API (/admin/v1) on a listener of its own; the public one then answers its paths as unknown.",
  });

export const limitsSettingsSchema = z
  .strictObject({
    maxJsonBodyBytes: positive
      .default(10 * 1024 * 1024)
      .register(settingDocs, { doc: "Largest JSON request body; larger ones get 413." }),
    execDeadlineBufferMs: positive
      .default(10_000)
      .register(settingDocs, { doc: "Added to timeout_seconds for the deadline of an execution call." }),
    sandboxRequestTimeoutMs: positive
      .default(30_000)
      .register(settingDocs, { doc: "Deadline of every other call to a sandbox." }),
    headerReadTimeoutMs: positive.default(10_000).register(settingDocs, {
      doc: "A request's whole header block must arrive within this (slower clients get 408 and are cut off).",
    }),
    bodyReadTimeoutMs: positive.default(30_000).register(settingDocs, {
      doc: "A request body that sends nothing this long while the gateway is reading it is cut off (per read, not per body).",
    }),
    maxUnauthenticatedRequests: positive.default(256).register(settingDocs, {
      doc: "Requests in flight not yet past authentication (/metrics too); more get 503 request.busy. /healthz and /readyz never count.",
    }),
    maxCallsInFlightPerWorkspace: positive
      .default(DEFAULT_CALLS_IN_FLIGHT_PER_WORKSPACE)
      .register(settingDocs, {
        doc: "Contract calls of one workspace in flight at once, per replica (N replicas admit up to N times it); more get 429.",
      }),
    writeStallTimeoutMs: positive.default(30_000).register(settingDocs, {
      doc: "A client whose answer stays unread this long (writes backed up) is cut off, and the answer's memory freed.",
    }),
    /**
     * A sandbox's successful answer read into memory (Execute, PutFile): 1 MiB of stdout
     * and of stderr fit even fully JSON-escaped. An Execute answer over it becomes a 200
     * whose result says the output was dropped. Downloads stream and are not capped here.
     */
    maxSandboxAnswerBytes: positive.default(16 * 1024 * 1024).register(settingDocs, {
      doc: "Most bytes of a sandbox's Execute or PutFile answer the gateway reads; a larger Execute answer becomes a 200 saying the output was dropped.",
    }),
    maxSandboxErrorBytes: positive.default(64 * 1024).register(settingDocs, {
      doc: "Most bytes of a sandbox's error answer the gateway reads; more is 502 sandbox.bad_answer.",
    }),
    maxBufferedAnswerBytes: positive.default(128 * 1024 * 1024).register(settingDocs, {
      doc: "Most bytes of sandbox answers read into memory at once, all calls together; further reads wait their turn.",
    }),
    /**
     * Warm-up sandbox starts in flight at once on one replica, all pools together (on top
     * of each pool's warmupConcurrency). Unset: the machine's CPU count.
     */
    maxWarmupStarts: positive.optional().register(settingDocs, {
      doc: "Warm-up sandbox starts in flight at once per replica, all pools together; unset: the machine's CPU count. Cold starts never wait for it (they keep to what the engine absorbs).",
      example: 4,
      env: {
        name: "SANDPOOL_MAX_WARMUP_STARTS",
        description: "warm-up sandbox starts at once per replica, all pools together (default: CPU count)",
      },
    }),
  })
  .prefault({})
  .register(settingDocs, { doc: "Request limits." });

export const httpSettingsSchema = z
  .strictObject({
    allowedHosts: z
      .array(hostPattern)
      .default([])
      .register(settingDocs, {
        doc: 'Other Host names answered: exact names, ".example.com" for a domain and its subdomains, "*" for any Host.',
        env: {
          name: "SANDPOOL_ALLOWED_HOSTS",
          description:
            "Host names answered besides loopback names and IP addresses, comma-separated (* for any)",
        },
      }),
    allowedOrigins: z
      .array(originPattern)
      .default([])
      .register(settingDocs, {
        doc: 'Browser origins allowed (exact scheme://host[:port], or "*"); requests without Origin (Otari) always pass.',
        env: {
          name: "SANDPOOL_ALLOWED_ORIGINS",
          description: "browser origins allowed besides loopback ones, comma-separated (* for any)",
        },
      }),
  })
  .prefault({})
  .register(settingDocs, {
    doc: "Host and Origin checks (403). Loopback names and IP addresses are always answered; loopback origins always pass.",
  });

export const authFailuresSettingsSchema = z
  .strictObject({
    maxFailures: positive.default(20).register(settingDocs, { doc: "Failures allowed within the window." }),
    windowMs: positive.default(60_000).register(settingDocs, { doc: "The window, in milliseconds." }),
  })
  .prefault({})
  .register(settingDocs, {
    doc: "Failed authentications allowed per credential fingerprint before 429.",
  });
