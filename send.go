package mcpflow

import "context"

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
