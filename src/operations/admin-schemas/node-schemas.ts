/** The shapes of the node operations (`GET /nodes`, `POST /nodes/{id}/drain|undrain`). */
import { z } from "zod";
import { nodeViewSchema } from "../../roles/shared/node-view-schema.js";
import { pathParams } from "./admin-params.js";

export { nodeViewSchema };
export const nodesResultSchema = z.object({ items: z.array(nodeViewSchema) });
export const nodeParams = pathParams("id", "The node's id.");
