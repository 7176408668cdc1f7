package activities

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mcpflow/mcpflow"
)

// Webhook headers (DESIGN.md webhook contract).
const (
	HeaderIdempotencyKey  = "Idempotency-Key"
	HeaderDeliveryAttempt = "X-Mcpflow-Delivery-Attempt"
	HeaderSignature       = "X-Mcpflow-Signature"
)

// DefaultWebhookTimeout bounds one webhook POST; no answer within it is a
// counted failure.
const DefaultWebhookTimeout = 10 * time.Second

// Webhook is the integrator's endpoint for task events. Its URL and secret
// stay in the worker's configuration: they never enter workflow inputs,
// results or errors, so never Temporal history.
type Webhook struct {
	URL     string
	Secret  []byte
	Client  *http.Client  // nil: a client of its own
	Timeout time.Duration // per POST; 0: DefaultWebhookTimeout
}

// IdempotencyKey is the key of every POST of one event version.
func IdempotencyKey(taskID string, version int) string {
	return fmt.Sprintf("mcp-task:%s:%d", taskID, version)
}

// Sign returns the X-Mcpflow-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of the exact body bytes keyed with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

var defaultWebhookClient = &http.Client{
	// A redirect is answered like any other non-2xx status: the event is not
	// re-sent, with its signature, to wherever the redirect points.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Post sends one delivery attempt and classifies the answer: 2xx delivered,
// 409 busy, 404/410 gone, anything else (no answer included) failed. The
// returned text says what happened without the URL, headers or body.
func (w *Webhook) Post(ctx context.Context, body []byte, key string, attempt int) (mcpflow.DeliveryOutcome, string) {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return mcpflow.DeliveryFailed, "webhook request could not be built"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mcpflow-webhook")
	req.Header.Set(HeaderIdempotencyKey, key)
	req.Header.Set(HeaderDeliveryAttempt, strconv.Itoa(attempt))
	req.Header.Set(HeaderSignature, Sign(w.Secret, body))
	c := w.Client
	if c == nil {
		c = defaultWebhookClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return mcpflow.DeliveryFailed, webhookError(ctx, err, timeout)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	status := fmt.Sprintf("webhook answered HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return mcpflow.DeliveryDelivered, ""
	case resp.StatusCode == http.StatusConflict:
		return mcpflow.DeliveryBusy, status + " (busy; retried without counting)"
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return mcpflow.DeliveryGone, status
	default:
		return mcpflow.DeliveryFailed, status
	}
}

// webhookError describes a failed POST without its URL (which may carry a
// token): *url.Error is unwrapped to the network error inside.
func webhookError(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("webhook did not answer within %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err // drop the addresses too
	}
	return "webhook request failed: " + err.Error()
}

// DeliverInput is one delivery attempt of one event version.
type DeliverInput struct {
	TaskID   string `json:"task_id"`
	ThreadID string `json:"thread_id"`
	UserID   string `json:"user_id"`
	Version  int    `json:"version"`
	Attempt  int    `json:"attempt"` // 1, 2, 3, … for this version
}

// DeliverOutput is the attempt's outcome; Error says why it was not
// delivered.
type DeliverOutput struct {
	Outcome mcpflow.DeliveryOutcome `json:"outcome"`
	Error   string                  `json:"error,omitempty"`
}

// Deliver POSTs one version of a task's event, read back from the thread's
// inbox, to the webhook. A thread the task's user does not have (any more)
// gets nothing (gone: strict existing-thread admission). Errors of the
// activity itself (the database) are retried by the workflow like a failed
// POST.
func (a *Activities) Deliver(ctx context.Context, in DeliverInput) (*DeliverOutput, error) {
	if a.Webhook == nil || a.Webhook.URL == "" {
		return &DeliverOutput{Outcome: mcpflow.DeliveryFailed, Error: "no notifications.webhook_url is configured on the worker that ran this delivery"}, nil
	}
	th, err := a.Threads.GetThread(ctx, in.UserID, in.ThreadID)
	switch {
	case mcpflow.ErrorCode(err) == mcpflow.ENotFound:
		return &DeliverOutput{Outcome: mcpflow.DeliveryGone, Error: fmt.Sprintf("thread '%s' does not exist for this task's user", in.ThreadID)}, nil
	case err == nil && th.Deleted():
		return &DeliverOutput{Outcome: mcpflow.DeliveryGone, Error: fmt.Sprintf("thread '%s' was deleted", in.ThreadID)}, nil
	case err != nil:
		return nil, fmt.Errorf("read thread: %w", err)
	}
	ev, err := a.Events.GetEvent(ctx, in.TaskID, in.Version)
	if err != nil {
		return nil, fmt.Errorf("read event v%d from the inbox: %w", in.Version, err)
	}
	body, err := WebhookBody(ev, in.UserID)
	if err != nil {
		return nil, err
	}
	outcome, msg := a.Webhook.Post(ctx, body, IdempotencyKey(in.TaskID, in.Version), in.Attempt)
	a.countDelivery(ctx, string(outcome))
	return &DeliverOutput{Outcome: outcome, Error: boundText(msg)}, nil
}

// WebhookBody is the POSTed JSON: the event's fields plus thread_id,
// user_id and event_version, keys sorted.
func WebhookBody(ev *mcpflow.ThreadEvent, userID string) ([]byte, error) {
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(ev.Payload))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("decode event v%d: %w", ev.EventVersion, err)
	}
	if fields == nil {
		fields = map[string]any{}
	}
	fields["thread_id"] = ev.ThreadID
	fields["user_id"] = userID
	fields["event_version"] = ev.EventVersion
	return mcpflow.CanonicalJSON(fields)
}
