/**
 * Headers between the gateway and its sandboxes (never from clients: the gateway sets
 * them, and sandboxes are reachable only by the gateway).
 */

/** A workspace's file-size cap for one PutFile; it can only lower the sandbox's own. */
export const MAX_FILE_BYTES_HEADER = "x-sandpool-max-file-bytes";
