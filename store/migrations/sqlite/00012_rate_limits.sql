-- Rate limits shared by the API replicas: a token bucket per limit key
-- (tokens left as of updated_at, refilled at the limit's rate when taken
-- from), and the uses of a daily quota per key and UTC day. Replicas take
-- tokens and uses in chunks and spend them locally.

-- +goose Up
CREATE TABLE rate_buckets (
    bucket_key VARCHAR(512)     NOT NULL PRIMARY KEY,
    tokens     REAL NOT NULL,
    updated_at DATETIME      NOT NULL
);
CREATE TABLE rate_quotas (
    quota_key VARCHAR(512) NOT NULL,
    day  VARCHAR(10)  NOT NULL,
    used BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (quota_key, day)
);

-- +goose Down
DROP TABLE rate_quotas;
DROP TABLE rate_buckets;
