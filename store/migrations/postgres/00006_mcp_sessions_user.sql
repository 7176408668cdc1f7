-- A user's MCP sessions in order of last use: initialize counts them and
-- removes the least recently used beyond server.max_mcp_sessions_per_user.

-- +goose Up
CREATE INDEX ix_mcp_sessions_user_last_used ON mcp_sessions (user_id, last_used_at);

-- +goose Down
DROP INDEX ix_mcp_sessions_user_last_used;
