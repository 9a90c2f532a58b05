/**
 * Generators of hostile input for the gateway fuzz suite: file paths in every escape
 * spelling, request-target spellings, mutated JSON, invalid UTF-8, deep nesting and
 * forged or broken JWTs. Pure: nothing here sends a request.
 *
 * Safety: the fuzzer runs against the process runtime, whose sandboxes share this
 * machine's file system, so a path the generators aim at a *write* always ends in a name
 * carrying `marker` (never an existing file): if confinement ever broke, the damage is a
 * stray marker file the suite then finds, not an overwritten system file.
 */
import { createHmac } from "node:crypto";
import fc from "fast-check";

/** Names planted in and around the workspace by the suite (see gateway-fuzz.test.ts). */
export const PLANTED = {
  /** A symlink in the workspace to the canary directory outside it. */
  outsideLink: "outside-link",
  /** A symlink in the workspace to `/`. */
  rootLink: "root-link",
  /** A symlink in the workspace to the secret file outside it. */
  fileLink: "file-link",
  /** A symlink to itself. */
  loopLink: "loop-link",
  /** A symlink to nowhere outside. */
  danglingLink: "dangling-link",
  /** A symlink that stays inside: to `sub`. */
  insideLink: "inside-link",
  /** A named pipe: reading it would block forever. */
  fifo: "a-fifo",
  /** A real directory inside the workspace, with `inner/ok.txt` in it. */
  subdir: "sub",
} as const;

/** Segments that try to climb out, in every spelling we know of. */
const CLIMBS = [
  "..",
  "../..",
  "...",
  ".",
  "%2e%2e",
  "%2E%2E",
  ".%2e",
  "%2e.",
  "%252e%252e",
  "%25252e%25252e",
  "%c0%ae%c0%ae",
  "%e0%80%ae%e0%80%ae",
  "..%00",
  "..\u0000",
  "\u0000",
  "..;",
  ". .",
  "..\\..",
  "\\..",
  "\u2024\u2024", // one dot leader, twice
  "\u2025", // two dot leader
  "\uff0e\uff0e", // fullwidth full stops
  "\u3002\u3002", // ideographic full stops
  "..\u200b", // with a zero-width space
  "~",
  "~root",
  "$HOME",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion spelled literally is the point
  "${HOME}",
  "$(pwd)",
  "`pwd`",
  "*",
  "?",
  "..\ud800", // a lone surrogate
];

/** Ways to join segments: real and look-alike separators. */
const SEPARATORS = [
  "/",
  "/",
  "//",
  "\\",
  "%2f",
  "%2F",
  "%5c",
  "%252f",
  "\u2215", // division slash
  "\u2044", // fraction slash
  "\uff0f", // fullwidth solidus
  "\u29f8", // big solidus
  "%c0%af", // overlong "/"
  "/./",
];

/** Beginnings that make a path absolute or otherwise rooted elsewhere. */
const ROOTS = [
  "",
  "",
  "",
  "/",
  "//",
  "\\",
  "\\\\?\\",
  "C:\\",
  "C:/",
  "file:///",
  "file://localhost/",
  "%2f",
  "/proc/self/cwd/",
  "/proc/self/root/",
  "/dev/fd/",
  "/tmp/",
  "~/",
];

/** Files worth reading if confinement broke (reads only; never written). */
const SENSITIVE = ["/etc/passwd", "/etc/shadow", "/proc/self/environ", "/proc/1/environ", "/proc/self/fd/0"];

function plantedSegments(): fc.Arbitrary<string> {
  return fc.constantFrom(
    ...Object.values(PLANTED),
    "sub/inner",
    "sub/inner/ok.txt",
    "secret-outside.txt",
    // Odd names the suite plants in `sub` (as user code could): they end up in headers and listings.
    "sub/new\nline",
    "sub/tab\there",
    "sub/esc\u001b[31m",
    "sub/-rf",
    'sub/quo"te;.txt',
    "sub/\u00fcn\u00ef\u202e.txt",
    "sub/*",
    `sub/${"n".repeat(255)}`,
  );
}

/** A file name that, wherever it lands, is recognisably the fuzzer's own. */
export function markerName(marker: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(marker),
    fc.stringMatching(/^[a-z0-9]{1,8}$/).map((suffix) => `${marker}-${suffix}`),
    fc.constant(`${marker}.txt`),
    fc.constant(`.${marker}`),
    fc.constant(`${marker}${"x".repeat(300)}`), // past NAME_MAX
  );
}

