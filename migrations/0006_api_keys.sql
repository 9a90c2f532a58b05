-- Workspace API keys (`sp_<prefix>_<secret>`): key_id is the public prefix, hashed_secret the
-- hex SHA-256 of the secret (32 random bytes, so no slow hash is needed); the secret itself is
-- never stored. last_used_at is written in batches, not per call, so it lags by seconds.
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz NULL;
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz NULL;
ALTER TABLE api_keys ADD COLUMN created_by text NULL;

-- Every key created or revoked: who, when, which key (never its secret).
CREATE TABLE api_key_audit (
  id bigserial PRIMARY KEY,
  key_id text NOT NULL,
  workspace_id text NOT NULL,
  action text NOT NULL CHECK (action IN ('created', 'revoked')),
  actor text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_key_audit_workspace_at ON api_key_audit (workspace_id, at);
