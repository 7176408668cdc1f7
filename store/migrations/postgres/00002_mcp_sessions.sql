-- Sessions of MCP clients with the MCP endpoint (/mcp): created by initialize,
-- bound to one user and thread, kept here so that any replica serves them and
-- restarts keep them. A terminated session is deleted (unknown ids answer 404).

-- +goose Up
CREATE TABLE mcp_sessions (
    id                  VARCHAR(64) NOT NULL PRIMARY KEY,
    user_id             VARCHAR(64) NOT NULL,
    thread_id           VARCHAR(64) NOT NULL REFERENCES threads (id),
    protocol_version    VARCHAR(32) NOT NULL,
    client_info         JSONB       NOT NULL DEFAULT '{}',
    client_capabilities JSONB       NOT NULL DEFAULT '{}',
    created_at          TIMESTAMPTZ NOT NULL,
    last_used_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX ix_mcp_sessions_last_used_at ON mcp_sessions (last_used_at);
-- Task listings page newest first by (created_at, id) within a user's thread.
CREATE INDEX ix_mcp_tasks_user_thread_created ON mcp_tasks (user_id, thread_id, created_at, id);

-- +goose Down
DROP INDEX ix_mcp_tasks_user_thread_created;
DROP TABLE mcp_sessions;