/**
 * A hostile path: a root, a few climbing, planted or random segments joined by real or
 * look-alike separators, and a last segment. For writes the last segment is a marker name.
 */
export function hostilePath(options: { marker: string; forWrite: boolean }): fc.Arbitrary<string> {
  const segment = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...CLIMBS) },
    { weight: 3, arbitrary: plantedSegments() },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
  );
  const last = options.forWrite
    ? markerName(options.marker)
    : fc.oneof(markerName(options.marker), plantedSegments(), fc.constantFrom(...SENSITIVE));
  const structured = fc
    .tuple(
      fc.constantFrom(...ROOTS),
      fc.array(fc.tuple(segment, fc.constantFrom(...SEPARATORS)), { maxLength: 6 }),
      last,
    )
    .map(([root, middle, tail]) => `${root}${middle.map(([s, sep]) => s + sep).join("")}${tail}`);
  const veryLong = fc
    .tuple(
      fc.integer({ min: 200, max: 3000 }),
      fc.constantFrom("a/", "../", "./", "%2e%2e/", `${"x".repeat(40)}/`),
      last,
    )
    .map(([count, piece, tail]) => piece.repeat(count) + tail);
  // Paths that may well be fine: through planted names only, so some calls get past confinement.
  const plausible = fc.oneof(
    fc
      .tuple(fc.array(plantedSegments(), { maxLength: 2 }), last)
      .map(([middle, tail]) => [...middle, tail].join("/")),
    fc
      .tuple(
        fc.constantFrom("", "./", "sub/", "inside-link/", "sub/inner/", "inside-link/inner/", "sub//inner/"),
        options.forWrite
          ? markerName(options.marker)
          : fc.constantFrom("inner/ok.txt", "ok.txt", "inner", ""),
      )
      .map(([head, tail]) => head + tail),
  );
  const reads: fc.Arbitrary<string>[] = options.forWrite ? [] : [fc.constantFrom(...SENSITIVE)];
  return fc.oneof(
    { weight: 8, arbitrary: structured },
    { weight: 3, arbitrary: plausible },
    { weight: 1, arbitrary: veryLong },
    ...reads.map((arbitrary) => ({ weight: 1, arbitrary })),
  );
}

/**
 * How a value travels in a query string: properly encoded, or nearly raw (only what an
 * HTTP request line cannot carry is escaped, so `%2e`, `%ff` and friends arrive as written),
 * or encoded twice.
 */
export type QueryEncoding = "component" | "raw" | "double";
export const queryEncodings = fc.constantFrom<QueryEncoding>("component", "raw", "double");

export function encodeForQuery(value: string, encoding: QueryEncoding): string {
  if (encoding === "component") return percentEncodeAll(value);
  if (encoding === "double") return percentEncodeAll(percentEncodeAll(value));
  return rawEncode(value);
}

