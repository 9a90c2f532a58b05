/**
 * The handlers of the discovery operations (`service.openapi`, `service.docs` and
 * `service.docs.index`, `service.docs.asset`). Open to anyone: `/openapi.json` shows the caller's view, the
 * public one without a credential or with a workspace token, every operation with an
 * admin token (the binding has refused a bad token with 401 before this runs).
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { OperationHandlers } from "../operations/handler.js";
import { serviceOperations } from "../operations/service-operations.js";
import { handlersFor } from "../operations/typed-handlers.js";
import { DOCS_CSP, DOCS_INDEX_PAGE, DOCS_PAGE, docsAsset } from "./docs-page.js";
import { type DocumentViewer, openApiDocument } from "./openapi-document.js";

/** Each view is generated once: the registry is frozen. */
const documents = new Map<DocumentViewer, string>();
function documentText(viewer: DocumentViewer): string {
  let text = documents.get(viewer);
  if (text === undefined) {
    text = JSON.stringify(openApiDocument(viewer));
    documents.set(viewer, text);
  }
  return text;
}

function docsPageAnswer(page: string) {
  return {
    kind: "raw" as const,
    status: 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": DOCS_CSP,
      "x-content-type-options": "nosniff",
    },
    body: page,
  };
}

export const discoveryHandlers: OperationHandlers = handlersFor(serviceOperations, {
  "service.openapi": async ({ caller }) => {
    const viewer: DocumentViewer = caller.admin === true ? "admin" : "public";
    return {
      kind: "raw",
      status: 200,
      // The answer depends on the credential: a cache must not hand one caller's view to another.
      headers: {
        "content-type": "application/json",
        vary: "Authorization",
        "cache-control": "private, no-cache",
      },
      body: documentText(viewer),
    };
  },
  "service.docs": async () => docsPageAnswer(DOCS_PAGE),
  "service.docs.index": async () => docsPageAnswer(DOCS_INDEX_PAGE),
  "service.docs.asset": async ({ args }) => {
    const asset = docsAsset(args.params.asset);
    if (!asset) throw new SandpoolError("request.not_found", "no such file of the docs page");
    const { contentType, body } = await asset;
    return {
      kind: "raw",
      status: 200,
      headers: {
        "content-type": contentType,
        "cache-control": "public, max-age=3600",
        "x-content-type-options": "nosniff",
      },
      body,
    };
  },
});
