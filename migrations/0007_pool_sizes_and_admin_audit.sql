-- Pool sizes changed at run time (`PATCH /admin/v1/pools/{name}`): a null column means "as
-- configured". Rows of pools the configuration no longer has are ignored, never an error.
CREATE TABLE pool_sizes (
  pool text PRIMARY KEY CHECK (pool <> ''),
  min_idle integer NULL CHECK (min_idle >= 0),
  max_total integer NULL CHECK (max_total >= 1),
  updated_at timestamptz NOT NULL DEFAULT now(),
  updated_by text NOT NULL
);

-- Operators' actions outside workspace policy (a session ended, a pool resized): who, when,
-- what, on which workspace when there is one, and the details before and after.
CREATE TABLE admin_audit (
  id bigserial PRIMARY KEY,
  actor text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  action text NOT NULL,
  target text NOT NULL,
  workspace_id text NULL,
  detail jsonb NULL
);
CREATE INDEX admin_audit_at ON admin_audit (at);
CREATE INDEX admin_audit_workspace_at ON admin_audit (workspace_id, at);
