/** Types of scripts/admin-client-source.mjs, for the unit test that imports it. */
export declare const ADMIN_API_FILE: string;
export declare function adminClientSource(document: Record<string, unknown>): Promise<string>;
