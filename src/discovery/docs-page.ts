/**
 * The public docs page (`GET /docs`, and `GET /docs/`): Swagger UI, from the swagger-ui-dist package, served
 * from the package's own files under `/docs/` (never a CDN: the gateway may have no way out).
 * It renders the public OpenAPI document, fetched from `/openapi.json` beside it.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The only files served under /docs/: a fixed list, so no request names a path. */
const packageAssets: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

/** Starts the renderer; a file of its own rather than inline, so the page's CSP allows no inline script. */
const START_SCRIPT = `const documentUrl = new URL("../openapi.json", document.currentScript.src).href;
window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({
    url: documentUrl,
    dom_id: "#docs",
    deepLinking: true,
  });
});
`;
const START_SCRIPT_NAME = "start-docs.js";

/**
 * The page, its files named relative to where it is served (so it works behind a proxy that
 * mounts the gateway under a prefix): `docs/x` from `/docs`, `x` from `/docs/`. The start
 * script finds the document from its own URL, the same from both.
 */
function docsPage(assets: "docs/" | ""): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>sandpool API</title>
  <link rel="stylesheet" href="${assets}swagger-ui.css">
  <link rel="icon" type="image/png" href="${assets}favicon-32x32.png">
</head>
<body>
  <div id="docs"></div>
  <script src="${assets}swagger-ui-bundle.js"></script>
  <script src="${assets}${START_SCRIPT_NAME}"></script>
</body>
</html>
`;
}

/** The page at `/docs`. */
export const DOCS_PAGE = docsPage("docs/");
/** The same page at `/docs/`. */
export const DOCS_INDEX_PAGE = docsPage("");

/** Scripts and styles from this gateway only; Swagger UI sets inline styles and shows data: images. */
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export interface DocsAsset {
  contentType: string;
  body: Uint8Array;
}

const assetsDir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
const cache = new Map<string, Promise<DocsAsset>>();

/** A file of the docs page by name, or undefined when it is none of them. */
export function docsAsset(name: string): Promise<DocsAsset> | undefined {
  if (name === START_SCRIPT_NAME) {
    return Promise.resolve({
      contentType: "text/javascript; charset=utf-8",
      body: new TextEncoder().encode(START_SCRIPT),
    });
  }
  const contentType = Object.hasOwn(packageAssets, name) ? packageAssets[name] : undefined;
  if (contentType === undefined) return undefined;
  let asset = cache.get(name);
  if (!asset) {
    asset = readFile(join(assetsDir, name)).then((bytes) => ({ contentType, body: new Uint8Array(bytes) }));
    asset.catch(() => cache.delete(name));
    cache.set(name, asset);
  }
  return asset;
}
