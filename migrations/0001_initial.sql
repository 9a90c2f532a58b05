-- sandpool schema, version 1. Migrations are append-only: never edit a released file,
-- add the next number instead. Each file runs as one migration inside one transaction.

-- One row per workspace that narrows the deployment's policy. A null column means "no
-- narrowing: the deployment value applies"; no row at all means the deployment defaults.
create table workspace_policies (
  workspace_id text primary key check (workspace_id <> ''),
  enabled boolean not null default true,
  allowed_images text[] null,
  default_image text null,
  allowed_tools text[] null,
  exec_timeout_ceiling_s integer null check (exec_timeout_ceiling_s > 0),
  idle_timeout_ceiling_s integer null check (idle_timeout_ceiling_s > 0),
  max_lifetime_ceiling_s integer null check (max_lifetime_ceiling_s > 0),
  max_concurrent_sessions integer null check (max_concurrent_sessions > 0),
  sessions_per_minute integer null check (sessions_per_minute > 0),
  exec_seconds_per_day integer null check (exec_seconds_per_day > 0),
  max_file_bytes bigint null check (max_file_bytes > 0),
  resource_class text null,
  egress_allowed boolean null,
  version integer not null default 1 check (version > 0),
  updated_at timestamptz not null default now(),
  updated_by text not null
);

-- Every policy edit: who, when, and the row before and after (null for create / delete).
create table policy_audit (
  id bigserial primary key,
  workspace_id text not null,
  actor text not null,
  at timestamptz not null default now(),
  before jsonb null,
  after jsonb null
);
create index policy_audit_workspace_at on policy_audit (workspace_id, at);

-- Durable usage records. event_id is minted by the producer and is the idempotency key:
-- re-flushing a batch after a crash inserts nothing twice.
create table usage_events (
  event_id uuid primary key,
  workspace_id text not null,
  session_id text not null,
  kind text not null check (kind in ('session_created', 'session_ended', 'exec', 'file_in', 'file_out', 'denied')),
  tool text null,
  -- milliseconds for exec, bytes for file_in / file_out, 0 otherwise
  quantity bigint not null default 0 check (quantity >= 0),
  detail jsonb null,
  occurred_at timestamptz not null
);
create index usage_events_workspace_occurred on usage_events (workspace_id, occurred_at);

-- Workspace API keys; only a hash of the secret is kept.
create table api_keys (
  key_id text primary key,
  workspace_id text not null,
  hashed_secret text not null,
  label text null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz null
);
create index api_keys_workspace on api_keys (workspace_id);
