/**
 * The request a piece of code runs for, without passing it down every call: the pipeline
 * enters it once per request, and the logger stamps its id on every line written while
 * the request is being served, by any service.
 */
import { AsyncLocalStorage } from "node:async_hooks";

interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runInRequest<T>(requestId: string, work: () => T): T {
  return storage.run({ requestId }, work);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
