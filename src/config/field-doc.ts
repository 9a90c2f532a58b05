/** The comment and placeholder of one setting in the example configuration (config-example.ts). */
export interface FieldDoc {
  comment: string;
  /** Shown for a setting without a default (and used for a required one). */
  example?: unknown;
  /** Active in the example although optional (the one auth key source, so the file loads). */
  active?: boolean;
}

/** Keyed by config path; `[]` stands for every item of a list. */
export type FieldDocs = Readonly<Record<string, FieldDoc>>;
