-- The audit log: one row per tool call (allowed, refused or failed), task
-- cancellation or answer by its owner, and change of the MCP servers or the
-- tool policies through the admin API. Who, through which surface, what was
-- decided and how it ended; never argument values or secrets. Listed newest
-- first by id (optionally for one user or one tool); retention deletes by at.

-- +goose Up
CREATE TABLE audit_records (
    id         INTEGER      PRIMARY KEY AUTOINCREMENT,
    at         DATETIME     NOT NULL,
    kind       VARCHAR(32)  NOT NULL DEFAULT '',
    user_id    VARCHAR(255) NOT NULL DEFAULT '',
    admin      BOOLEAN      NOT NULL DEFAULT 0,
    provider   VARCHAR(255) NOT NULL DEFAULT '',
    client     VARCHAR(255) NOT NULL DEFAULT '',
    surface    VARCHAR(32)  NOT NULL DEFAULT '',
    thread_id  VARCHAR(255) NOT NULL DEFAULT '',
    server     VARCHAR(255) NOT NULL DEFAULT '',
    tool       VARCHAR(255) NOT NULL DEFAULT '',
    decision   VARCHAR(16)  NOT NULL DEFAULT '',
    rule       VARCHAR(255) NOT NULL DEFAULT '',
    outcome    VARCHAR(32)  NOT NULL DEFAULT '',
    latency_ms REAL         NOT NULL DEFAULT 0,
    task_id    VARCHAR(64)  NOT NULL DEFAULT '',
    request_id VARCHAR(64)  NOT NULL DEFAULT '',
    trace_id   VARCHAR(32)  NOT NULL DEFAULT '',
    detail     TEXT         NOT NULL DEFAULT '',
    arguments  TEXT         NOT NULL DEFAULT ''
);
CREATE INDEX ix_audit_records_at ON audit_records (at);
CREATE INDEX ix_audit_records_user_id ON audit_records (user_id, id);
CREATE INDEX ix_audit_records_tool_id ON audit_records (tool, id);

-- +goose Down
DROP TABLE audit_records;
