/**
 * `sandpool dev` needs bearer tokens without an identity provider: a random HS256 secret kept in
 * the data directory (so tokens printed yesterday still work today) and a minting helper.
 * Production deployments configure their issuer's keys instead and never use this file.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SignJWT } from "jose";

export const devKeyFileName = "dev-signing-key";

/** The `sub` of dev workspace tokens (the banner's and `sandpool token`'s): what audit names as who. */
export const DEV_USER_SUBJECT = "dev-user";

/** Reads `<dataDir>/dev-signing-key`, creating it (mode 0600) with a fresh 32-byte secret if absent. */
export async function loadOrCreateDevKey(dataDir: string): Promise<{ secret: string }> {
  const path = join(dataDir, devKeyFileName);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    // `wx` fails if the file exists, so two processes starting at once cannot overwrite each
    // other's key: the loser reads the winner's.
    await writeFile(path, `${randomBytes(32).toString("base64url")}\n`, { flag: "wx", mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    // Whoever can read the key can mint tokens for any workspace: keep an old file private too.
    await chmod(path, 0o600);
  }
  const secret = (await readFile(path, "utf8")).trim();
  if (Buffer.byteLength(secret, "utf8") < 32)
    throw new Error(`${path} holds a key shorter than 32 bytes; delete it to have a new one created`);
  return { secret };
}

export interface MintTokenOptions {
  secret: string;
  /** The workspace claim; optional for an admin token only. */
  workspace?: string;
  /** Mints an admin token (the admin claim set to `true`): it may use the admin API. */
  admin?: boolean;
  /** Name of the admin claim; `sandpool_admin` unless the deployment configures another. */
  adminClaim?: string;
  ttlSeconds?: number;
  subject?: string;
  issuer?: string;
  audience?: string;
  workspaceClaim?: string;
}

/**
 * An HS256 JWT with `iat`, `exp` and a random `jti`, accepted by a JwtAuthenticator keyed with `secret`;
 * with `admin`, an admin token (its workspace optional).
 */
export async function mintToken(options: MintTokenOptions): Promise<string> {
  const {
    secret,
    workspace,
    admin = false,
    ttlSeconds = 3600 * 24,
    workspaceClaim = "workspace_id",
    adminClaim = "sandpool_admin",
  } = options;
  if (workspace === undefined && !admin)
    throw new Error("a token needs a workspace unless it is an admin token");
  const claims: Record<string, unknown> = {};
  if (workspace !== undefined) claims[workspaceClaim] = workspace;
  if (admin) claims[adminClaim] = true;
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .setJti(randomUUID());
  if (options.subject !== undefined) jwt.setSubject(options.subject);
  if (options.issuer !== undefined) jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt.setAudience(options.audience);
  return jwt.sign(new TextEncoder().encode(secret));
}
