/**
 * `Content-Disposition: attachment` for a downloaded file (RFC 6266): a browser that opens
 * a GetFile URL saves the file instead of rendering it, whatever its type. The name is given
 * twice: `filename*` carries it exactly (UTF-8, RFC 8187), and `filename` is an ASCII
 * fallback with anything unsafe in a quoted string replaced by `_`.
 */

/** The last segment of a workspace path (`a/b/c.txt` -> `c.txt`), or `download` when it has none. */
export function fileNameOf(path: string | undefined): string {
  const name = (path ?? "")
    .split("/")
    .filter((segment) => segment.length > 0)
    .at(-1);
  return name && name !== "." && name !== ".." ? name : "download";
}

/** RFC 8187 `attr-char`: every other byte of the UTF-8 name is percent-encoded. */
const ATTR_CHAR = /^[A-Za-z0-9!#$&+\-.^_`|~]$/;

function encodeExtValue(value: string): string {
  let encoded = "";
  // Byte by byte: a lone surrogate becomes U+FFFD instead of throwing, as encodeURIComponent would.
  for (const byte of Buffer.from(value, "utf8")) {
    const char = String.fromCharCode(byte);
    encoded +=
      byte < 0x80 && ATTR_CHAR.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

export function attachmentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeExtValue(fileName)}`;
}
