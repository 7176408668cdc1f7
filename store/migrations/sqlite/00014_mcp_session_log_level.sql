-- The level of log messages a 2025-11-25 MCP session asked for with
-- logging/setLevel ("" until it asks: no upstream log message is relayed).

-- +goose Up
ALTER TABLE mcp_sessions ADD COLUMN log_level VARCHAR(16) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE mcp_sessions DROP COLUMN log_level;
