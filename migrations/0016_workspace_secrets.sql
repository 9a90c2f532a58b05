-- Workspace secrets (issue 42): a named credential per workspace, bound to the destinations it
-- is sent to and the way it is presented (binding, JSON: hosts, ports, paths, methods, header
-- and template or basic auth). The value is kept sealed (AES-256-GCM under the deployment's key
-- ring, `v1:<keyId>:<nonce>:<ciphertext>`), never in clear; it leaves the gateway only on the
-- egress proxy's outgoing requests. Sets and removals are audited in admin_audit, without it.
CREATE TABLE workspace_secrets (
  workspace_id text NOT NULL,
  name text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  binding jsonb NOT NULL,
  sealed_value text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, name)
);
