/**
 * The Python a session's interpreter runs at creation to import the configured modules
 * (`--preload-modules`), so the first `import pandas` of a leased session costs nothing.
 * It runs in the user's namespace, so it leaves no names behind: only sys.modules,
 * MPLBACKEND and MPLCONFIGDIR change. Missing modules are skipped (the lean image has none).
 *
 * `mplConfigDir` keeps matplotlib's font cache and config out of the workspace (HOME):
 * a fresh session's workspace stays empty, as the reference's is.
 */
export function preloadSource(modules: readonly string[], mplConfigDir: string): string {
  return [
    "def __sandpool_preload(names, mpl_config_dir):",
    "    import importlib, os",
    // Headless: no display, and an interactive backend would be wrong for a sandbox anyway.
    '    os.environ.setdefault("MPLBACKEND", "Agg")',
    '    os.environ.setdefault("MPLCONFIGDIR", mpl_config_dir)',
    "    loaded = []",
    "    for name in names:",
    "        try:",
    "            importlib.import_module(name)",
    "            loaded.append(name)",
    "        except Exception:",
    "            pass",
    '    print(",".join(loaded))',
    // JSON string and list literals are Python literals too.
    `__sandpool_preload(${JSON.stringify(modules)}, ${JSON.stringify(mplConfigDir)})`,
    "del __sandpool_preload",
    "",
  ].join("\n");
}
