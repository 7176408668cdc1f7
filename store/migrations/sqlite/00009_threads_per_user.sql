-- Thread ids are per user: a thread is (user_id, id), so one user's thread
-- id never collides with, nor reveals, another user's. The threads table's
-- key becomes (user_id, id); the tables that name a thread (mcp_tasks,
-- thread_events, mcp_sessions) reference it by (user_id, thread_id), and
-- thread_events gets the user_id it lacked, taken from its thread (ids were
-- unique across users until now, so every row finds exactly one).
--
-- SQLite cannot change a key or a foreign key in place: each table is built
-- anew under a new name, filled, the old one dropped and the new one renamed
-- (which also renames the references to it). Foreign keys are checked at
-- commit (defer_foreign_keys), when every table is in its final shape.

-- +goose Up
PRAGMA defer_foreign_keys = ON;

CREATE TABLE threads_v9 (
    id         VARCHAR(64) NOT NULL,
    user_id    VARCHAR(64) NOT NULL,
    created_at DATETIME    NOT NULL,
    deleted_at DATETIME    NULL,
    PRIMARY KEY (user_id, id)
);
INSERT INTO threads_v9 (id, user_id, created_at, deleted_at)
    SELECT id, user_id, created_at, deleted_at FROM threads;

CREATE TABLE mcp_tasks_v9 (
    id                           VARCHAR(64)  NOT NULL PRIMARY KEY,
    workflow_id                  VARCHAR(255) NOT NULL,
    user_id                      VARCHAR(64)  NOT NULL,
    thread_id                    VARCHAR(64)  NOT NULL,
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
    input_answerable             BOOLEAN      NOT NULL DEFAULT 0,
    status_message               TEXT,
    question_seq                 INTEGER      NOT NULL DEFAULT 0,
    row_version                  INTEGER      NOT NULL DEFAULT 1,
    content                      TEXT,
    result_structured            BOOLEAN      NOT NULL DEFAULT 0,
    CONSTRAINT uq_mcp_tasks_user_server_remote UNIQUE (user_id, server_name, remote_task_id),
    FOREIGN KEY (user_id, thread_id) REFERENCES threads_v9 (user_id, id)
);
INSERT INTO mcp_tasks_v9 (id, workflow_id, user_id, thread_id, run_id, tool_call_id, server_name, driver_name,
        remote_task_id, task_name, status, result, result_preview, result_truncated, result_artifact, error,
        input_required, driver_data, notification_status, notification_error, notification_attempt_count,
        event_fingerprint, event_version, notified_version, last_polled_at, last_poll_error, poll_attempt_count,
        consecutive_poll_error_count, next_poll_at, cancel_requested_at, cancel_attempt_count, last_cancel_error,
        completed_at, created_at, updated_at, input_answerable, status_message, question_seq, row_version,
        content, result_structured)
    SELECT id, workflow_id, user_id, thread_id, run_id, tool_call_id, server_name, driver_name,
        remote_task_id, task_name, status, result, result_preview, result_truncated, result_artifact, error,
        input_required, driver_data, notification_status, notification_error, notification_attempt_count,
        event_fingerprint, event_version, notified_version, last_polled_at, last_poll_error, poll_attempt_count,
        consecutive_poll_error_count, next_poll_at, cancel_requested_at, cancel_attempt_count, last_cancel_error,
        completed_at, created_at, updated_at, input_answerable, status_message, question_seq, row_version,
        content, result_structured
    FROM mcp_tasks;

CREATE TABLE thread_events_v9 (
    seq           INTEGER     NOT NULL PRIMARY KEY AUTOINCREMENT,
    user_id       VARCHAR(64) NOT NULL,
    thread_id     VARCHAR(64) NOT NULL,
    task_id       VARCHAR(64) NOT NULL,
    event_version INTEGER     NOT NULL,
    status        VARCHAR(32) NOT NULL,
    payload       TEXT        NOT NULL,
    created_at    DATETIME    NOT NULL,
    CONSTRAINT uq_thread_events_task_version UNIQUE (task_id, event_version),
    FOREIGN KEY (user_id, thread_id) REFERENCES threads_v9 (user_id, id)
);
INSERT INTO thread_events_v9 (seq, user_id, thread_id, task_id, event_version, status, payload, created_at)
    SELECT e.seq, t.user_id, e.thread_id, e.task_id, e.event_version, e.status, e.payload, e.created_at
    FROM thread_events e JOIN threads t ON t.id = e.thread_id;

CREATE TABLE mcp_sessions_v9 (
    id                  VARCHAR(64) NOT NULL PRIMARY KEY,
    user_id             VARCHAR(64) NOT NULL,
    thread_id           VARCHAR(64) NOT NULL,
    protocol_version    VARCHAR(32) NOT NULL,
    client_info         TEXT        NOT NULL DEFAULT '{}',
    client_capabilities TEXT        NOT NULL DEFAULT '{}',
    created_at          DATETIME    NOT NULL,
    last_used_at        DATETIME    NOT NULL,
    FOREIGN KEY (user_id, thread_id) REFERENCES threads_v9 (user_id, id)
);
INSERT INTO mcp_sessions_v9 (id, user_id, thread_id, protocol_version, client_info, client_capabilities, created_at, last_used_at)
    SELECT id, user_id, thread_id, protocol_version, client_info, client_capabilities, created_at, last_used_at
    FROM mcp_sessions;

