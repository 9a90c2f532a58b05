/**
 * A file name's media type. The mime database is a large JSON document: it is loaded on
 * the first file operation, not at start-up, where parsing it would slow every sandbox.
 */
let lookup: ((name: string) => string | false) | undefined;

export async function mediaTypeOf(name: string): Promise<string | undefined> {
  lookup ??= (await import("mime-types")).default.lookup;
  return lookup(name) || undefined;
}
