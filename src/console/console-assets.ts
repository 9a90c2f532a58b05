/**
 * The operator console's files: the browser app in web/console, bundled by `npm run build`
 * (web/console/build.mjs) into dist/console-assets, a flat folder of a page, a script and its
 * styles. They are read once, on the first request for them, and kept in memory: a few hundred
 * kilobytes. A name is looked up in what the folder held, never joined to a path, so no
 * request can reach another file. Without a build (running from src/), there are no assets
 * and the console answers that it is not built.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface ConsoleAsset {
  body: Uint8Array;
  contentType: string;
}

export interface ConsoleAssets {
  /** The file `name` of the built console (`index.html`, `app.js`), or undefined. */
  get(name: string): ConsoleAsset | undefined;
}

/** Where `npm run build` puts the bundle: dist/console-assets, beside dist/console/. */
export const BUILT_CONSOLE_DIR = fileURLToPath(new URL("../console-assets/", import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".map": "application/json; charset=utf-8",
};

/** The console's files in `dir`, read on first use; an absent folder is a console with no files. */
export function consoleAssetsIn(dir: string = BUILT_CONSOLE_DIR): ConsoleAssets {
  let files: Map<string, ConsoleAsset> | undefined;
  const load = (): Map<string, ConsoleAsset> => {
    const found = new Map<string, ConsoleAsset>();
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return found; // not built
    }
    for (const name of names) {
      const contentType = CONTENT_TYPES[path.extname(name)];
      if (contentType) found.set(name, { body: readFileSync(path.join(dir, name)), contentType });
    }
    return found;
  };
  return {
    get(name) {
      files ??= load();
      return files.get(name);
    },
  };
}
