/**
 * What makes a secret's binding and value acceptable, as zod schemas the admin API declares
 * (its OpenAPI document comes from them) and policy files reuse. Each rule names the field it
 * refuses, so an operator's 422 says what to fix:
 *
 * - hosts: one at least, each a host name or `*.suffix` (as egressAllowHosts; no addresses);
 * - ports 1-65535; paths start with `/`; methods are upper-case tokens;
 * - a header that is a valid field name and not one the proxy owns (Host, hop-by-hop ones,
 *   Proxy-*), with a template holding `{{secret}}` exactly once; or basic auth's username;
 * - the value: 1 byte to 8 KiB, and (in a header) no control characters that would split
 *   or end the header once rendered.
 */
import { z } from "zod";
import { hostPatternProblem } from "../policy-schema/egress-patterns.js";
import { CREDENTIAL_FREE_METHODS, type SecretBinding } from "./workspace-secrets.js";

export const SECRET_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const SECRET_NAME_RULE =
  "lower-case letters, digits, - and _, 63 at most, starting with a letter or digit";
export const SECRET_PLACEHOLDER = "{{secret}}";
export const MAX_SECRET_VALUE_BYTES = 8 * 1024;

/** RFC 9110 token characters: a header name or a method. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the proxy itself writes or that describe one hop only (RFC 9110 section 7.6.1). */
const RESERVED_HEADERS = new Set([
  "host",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
]);
/** Whether `text` holds a control character a header value may not (horizontal tab is allowed). */
function hasControl(text: string, allowTab = true): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && !(allowTab && code === 0x09)) || code === 0x7f) return true;
  }
  return false;
}

const hostSchema = z
  .string()
  .max(253)
  .superRefine((host, ctx) => {
    const problem = hostPatternProblem(host);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  })
  .transform((host) => host.toLowerCase());

const headerSchema = z
  .string()
  .max(128)
  .superRefine((name, ctx) => {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name)) ctx.addIssue({ code: "custom", message: `'${name}' is not an HTTP header name` });
    else if (RESERVED_HEADERS.has(lower) || lower.startsWith("proxy-"))
      ctx.addIssue({
        code: "custom",
        message: `'${name}' is written by the proxy or describes one hop only: it cannot carry a secret`,
      });
  })
  .meta({ description: "The request header the secret is sent in, e.g. Authorization." });

const templateSchema = z
  .string()
  .max(1024)
  .superRefine((template, ctx) => {
    const count = template.split(SECRET_PLACEHOLDER).length - 1;
    if (count !== 1)
      ctx.addIssue({
        code: "custom",
        message: `must contain ${SECRET_PLACEHOLDER} exactly once (it holds it ${count} times)`,
      });
    if (hasControl(template))
      ctx.addIssue({ code: "custom", message: "must not contain control characters (CR, LF, NUL...)" });
  })
  .meta({
    description: `The header's value, ${SECRET_PLACEHOLDER} standing for the secret: Bearer ${SECRET_PLACEHOLDER}.`,
  });

const basicAuthSchema = z
  .strictObject({
    username: z
      .string()
      .max(256)
      .refine((name) => !name.includes(":") && !hasControl(name), {
        message: "must not contain ':' or control characters",
      }),
  })
  .meta({ description: "HTTP basic auth instead of a header: this username, the secret as its password." });

/** Where a secret may go and how it is presented, as an operator writes it (flat). */
export const secretBindingFields = {
  hosts: z
    .array(hostSchema)
    .min(1, "at least one host: a secret is sent to the hosts it is bound to, and nowhere else")
    .max(64)
    .meta({ description: "Host names (exact, or *.suffix) the secret is sent to." }),
  ports: z
    .array(z.number().int().min(1).max(65_535))
    .min(1)
    .max(64)
    .optional()
    .meta({ description: "Only to these destination ports (default: any the workspace may reach)." }),
  paths: z
    .array(
      z
        .string()
        .max(1024)
        .refine((path) => path.startsWith("/") && !/\s/.test(path) && !hasControl(path, false), {
          message: "must start with / and hold no spaces or control characters",
        }),
    )
    .min(1)
    .max(64)
    .optional()
    .meta({ description: "Only for request paths starting with one of these." }),
  methods: z
    .array(
      z
        .string()
        .max(32)
        .regex(/^[A-Z][A-Z0-9_-]*$/, "must be an upper-case method such as GET or POST")
        .refine((method) => !CREDENTIAL_FREE_METHODS.has(method), {
          message: "TRACE and CONNECT never carry a secret (TRACE echoes the request back to the code)",
        }),
    )
    .min(1)
    .max(16)
    .optional()
    .meta({ description: "Only for these request methods." }),
  header: headerSchema.optional(),
  template: templateSchema.optional(),
  basicAuth: basicAuthSchema.optional(),
};

type FlatBinding = z.output<z.ZodObject<typeof secretBindingFields>>;

/** The presentation is a header with its template, or basic auth: exactly one of them. */
export function presentationProblems(binding: FlatBinding, ctx: z.RefinementCtx): void {
  const header = binding.header !== undefined || binding.template !== undefined;
  if (header && binding.basicAuth !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["basicAuth"],
      message: "give header and template, or basicAuth, not both",
    });
  } else if (!header && binding.basicAuth === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["header"],
      message: "required: header and template, or basicAuth",
    });
  } else if (binding.header === undefined && binding.template !== undefined) {
    ctx.addIssue({ code: "custom", path: ["header"], message: "required with template" });
  } else if (binding.template === undefined && binding.header !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["template"],
      message: `required with header, e.g. "Bearer ${SECRET_PLACEHOLDER}"`,
    });
  }
}

/** A binding as written in a policy file: no value (values go through the admin API only). */
export const secretBindingSchema = z.strictObject(secretBindingFields).superRefine(presentationProblems);

/** `PUT /workspaces/{ws}/secrets/{name}`: the value and its binding. */
export const secretPutSchema = z
  .strictObject({
    value: z
      .string()
      .min(1)
      .refine((value) => Buffer.byteLength(value) <= MAX_SECRET_VALUE_BYTES, {
        message: `must be ${MAX_SECRET_VALUE_BYTES} bytes at most`,
      })
      .meta({ description: "The secret itself: stored sealed, never shown again by any answer." }),
    ...secretBindingFields,
  })
  .superRefine((body, ctx) => {
    presentationProblems(body, ctx);
    // Rendered into a header, a CR or LF would end it and smuggle another.
    if (body.basicAuth === undefined && hasControl(body.value))
      ctx.addIssue({
        code: "custom",
        path: ["value"],
        message: "must not contain control characters (CR, LF, NUL...): it is sent in a header",
      });
  });

export type SecretPut = z.output<typeof secretPutSchema>;

/** The flat form an operator writes, as the binding the rest of the gateway reads. */
export function bindingOf(flat: FlatBinding): SecretBinding {
  return {
    hosts: flat.hosts,
    ...(flat.ports === undefined ? {} : { ports: flat.ports }),
    ...(flat.paths === undefined ? {} : { paths: flat.paths }),
    ...(flat.methods === undefined ? {} : { methods: flat.methods }),
    presentation:
      flat.basicAuth !== undefined
        ? { basicAuth: { username: flat.basicAuth.username } }
        : { header: flat.header!, template: flat.template! },
  };
}
