-- 0017: dashboard sessions the server can end (docs/read-api.md, "Signing in"). The read cookie no
-- longer holds the read key, and the admin cookie no longer stands on its own: each holds a signed,
-- expiring session id whose row is here. Sign-out deletes the row; revoking a read key ends its
-- sessions (the check joins api_keys, and the revocation deletes them); an admin can delete every
-- admin row without rotating ADMIN_TOKEN. Only the SHA-256 of a session id is stored, so these rows
-- cannot be turned back into cookies. Cookies made before this migration are not sessions: their
-- browsers are asked to sign in again.
CREATE TABLE dashboard_sessions (
  session_sha256 TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('read', 'admin')),
  -- A read session's project and the key it signed in with; NULL for an admin session.
  project_id TEXT,
  key_id TEXT,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  CHECK ((kind = 'read') = (key_id IS NOT NULL AND project_id IS NOT NULL))
) WITHOUT ROWID;

-- Revoking a key ends its sessions; sign-in sweeps the expired ones.
CREATE INDEX dashboard_sessions_by_key ON dashboard_sessions (key_id) WHERE key_id IS NOT NULL;
CREATE INDEX dashboard_sessions_by_expiry ON dashboard_sessions (expires_at_ms);
