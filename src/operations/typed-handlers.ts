/**
 * Handlers declared with their operation's spec: the types a handler reads its arguments in
 * come from the spec's schemas (what the pipeline's args step admitted them with), and its
 * answer's from the spec's result schema, so a shape is written once, as a schema. Path
 * parameters without a schema (the contract's `{id}`) are typed from the path template.
 */
import type { $ZodType, input, output } from "zod/v4/core";
import type { CallArgs, CallContext, OperationHandler, OperationHandlers, Outcome } from "./handler.js";
import type { OperationSpec } from "./operation.js";

/** `/sessions/{id}/files` -> `"id"`. */
type PathParamNames<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParamNames<Rest>
  : never;

/** The path parameters a spec admits: its schema's output, else one string per `{name}`. */
export type ParamsOf<S> = S extends { params: infer P extends $ZodType }
  ? output<P>
  : S extends { path: infer Path extends string }
    ? { readonly [Name in PathParamNames<Path>]: string }
    : Readonly<Record<string, never>>;

/** The query a spec admits: its schema's output, else none read (the binder passes none). */
export type QueryOf<S> = S extends { query: infer Q extends $ZodType }
  ? output<Q>
  : Readonly<Record<string, never>>;

/** The body a spec admits: what its own check returns, else its schema's output, else none. */
export type BodyOf<S> = S extends { parseBody: (body: unknown) => infer Parsed }
  ? Parsed
  : S extends { body: infer B extends $ZodType }
    ? output<B>
    : undefined;

/**
 * The JSON answer a spec declares, as a handler may hand it over: what its result schema
 * accepts once rendered with JSON.stringify, which writes a Date as its ISO string.
 */
export type ResultOf<S> = S extends { result: infer R extends $ZodType } ? Rendered<input<R>> : unknown;

type Rendered<T> = T extends string
  ? T | Date
  : T extends readonly unknown[]
    ? { [I in keyof T]: Rendered<T[I]> }
    : T extends object
      ? { [K in keyof T]: Rendered<T[K]> }
      : T;

/** An upload's byte stream: present for an operation that takes one (the args step refuses a call without). */
type StreamOf<S> = S extends { input: "stream" }
  ? { stream: NonNullable<CallArgs["stream"]> }
  : { stream?: undefined };

/** A call's arguments as its spec admits them. */
export type TypedArgs<S> = {
  params: ParamsOf<S>;
  query: QueryOf<S>;
  body: BodyOf<S>;
  answer?: CallArgs["answer"];
} & StreamOf<S>;

export type TypedCall<S> = CallContext & { args: TypedArgs<S> };

/** An outcome whose JSON body is the spec's declared answer. */
export type TypedOutcome<S> =
  | Exclude<Outcome, { kind: "json" }>
  | (Extract<Outcome, { kind: "json" }> & { body: ResultOf<S> });

export type TypedHandler<S> = (call: TypedCall<S>) => Promise<TypedOutcome<S>>;

/** The spec of `Id` among `Specs`, with its types. */
export type SpecOf<Specs extends readonly OperationSpec[], Id extends Specs[number]["id"]> = Extract<
  Specs[number],
  { id: Id }
>;

/** The handlers of a list of specs, each typed by the spec of its id. */
export type HandlersOf<Specs extends readonly OperationSpec[]> = {
  readonly [Id in Specs[number]["id"]]: TypedHandler<SpecOf<Specs, Id>>;
};

/**
 * Handlers for some of `specs`, keyed by operation id, each checked against its own spec's
 * types; the map the route table and the in-process call take. The one place the typed
 * handlers are widened: the pipeline hands a handler only a call of its own operation, whose
 * arguments its args step admitted with this same spec's schemas.
 */
export function handlersFor<const Specs extends readonly OperationSpec[]>(
  _specs: Specs,
  handlers: Partial<HandlersOf<Specs>>,
): OperationHandlers {
  return handlers as unknown as Readonly<Record<string, OperationHandler>>;
}
