/**
 * The Python a session's interpreter runs at creation to import the configured modules
 * (`--preload-modules`), so the first `import pandas` of a leased session costs nothing.
 * It runs in the user's namespace, so it leaves no names behind: only sys.modules and
 * MPLBACKEND change. Missing modules are skipped (the lean image has none of them).
 */
export function preloadSource(modules: readonly string[]): string {
  return [
    "def __sandpool_preload(names):",
    "    import importlib, os",
    // Headless: no display, and an interactive backend would be wrong for a sandbox anyway.
    '    os.environ.setdefault("MPLBACKEND", "Agg")',
    "    loaded = []",
    "    for name in names:",
    "        try:",
    "            importlib.import_module(name)",
    "            loaded.append(name)",
    "        except Exception:",
    "            pass",
    '    print(",".join(loaded))',
    `__sandpool_preload(${JSON.stringify(modules)})`,
    "del __sandpool_preload",
    "",
  ].join("\n");
}
