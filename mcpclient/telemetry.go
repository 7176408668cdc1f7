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
	"github.com/mcpflow/mcpflow/internal/attrset"
)

// runtimeMetrics are the runtime's instruments: tool calls by server and
// outcome, their latency, and the stdio pool's size.
type runtimeMetrics struct {
	calls   metric.Int64Counter
	latency metric.Float64Histogram
	tracer  trace.Tracer
	// tracing is false for a no-op tracer (tracing off): then a call
	// starts no span, which would cost a context and its options for
	// nothing.
	tracing bool
	reg     metric.Registration
	attrs   attrset.Cache[callLabels]
}

// callLabels are the labels of one tool call's measurements.
type callLabels struct{ server, outcome string }

func newRuntimeMetrics(r *Runtime, m metric.Meter, t trace.Tracer) *runtimeMetrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	if t == nil {
		t = tracenoop.NewTracerProvider().Tracer("")
	}
	_, off := t.(tracenoop.Tracer)
	rm := &runtimeMetrics{tracer: t, tracing: !off}
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

// observe wraps one call of a tool on server: a span (when tracing is on),
// the outcome counter and the latency.
func (rm *runtimeMetrics) observe(ctx context.Context, server, tool string, call func(context.Context) (*mcpflow.ToolResult, error)) (*mcpflow.ToolResult, error) {
	var span trace.Span
	if rm.tracing {
		ctx, span = rm.tracer.Start(ctx, "mcp.tool_call", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("mcp.server", server), attribute.String("mcp.tool", tool)))
		defer span.End()
	}
	start := time.Now()
	res, err := call(ctx)
	outcome := "ok"
	switch {
	case err != nil:
		outcome = mcpflow.ErrorCode(err)
		if errors.Is(err, context.Canceled) {
			outcome = "cancelled"
		}
		if rm.tracing {
			span.SetStatus(codes.Error, outcome)
		}
	case res != nil && res.IsError:
		outcome = "tool_error"
	}
	if rm.tracing {
		span.SetAttributes(attribute.String("mcp.outcome", outcome))
	}
	attrs := rm.attrs.Get(callLabels{server: server, outcome: outcome}, func(l callLabels) attribute.Set {
		return attribute.NewSet(attribute.String("server", l.server), attribute.String("outcome", l.outcome))
	})
	rm.calls.Add(ctx, 1, attrs.Add...)
	rm.latency.Record(ctx, time.Since(start).Seconds(), attrs.Record...)
	return res, err
}
