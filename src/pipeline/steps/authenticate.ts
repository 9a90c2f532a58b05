/**
 * Pipeline step "authenticate": the credential to the caller it speaks for, before any
 * 404 or 405 (over HTTP the contract's middleware runs this step ahead of the route lookup,
 * so an unknown route is authenticated too). An operation open to anyone needs none; a caller
 * already authenticated (by the transport, or given to an in-process call) is taken as it is.
 * Failed attempts are limited per credential and address (src/auth/verify-bearer.ts).
 */
import type { Caller } from "../../auth/principal.js";
import { type BearerCheck, verifyBearer } from "../../auth/verify-bearer.js";
import type { OperationSpec } from "../../operations/operation.js";

export interface Credential {
  /** A caller authenticated already. */
  caller?: Caller;
  /** The `Authorization` header to verify otherwise. */
  authorization?: string;
  /** The client's address, for the failed-attempt limits. */
  address?: string;
}

export async function authenticateCaller(
  check: BearerCheck,
  operation: OperationSpec,
  credential: Credential,
): Promise<Caller | undefined> {
  if (credential.caller !== undefined) return credential.caller;
  if (operation.mountedFor === "anyone" && !sentOptional(operation, credential)) return undefined;
  return verifyBearer(check, credential.authorization, credential.address);
}

/** A credential sent to an open operation that reads one (`credential: "optional"`). */
function sentOptional(operation: OperationSpec, credential: Credential): boolean {
  return operation.credential === "optional" && credential.authorization !== undefined;
}
