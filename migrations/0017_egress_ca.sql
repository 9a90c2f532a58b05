-- The deployment's egress CA (issue 42): the certificate every egress sandbox trusts and
-- the key the egress proxy signs leaf certificates with, for hosts a credential is bound to.
-- Made by the first replica that needs it when no CA is configured from files; one row per
-- database (the id is always 1), so every replica finds the same one. The key is sealed
-- with the deployment's key ring, never stored in clear.
CREATE TABLE egress_ca (
  id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  cert_pem text NOT NULL,
  sealed_key text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
