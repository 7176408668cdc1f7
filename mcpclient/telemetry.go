package mcpclient

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpflow/mcpflow"
)

// runtimeMetrics are the runtime's instruments: tool calls by server and
// outcome, their latency, and the stdio pool's size.
type runtimeMetrics struct {
	calls   metric.Int64Counter
	latency metric.Float64Histogram
	tracer  trace.Tracer
	reg     metric.Registration
}

func newRuntimeMetrics(r *Runtime, m metric.Meter, t trace.Tracer) *runtimeMetrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	if t == nil {
		t = tracenoop.NewTracerProvider().Tracer("")
	}
	rm := &runtimeMetrics{tracer: t}
	rm.calls, _ = m.Int64Counter("mcpflow.tool.calls", metric.WithDescription("MCP tool calls, by server and outcome (ok, tool_error, or an error code)"))
	rm.latency, _ = m.Float64Histogram("mcpflow.tool.call.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP tool call latency, by server and outcome"),
		metric.WithExplicitBucketBoundaries(.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300))
	sessions, _ := m.Int64ObservableGauge("mcpflow.stdio.sessions", metric.WithDescription("pooled stdio sessions (server processes) of this process"))
	rm.reg, _ = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(sessions, int64(r.Pool().Len()))
		return nil
	}, sessions)
	return rm
}

// observe wraps one call of a tool on server: a span, the outcome counter
// and the latency.
func (rm *runtimeMetrics) observe(ctx context.Context, server, tool string, call func(context.Context) (*mcpflow.ToolResult, error)) (*mcpflow.ToolResult, error) {
	ctx, span := rm.tracer.Start(ctx, "mcp.tool_call", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcp.server", server), attribute.String("mcp.tool", tool)))
	defer span.End()
	start := time.Now()
	res, err := call(ctx)
	outcome := "ok"
	switch {
	case err != nil:
		outcome = mcpflow.ErrorCode(err)
		if errors.Is(err, context.Canceled) {
			outcome = "cancelled"
		}
		span.SetStatus(codes.Error, outcome)
	case res != nil && res.IsError:
		outcome = "tool_error"
	}
	span.SetAttributes(attribute.String("mcp.outcome", outcome))
	attrs := metric.WithAttributes(attribute.String("server", server), attribute.String("outcome", outcome))
	rm.calls.Add(ctx, 1, attrs)
	rm.latency.Record(ctx, time.Since(start).Seconds(), attrs)
	return res, err
}