DROP TABLE mcp_sessions;
DROP TABLE thread_events;
DROP TABLE mcp_tasks;
DROP TABLE threads;
ALTER TABLE threads_v9 RENAME TO threads;
ALTER TABLE mcp_tasks_v9 RENAME TO mcp_tasks;
ALTER TABLE thread_events_v9 RENAME TO thread_events;
ALTER TABLE mcp_sessions_v9 RENAME TO mcp_sessions;

CREATE INDEX ix_threads_user_id ON threads (user_id);
CREATE INDEX ix_mcp_tasks_user_id ON mcp_tasks (user_id);
CREATE INDEX ix_mcp_tasks_thread_id ON mcp_tasks (thread_id);
CREATE INDEX ix_mcp_tasks_status ON mcp_tasks (status);
CREATE INDEX ix_mcp_tasks_notification_status ON mcp_tasks (notification_status);
CREATE INDEX ix_mcp_tasks_thread_created ON mcp_tasks (thread_id, created_at);
CREATE INDEX ix_mcp_tasks_user_thread_created ON mcp_tasks (user_id, thread_id, created_at, id);
CREATE INDEX ix_thread_events_thread_seq ON thread_events (user_id, thread_id, seq);
CREATE INDEX ix_mcp_sessions_last_used_at ON mcp_sessions (last_used_at);
CREATE INDEX ix_mcp_sessions_user_last_used ON mcp_sessions (user_id, last_used_at);

-- +goose Down
-- Only while no thread id is used by two users.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE threads_v7 (
    id         VARCHAR(64) NOT NULL PRIMARY KEY,
    user_id    VARCHAR(64) NOT NULL,
    created_at DATETIME    NOT NULL,
    deleted_at DATETIME    NULL
);
INSERT INTO threads_v7 (id, user_id, created_at, deleted_at)
    SELECT id, user_id, created_at, deleted_at FROM threads;

CREATE TABLE mcp_tasks_v7 (
    id                           VARCHAR(64)  NOT NULL PRIMARY KEY,
    workflow_id                  VARCHAR(255) NOT NULL,
    user_id                      VARCHAR(64)  NOT NULL,
    thread_id                    VARCHAR(64)  NOT NULL REFERENCES threads_v7 (id),
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
    input_answerable             BOOLEAN      NOT NULL DEFAULT 0,
    status_message               TEXT,
    question_seq                 INTEGER      NOT NULL DEFAULT 0,
    row_version                  INTEGER      NOT NULL DEFAULT 1,
    content                      TEXT,
    result_structured            BOOLEAN      NOT NULL DEFAULT 0,
    CONSTRAINT uq_mcp_tasks_user_server_remote UNIQUE (user_id, server_name, remote_task_id)
);
INSERT INTO mcp_tasks_v7 SELECT * FROM mcp_tasks;

CREATE TABLE thread_events_v7 (
    seq           INTEGER     NOT NULL PRIMARY KEY AUTOINCREMENT,
    thread_id     VARCHAR(64) NOT NULL REFERENCES threads_v7 (id),
    task_id       VARCHAR(64) NOT NULL,
    event_version INTEGER     NOT NULL,
    status        VARCHAR(32) NOT NULL,
    payload       TEXT        NOT NULL,
    created_at    DATETIME    NOT NULL,
    CONSTRAINT uq_thread_events_task_version UNIQUE (task_id, event_version)
);
INSERT INTO thread_events_v7 (seq, thread_id, task_id, event_version, status, payload, created_at)
    SELECT seq, thread_id, task_id, event_version, status, payload, created_at FROM thread_events;

CREATE TABLE mcp_sessions_v7 (
    id                  VARCHAR(64) NOT NULL PRIMARY KEY,
    user_id             VARCHAR(64) NOT NULL,
    thread_id           VARCHAR(64) NOT NULL REFERENCES threads_v7 (id),
    protocol_version    VARCHAR(32) NOT NULL,
    client_info         TEXT        NOT NULL DEFAULT '{}',
    client_capabilities TEXT        NOT NULL DEFAULT '{}',
    created_at          DATETIME    NOT NULL,
    last_used_at        DATETIME    NOT NULL
);
INSERT INTO mcp_sessions_v7 SELECT * FROM mcp_sessions;

DROP TABLE mcp_sessions;
DROP TABLE thread_events;
DROP TABLE mcp_tasks;
DROP TABLE threads;
ALTER TABLE threads_v7 RENAME TO threads;
ALTER TABLE mcp_tasks_v7 RENAME TO mcp_tasks;
ALTER TABLE thread_events_v7 RENAME TO thread_events;
ALTER TABLE mcp_sessions_v7 RENAME TO mcp_sessions;

CREATE INDEX ix_threads_user_id ON threads (user_id);
CREATE INDEX ix_mcp_tasks_user_id ON mcp_tasks (user_id);
CREATE INDEX ix_mcp_tasks_thread_id ON mcp_tasks (thread_id);
CREATE INDEX ix_mcp_tasks_status ON mcp_tasks (status);
CREATE INDEX ix_mcp_tasks_notification_status ON mcp_tasks (notification_status);
CREATE INDEX ix_mcp_tasks_thread_created ON mcp_tasks (thread_id, created_at);
CREATE INDEX ix_mcp_tasks_user_thread_created ON mcp_tasks (user_id, thread_id, created_at, id);
CREATE INDEX ix_thread_events_thread_seq ON thread_events (thread_id, seq);
CREATE INDEX ix_mcp_sessions_last_used_at ON mcp_sessions (last_used_at);
CREATE INDEX ix_mcp_sessions_user_last_used ON mcp_sessions (user_id, last_used_at);
