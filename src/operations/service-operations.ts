/** The service endpoints: open to anyone, never under the contract's base path. */
import type { OperationSpec } from "./operation.js";

const service = { group: "service", mountedFor: "anyone", effects: ["read"], success: 200 } as const;

export const serviceOperations = [
  {
    ...service,
    id: "service.healthz",
    summary: "Liveness.",
    method: "GET",
    path: "/healthz",
    label: "healthz",
    answers: ["json"],
  },
  {
    ...service,
    id: "service.readyz",
    summary: "Readiness: 503 while the gateway cannot serve.",
    method: "GET",
    path: "/readyz",
    label: "readyz",
    answers: ["json"],
  },
  {
    ...service,
    id: "service.metrics",
    summary: "Prometheus metrics.",
    method: "GET",
    path: "/metrics",
    label: "metrics",
    answers: ["text"],
  },
  {
    ...service,
    id: "service.openapi",
    credential: "optional",
    // A credential sent is verified: a bad one is refused as on any other operation.
    errors: ["auth.invalid", "auth.expired", "auth.rate_limited", "auth.introspection_unavailable"],
    summary:
      "The OpenAPI 3.1 document: the contract without a credential, every operation with an admin token.",
    method: "GET",
    path: "/openapi.json",
    label: "openapi",
    answers: ["json"],
  },
  {
    ...service,
    id: "service.docs",
    summary: "The API's docs page.",
    method: "GET",
    path: "/docs",
    label: "docs",
    answers: ["text"],
  },
  {
    ...service,
    id: "service.docs.index",
    summary: "The docs page at `/docs/`, as at `/docs` (a trailing slash is how many people type it).",
    method: "GET",
    path: "/docs/",
    label: "docs_index",
    answers: ["text"],
  },
  {
    ...service,
    id: "service.docs.asset",
    summary: "A file of the docs page (the renderer's script and style sheet), served from the package.",
    method: "GET",
    path: "/docs/{asset}",
    label: "docs_asset",
    errors: ["request.not_found"],
    answers: ["bytes"],
  },
] as const satisfies readonly OperationSpec[];
