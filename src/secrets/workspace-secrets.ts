/**
 * Workspace secrets: what the rest of the gateway knows of them. An operator stores a named
 * secret per workspace, bound to destinations and to the way it is presented; the egress
 * proxy adds it to a sandbox's requests to those destinations, so the sandbox's code never
 * holds the value (docs/secrets.md).
 *
 * The value exists in clear only here, on its way from the store (sealed at rest) to the
 * proxy's outgoing request: no API answer, log line or audit row carries it.
 */

/** Where a secret may be sent, and how. */
export interface SecretBinding {
  /** Host-name patterns it is sent to (exact or `*.suffix`, as in egressAllowHosts). */
  hosts: string[];
  /** When set, only to these destination ports. */
  ports?: number[];
  /** When set, only for request paths starting with one of these. */
  paths?: string[];
  /** When set, only for these request methods (upper case). */
  methods?: string[];
  /**
   * How it is presented: a header whose value is `template` with `{{secret}}` replaced by
   * the value (`Authorization`, `Bearer {{secret}}`), or HTTP basic auth with the value
   * as the password.
   */
  presentation: { header: string; template: string } | { basicAuth: { username: string } };
}

/** A secret's name and binding: everything an API may show. */
export interface SecretDescription {
  name: string;
  binding: SecretBinding;
  createdAt: string;
  updatedAt: string;
}

/** A secret with its value in clear, for the egress proxy only. */
export interface OpenedSecret {
  name: string;
  binding: SecretBinding;
  value: string;
}

/** What egress reads of a workspace's secrets (the store's reading side). */
export interface SecretsReader {
  /** Every secret of the workspace, opened. */
  openedSecretsOf(workspace: string): Promise<OpenedSecret[]>;
}

/**
 * Seals and opens small values at rest (AES-256-GCM with the deployment's key ring; the
 * newest key seals, every key opens). Used for secret values and the egress CA's key.
 */
/**
 * Seals and opens values at rest. `context` says what the value is (whose secret, which
 * name; the CA's key): it is authenticated with the value, so a sealed value copied into
 * another row, by someone who can write the database but holds no key, does not open there.
 */
export interface Sealer {
  seal(plain: Buffer, context: string): string;
  open(sealed: string, context: string): Buffer;
}

/** The context a workspace secret's value is sealed under. */
export function secretSealContext(workspace: string, name: string): string {
  return `workspace-secret\u0000${workspace}\u0000${name}`;
}

/**
 * Methods that never carry a secret, whatever a binding says: TRACE answers with the request
 * as the server received it, credential included, to the code that sent it.
 */
export const CREDENTIAL_FREE_METHODS: ReadonlySet<string> = new Set(["TRACE", "CONNECT"]);
