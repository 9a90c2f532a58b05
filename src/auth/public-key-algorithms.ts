/**
 * Reads a configured verification key (PEM SPKI or a JWK as JSON) and says which JWS
 * algorithms it can verify. The answer comes from the key itself (type, curve, size), so a
 * configuration can neither pair a key with an algorithm it cannot serve nor, above all, with
 * an HMAC algorithm: that pairing is the HS/RS confusion attack, where the public key's bytes
 * become the "secret" anyone can sign with.
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from "node:crypto";

export const hmacAlgorithms: readonly string[] = ["HS256", "HS384", "HS512"];
const rsaAlgorithms: readonly string[] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"];
const ecAlgorithmByCurve: Readonly<Record<string, string>> = {
  prime256v1: "ES256",
  secp384r1: "ES384",
  secp521r1: "ES512",
};
// "EdDSA" is what issuers send today; "Ed25519" is its fully-specified successor (RFC 9864).
const ed25519Algorithms: readonly string[] = ["EdDSA", "Ed25519"];

/** Every asymmetric algorithm sandpool verifies; the default allow-list for a JWKS URL. */
export const asymmetricAlgorithms: readonly string[] = [
  ...rsaAlgorithms,
  ...Object.values(ecAlgorithmByCurve),
  ...ed25519Algorithms,
];

// jose refuses shorter RSA keys at verification time; refusing them here says so at start-up.
const minRsaModulusBits = 2048;

export type PublicKeySource = { format: "spki"; pem: string } | { format: "jwk"; jwk: JsonWebKey };

export interface ReadPublicKey {
  source: PublicKeySource;
  /** The algorithms this key can verify: the key's own `alg` if a JWK names one, else its family. */
  algorithms: readonly string[];
}

/** Throws an Error whose message is fit for a configuration error (it never echoes the key). */
export function readPublicKey(text: string): ReadPublicKey {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) return readJwk(trimmed);
  if (/PRIVATE KEY-----/.test(trimmed)) throw new Error("is a private key; configure the public key only");
  if (!/^-----BEGIN PUBLIC KEY-----[\s\S]+-----END PUBLIC KEY-----$/.test(trimmed))
    throw new Error("is neither a PEM SPKI public key (-----BEGIN PUBLIC KEY-----) nor a JWK JSON object");
  const key = tryCreate(() => createPublicKey(trimmed), "is not a valid PEM SPKI public key");
  return { source: { format: "spki", pem: trimmed }, algorithms: algorithmsForKey(key) };
}

function readJwk(text: string): ReadPublicKey {
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch {
    throw new Error("starts with '{' but is not valid JSON");
  }
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) throw new Error("is not a JWK object");
  const candidate = jwk as JsonWebKey;
  if (candidate.kty === "oct") throw new Error("is a symmetric (oct) JWK; use jwtSecret for shared secrets");
  if ("d" in candidate) throw new Error("is a private JWK; configure the public key only");
  if (candidate.use !== undefined && candidate.use !== "sig")
    throw new Error("is a JWK not meant for signatures");
  const key = tryCreate(
    () => createPublicKey({ key: candidate, format: "jwk" }),
    "is not a valid public JWK",
  );
  const family = algorithmsForKey(key);
  if (candidate.alg === undefined) return { source: { format: "jwk", jwk: candidate }, algorithms: family };
  if (typeof candidate.alg !== "string" || !family.includes(candidate.alg))
    throw new Error(`names alg '${String(candidate.alg)}', which its key type cannot verify`);
  return { source: { format: "jwk", jwk: candidate }, algorithms: [candidate.alg] };
}

function tryCreate(create: () => KeyObject, message: string): KeyObject {
  try {
    return create();
  } catch {
    throw new Error(message);
  }
}

function algorithmsForKey(key: KeyObject): readonly string[] {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case "rsa":
      if ((details.modulusLength ?? 0) < minRsaModulusBits)
        throw new Error(`is an RSA key shorter than ${minRsaModulusBits} bits`);
      return rsaAlgorithms;
    case "ec": {
      const alg = ecAlgorithmByCurve[details.namedCurve ?? ""];
      if (alg === undefined) throw new Error("is an EC key on a curve other than P-256, P-384 or P-521");
      return [alg];
    }
    case "ed25519":
      return ed25519Algorithms;
    default:
      throw new Error(`is a ${key.asymmetricKeyType ?? "unknown"} key; use an RSA, EC or Ed25519 key`);
  }
}
