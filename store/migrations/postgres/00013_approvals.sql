-- Calls a policy rule sent for approval (effect "approve"): who called
-- what with which arguments, whose members may decide and until when, the
-- state (pending, approved, denied, expired, cancelled, calling, done), who
-- decided and the outcome of the call once it ran. One row per approval
-- task (its task id).

-- +goose Up
CREATE TABLE mcp_approvals (
    task_id    VARCHAR(64)  NOT NULL PRIMARY KEY,
    user_id    VARCHAR(255) NOT NULL,
    thread_id  VARCHAR(255) NOT NULL,
    server     VARCHAR(255) NOT NULL,
    tool       VARCHAR(255) NOT NULL,
    rule       VARCHAR(255) NOT NULL,
    approvers  TEXT         NOT NULL,
    state      VARCHAR(16)  NOT NULL,
    deadline   TIMESTAMPTZ NOT NULL,
    arguments  TEXT         NOT NULL,
    approver   VARCHAR(255) NOT NULL DEFAULT '',
    reason     TEXT         NOT NULL DEFAULT '',
    decided_at TIMESTAMPTZ NULL,
    outcome    TEXT         NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX ix_mcp_approvals_state ON mcp_approvals (state, created_at);

-- +goose Down
DROP TABLE mcp_approvals;