/** Like encodeURIComponent, but a lone surrogate becomes U+FFFD instead of throwing. */
function percentEncodeAll(value: string): string {
  let out = "";
  for (const byte of Buffer.from(value, "utf8")) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Escapes only what a request line cannot hold, plus `#` and `&` (they would end the value). */
export function rawEncode(value: string): string {
  let out = "";
  for (const byte of Buffer.from(value, "utf8")) {
    const char = String.fromCharCode(byte);
    out +=
      byte <= 0x20 || byte >= 0x7f || char === "#" || char === "&"
        ? `%${byte.toString(16).padStart(2, "0")}`
        : char;
  }
  return out;
}

/** Request-target spellings of a contract path with a hostile piece spliced into it. */
export function hostileTarget(sessionId: string): fc.Arbitrary<string> {
  const pieces = fc.constantFrom(
    "..",
    ".",
    "%2e%2e",
    "%2E",
    "%2f",
    "%2F",
    "%5c",
    "%00",
    "%252e%252e",
    "%252f",
    "%c0%ae%c0%ae",
    "%ff",
    "%",
    "%zz",
    ";",
    "..;",
    "%u002e",
    "%e2%80%a4%e2%80%a4",
    "%ef%bc%8f",
    "",
    "x".repeat(5000),
  );
  const suffixes = ["", "/exec", "/files", "/files/list", "/files?path=a", "/files/list?path=."];
  return fc
    .tuple(
      fc.constantFrom("/sessions", `/sessions/${sessionId}`, "/admin/v1/workspaces", "/admin/v1", ""),
      fc.array(pieces, { minLength: 1, maxLength: 4 }),
      fc.constantFrom(...suffixes),
      fc.constantFrom("/", "//", "/./"),
    )
    .map(([head, middle, suffix, sep]) => `${head}${sep}${middle.join(sep)}${suffix}`)
    .filter((target) => target.startsWith("/"));
}

/** Bytes that are not UTF-8: stray continuation bytes, overlong forms, encoded surrogates, truncations. */
export const invalidUtf8 = fc.constantFrom(
  Buffer.from([0xff]),
  Buffer.from([0xfe, 0xff]),
  Buffer.from([0x80]),
  Buffer.from([0xc0, 0xae]), // overlong "."
  Buffer.from([0xc0, 0xaf]), // overlong "/"
  Buffer.from([0xe0, 0x80, 0xae]),
  Buffer.from([0xed, 0xa0, 0x80]), // a UTF-16 surrogate encoded as UTF-8
  Buffer.from([0xf4, 0x90, 0x80, 0x80]), // above U+10FFFF
  Buffer.from([0xe2, 0x82]), // truncated
  Buffer.from([0x00]),
  Buffer.from([0xef, 0xbb, 0xbf]), // a byte-order mark
);

/** JSON nested `depth` levels deep, in one of several shapes. */
export function deeplyNested(depth: number, shape: "array" | "object" | "mixed"): string {
  if (shape === "array") return `${"[".repeat(depth)}${"]".repeat(depth)}`;
  if (shape === "object") return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
  return `${'{"a":['.repeat(depth)}${"]}".repeat(depth)}`;
}

/** Edits that turn a valid JSON text into a broken or subtly different one. */
export function mutateJsonText(text: string): fc.Arbitrary<string> {
  const position = fc.integer({ min: 0, max: Math.max(0, text.length) });
  return fc.oneof(
    position.map((at) => text.slice(0, at)), // truncated
    fc
      .tuple(
        position,
        fc.constantFrom("{", "}", "[", "]", ",", ":", '"', "\\", "\u0000", "NaN", "1e999", "-", "\ud800"),
      )
      .map(([at, insert]) => text.slice(0, at) + insert + text.slice(at)),
    position.map((at) => text.slice(0, at) + text.slice(at + 1)), // one character dropped
    fc.constant(`${text}${text}`),
    fc.constant(`\ufeff${text}`),
    fc.constant(` \t\r\n${text} \n`),
    fc.constant(`${text},`),
    fc.constant(text.replaceAll('"', "'")),
  );
}

/**
 * Random JSON values with the shapes our schemas switch on thrown in: known and unknown tool
 * names, the fields each expects with wrong types, prototype-polluting keys.
 */
export function jsonish(): fc.Arbitrary<unknown> {
  const weird = fc.constantFrom<unknown>(
    null,
    true,
    0,
    -1,
    1.5,
    2 ** 53,
    1e308,
    -0,
    "",
    "x".repeat(10_000),
    [],
    {},
    { __proto__: { polluted: true } },
    JSON.parse('{"__proto__":{"polluted":true}}'),
    { constructor: { prototype: { polluted: true } } },
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
    { weight: 2, arbitrary: weird },
    { weight: 1, arbitrary: fc.anything({ maxDepth: 3, withNullPrototype: true }).map((v) => safeJson(v)) },
  );
}

/** `fc.anything` may produce values JSON cannot carry (undefined, bigint, symbols...): keep what survives. */
function safeJson(value: unknown): unknown {
  try {
    const text = JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? String(v) : v));
    return text === undefined ? null : JSON.parse(text);
  } catch {
    return null;
  }
}

export const toolNames = fc.constantFrom<unknown>(
  "code_execution",
  "bash_code_execution",
  "text_editor_code_execution",
  "Code_Execution",
  "code_execution ",
  "code_execution\u0000",
  "__proto__",
  "constructor",
  "toString",
  "",
  null,
  1,
  ["code_execution"],
  { name: "code_execution" },
);

// --- JWTs -------------------------------------------------------------------------------

/** Random text an HTTP client will put in a header (visible ASCII; the rest cannot be sent at all). */
function headerSafe(): fc.Arbitrary<string> {
  return fc.string({ unit: "binary-ascii", maxLength: 60 }).map((text) => text.replace(/[^\x21-\x7e]/g, "~"));
}

