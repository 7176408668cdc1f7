-- mcpflow schema, SQLite flavour. Keep the version numbers and the tables in
-- step with migrations/postgres.
--
-- Temporal owns scheduling: one workflow per task is the single owner, and
-- activity timeouts, heartbeats and retries replace SQL leases. The lease and
-- dispatch columns of the reference schema (lease_owner, lease_expires_at,
-- lease_token, notification_lease_owner, notification_lease_expires_at,
-- notification_lease_token, next_notification_at, next_cancel_at,
-- dispatch_version, dispatch_attempt, dispatch_event, notification_run_id)
-- and the due-work indexes built on them are therefore deliberately absent.
-- JSON is stored as TEXT; timestamps are UTC DATETIME values.

-- +goose Up
CREATE TABLE threads (
    id         VARCHAR(64) NOT NULL PRIMARY KEY,
    user_id    VARCHAR(64) NOT NULL,
    created_at DATETIME    NOT NULL,
    deleted_at DATETIME    NULL
);
CREATE INDEX ix_threads_user_id ON threads (user_id);

CREATE TABLE mcp_tasks (
    id                           VARCHAR(64)  NOT NULL PRIMARY KEY,
    workflow_id                  VARCHAR(255) NOT NULL,
    user_id                      VARCHAR(64)  NOT NULL,
    thread_id                    VARCHAR(64)  NOT NULL REFERENCES threads (id),
    run_id                       VARCHAR(64)  NULL,
    tool_call_id                 VARCHAR(128) NULL,
    server_name                  VARCHAR(128) NOT NULL,
    driver_name                  VARCHAR(64)  NOT NULL,
    remote_task_id               VARCHAR(255) NOT NULL,
    task_name                    VARCHAR(255) NOT NULL,
    status                       VARCHAR(32)  NOT NULL
        CHECK (status IN ('submitted', 'working', 'input_required', 'completed', 'failed', 'cancelled')),
    result                       TEXT         NULL,
    result_preview               TEXT         NULL,
    result_truncated             BOOLEAN      NOT NULL DEFAULT 0,
    result_artifact              TEXT         NULL,
    error                        TEXT         NULL,
    input_required               TEXT         NULL,
    driver_data                  TEXT         NOT NULL DEFAULT '{}',
    notification_status          VARCHAR(16)  NOT NULL DEFAULT 'none',
    notification_error           TEXT         NULL,
    notification_attempt_count   INTEGER      NOT NULL DEFAULT 0,
    event_fingerprint            VARCHAR(64)  NULL,
    event_version                INTEGER      NOT NULL DEFAULT 0,
    notified_version             INTEGER      NOT NULL DEFAULT 0,
    last_polled_at               DATETIME     NULL,
    last_poll_error              TEXT         NULL,
    poll_attempt_count           INTEGER      NOT NULL DEFAULT 0,
    consecutive_poll_error_count INTEGER      NOT NULL DEFAULT 0,
    next_poll_at                 DATETIME     NULL,
    cancel_requested_at          DATETIME     NULL,
    cancel_attempt_count         INTEGER      NOT NULL DEFAULT 0,
    last_cancel_error            TEXT         NULL,
    completed_at                 DATETIME     NULL,
    created_at                   DATETIME     NOT NULL,
    updated_at                   DATETIME     NOT NULL,
    CONSTRAINT uq_mcp_tasks_user_server_remote UNIQUE (user_id, server_name, remote_task_id)
);
CREATE INDEX ix_mcp_tasks_user_id ON mcp_tasks (user_id);
CREATE INDEX ix_mcp_tasks_thread_id ON mcp_tasks (thread_id);
CREATE INDEX ix_mcp_tasks_status ON mcp_tasks (status);
CREATE INDEX ix_mcp_tasks_notification_status ON mcp_tasks (notification_status);
CREATE INDEX ix_mcp_tasks_thread_created ON mcp_tasks (thread_id, created_at);

-- The thread event inbox: every version of every task event, in order.
CREATE TABLE thread_events (
    seq           INTEGER     NOT NULL PRIMARY KEY AUTOINCREMENT,
    thread_id     VARCHAR(64) NOT NULL REFERENCES threads (id),
    task_id       VARCHAR(64) NOT NULL,
    event_version INTEGER     NOT NULL,
    status        VARCHAR(32) NOT NULL,
    payload       TEXT        NOT NULL,
    created_at    DATETIME    NOT NULL,
    CONSTRAINT uq_thread_events_task_version UNIQUE (task_id, event_version)
);
CREATE INDEX ix_thread_events_thread_seq ON thread_events (thread_id, seq);

-- +goose Down
DROP TABLE thread_events;
DROP TABLE mcp_tasks;
DROP TABLE threads;
