-- Migration 11: the delivery log of run webhooks (`submit --wait
-- --webhook URL`).
--
-- One row per try of a delivery: a delivery is one event POSTed to one
-- URL, tried until the receiver answers 2xx, a try may not be retried, or
-- --webhook-timeout passes. The URL is stored without credentials, query
-- or fragment (they may hold a token). Rows are only added.
CREATE TABLE webhook_deliveries (
    delivery_id text        NOT NULL,             -- X-Extractq-Delivery, the same on every try
    run         text        NOT NULL,
    event       text        NOT NULL,             -- X-Extractq-Event, e.g. done
    url         text        NOT NULL,
    attempt     integer     NOT NULL CHECK (attempt >= 1),
    status_code integer,                          -- NULL: no response (network error, timeout)
    error       text,                             -- NULL: delivered (2xx)
    duration_ms double precision NOT NULL CHECK (duration_ms >= 0),
    created_at  timestamptz NOT NULL DEFAULT now(), -- when the try was sent
    PRIMARY KEY (delivery_id, attempt)
);

CREATE INDEX webhook_deliveries_run_idx ON webhook_deliveries (run, created_at);