const b64 = (value: unknown) =>
  Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** An HS256-style token over any header and payload, signed with `secret` (however wrong the rest). */
export function signedToken(header: unknown, payload: unknown, secret: string): string {
  const signingInput = `${b64(header)}.${b64(payload)}`;
  const signature = createHmac("sha256", secret).update(signingInput).digest("base64url");
  return `${signingInput}.${signature}`;
}

export interface HostileToken {
  kind: string;
  /** The whole Authorization header value, or undefined for none. */
  authorization: string | undefined;
}

/**
 * Authorization headers that must never authenticate: unsigned, wrongly signed, alg
 * confusion, broken encodings, missing or ill-typed claims, expired, kid/jku/crit tricks,
 * huge. `secret` is the gateway's real HS256 secret, so claim checks (not only the
 * signature) are what refuses the ones signed with it.
 */
export function hostileToken(secret: string, wrongSecret: string): fc.Arbitrary<HostileToken> {
  const now = Math.floor(Date.now() / 1000);
  const good = { workspace_id: "fuzz-jwt", iat: now, exp: now + 600 };
  const header = { alg: "HS256", typ: "JWT" };
  const bad = (kind: string, token: string): HostileToken => ({ kind, authorization: `Bearer ${token}` });
  const badWorkspace = fc.constantFrom<unknown>(
    42,
    0,
    true,
    null,
    ["fuzz-jwt"],
    { id: "fuzz-jwt" },
    "",
    " ",
    "../fuzz-jwt",
    "fuzz/jwt",
    "fuzz-jwt\u0000",
    "-starts-with-dash",
    "_underscore",
    "x".repeat(129),
    "fuzz jwt",
    "fuzz-jwt\n",
    "\u0430dmin", // Cyrillic a
  );
  const badExp = fc.constantFrom<unknown>(
    now - 3600,
    now - 120,
    0,
    -1,
    "9999999999",
    null,
    [now + 600],
    { n: 1 },
    true,
  );
  const kidInjection = fc.constantFrom(
    "../../../../../../dev/null",
    "/dev/null",
    "' OR '1'='1",
    "'; DROP TABLE workspace_policy; --",
    "$(touch /tmp/pwned)",
    "\u0000",
    "x".repeat(4000),
    "http://127.0.0.1:1/key",
  );

  const arbitraries: fc.Arbitrary<HostileToken>[] = [
    fc.constantFrom<HostileToken>(
      { kind: "no header", authorization: undefined },
      { kind: "empty", authorization: "" },
      { kind: "bare Bearer", authorization: "Bearer" },
      { kind: "Bearer and space", authorization: "Bearer " },
      { kind: "Basic", authorization: "Basic Zm9vOmJhcg==" },
      { kind: "two tokens", authorization: "Bearer a.b.c d.e.f" },
      { kind: "Bearer twice", authorization: "Bearer Bearer a.b.c" },
      { kind: "only dots", authorization: "Bearer .." },
      { kind: "four parts", authorization: "Bearer a.b.c.d" },
      { kind: "JWE-like", authorization: "Bearer a.b.c.d.e" },
    ),
    // alg none and friends, with and without a trailing signature.
    fc
      .tuple(fc.constantFrom("none", "None", "NONE", "nOnE", "", null), fc.constantFrom("", "sig", "AAAA"))
      .map(([alg, sig]) =>
        bad(`alg ${JSON.stringify(alg)}`, `${b64({ alg, typ: "JWT" })}.${b64(good)}.${sig}`),
      ),
    // Algorithm confusion: the header names another algorithm, the bytes are an HS256 MAC.
    fc
      .constantFrom("RS256", "ES256", "PS256", "EdDSA", "HS384", "HS512", "hs256", "HS256 ", "HS2560")
      .map((alg) => bad(`alg ${alg}`, signedToken({ alg, typ: "JWT" }, good, secret))),
    // Wrong key.
    fc.constant(bad("wrong secret", signedToken(header, good, wrongSecret))),
    // Valid signature, claims wrong.
    badWorkspace.map((ws) =>
      bad(
        `workspace ${JSON.stringify(ws)?.slice(0, 20)}`,
        signedToken(header, { ...good, workspace_id: ws }, secret),
      ),
    ),
    badExp.map((exp) => bad(`exp ${JSON.stringify(exp)}`, signedToken(header, { ...good, exp }, secret))),
    fc.constant(bad("no exp", signedToken(header, { workspace_id: "fuzz-jwt", iat: now }, secret))),
    fc.constant(bad("no workspace", signedToken(header, { iat: now, exp: now + 600 }, secret))),
    fc.constant(bad("nbf in the future", signedToken(header, { ...good, nbf: now + 3600 }, secret))),
    fc.constant(bad("payload not an object", signedToken(header, [good], secret))),
    fc.constant(bad("payload a string", signedToken(header, "fuzz-jwt", secret))),
    fc.constant(bad("payload not JSON", signedToken(header, "{not json", secret))),
    fc.constant(bad("header not JSON", signedToken("{not json", good, secret))),
    fc.constant(bad("crit header", signedToken({ ...header, crit: ["exp"] }, good, secret))),
    fc.constant(bad("b64 false", signedToken({ ...header, b64: false, crit: ["b64"] }, good, secret))),
    // kid / jku / x5u injection, on a token signed with the wrong key.
    fc
      .tuple(kidInjection, fc.constantFrom("kid", "jku", "x5u", "jwk"))
      .map(([value, field]) =>
        bad(`${field} injection`, signedToken({ ...header, [field]: value }, good, wrongSecret)),
      ),
    // A correctly signed token with one character of its payload changed.
    fc.integer({ min: 0, max: 200 }).map((at) => {
      const [h, p, s] = signedToken(header, good, secret).split(".") as [string, string, string];
      const index = at % p.length;
      const flipped = p.slice(0, index) + (p[index] === "A" ? "B" : "A") + p.slice(index + 1);
      return bad("tampered payload", `${h}.${flipped}.${s}`);
    }),
    // Malformed base64url: padding, standard alphabet, whitespace, random bytes.
    fc
      .tuple(headerSafe(), headerSafe(), headerSafe())
      .map(([a, b, c]) => bad("random parts", `${a}.${b}.${c}`)),
    fc.constant(
      bad(
        "padded base64",
        `${Buffer.from(JSON.stringify(header)).toString("base64")}.${Buffer.from(JSON.stringify(good)).toString("base64")}.abc=`,
      ),
    ),
    fc.constant(
      bad(
        "plus and slash",
        signedToken(header, good, secret).replaceAll("-", "+").replaceAll("_", "/").concat("+/"),
      ),
    ),
    // Huge: just under and far over the gateway's 16 KiB bound, and past Node's header limit.
    fc
      .constantFrom(12_000, 17_000, 70_000)
      .map((size) =>
        bad(`huge ${size}`, signedToken(header, { ...good, pad: "p".repeat(size) }, wrongSecret)),
      ),
    // Bytes that are not UTF-8 (nor ASCII) in the header itself.
    fc.constantFrom("\xff\xfe", "\xc0\xae\xc0\xae", "\x80", "\xe9").map((bytes) => ({
      kind: "non-ASCII bytes",
      authorization: `Bearer ${bytes}${signedToken(header, good, secret)}`,
    })),
    // Scheme spellings around a wrongly signed token.
    fc
      .constantFrom(
        "bearer ",
        "BEARER ",
        "Bearer  ",
        "Bearer\t",
        " Bearer ",
        "Bearer\u00a0",
        "Token ",
        "JWT ",
      )
      .map((scheme) => ({
        kind: `scheme ${JSON.stringify(scheme)}`,
        authorization: `${scheme}${signedToken(header, good, wrongSecret)}`,
      })),
  ];
  return fc.oneof(...arbitraries);
}

/**
 * Correctly signed tokens for a real workspace whose admin claim is anything but the JSON
 * `true`: each must be refused by the admin API (403 auth.forbidden), never taken for an admin.
 */
export function notQuiteAdminToken(secret: string): fc.Arbitrary<{ claim: unknown; token: string }> {
  const now = Math.floor(Date.now() / 1000);
  const claim = fc.constantFrom<unknown>(
    "true",
    "True",
    1,
    [true],
    { value: true },
    "yes",
    null,
    false,
    0,
    "1",
  );
  return fc
    .tuple(
      claim,
      fc.constantFrom("sandpool_admin", "Sandpool_Admin", "sandpool_admin ", "admin", "sandpool.admin"),
    )
    .map(([value, name]) => ({
      claim: { [name]: value },
      token: signedToken(
        { alg: "HS256", typ: "JWT" },
        {
          workspace_id: "fuzz-not-admin",
          iat: now,
          exp: now + 600,
          [name]: name === "sandpool_admin" ? value : true,
        },
        secret,
      ),
    }));
}
