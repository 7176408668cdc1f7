package mcpflow

import "context"

// SubmitKeyMeta is the _meta key of a durable submit's idempotency key: the
// local task id, the same on every attempt. A task server that answers a
// repeated key with the task it already started (instead of a new one) can
// be listed in mcp_tasks.idempotent_submit_servers, and mcpflow then re-sends
// a submit whose worker died after sending it.
const SubmitKeyMeta = "io.mcpflow/idempotency-key"

type beforeSendKey struct{}

// WithBeforeSend returns a copy of ctx carrying fn. The MCP client calls fn
// once, right before it sends a tool call carrying this context to the
// remote server (after the session is up and credentials are resolved); if
// fn fails, the call is not sent and fn's error is returned. The durable
// submit uses it to record, durably, that the remote submit may have
// happened from this point on.
func WithBeforeSend(ctx context.Context, fn func(context.Context) error) context.Context {
	return context.WithValue(ctx, beforeSendKey{}, fn)
}

// BeforeSend runs the function WithBeforeSend put in ctx, if any.
func BeforeSend(ctx context.Context) error {
	if fn, ok := ctx.Value(beforeSendKey{}).(func(context.Context) error); ok && fn != nil {
		return fn(ctx)
	}
	return nil
}
