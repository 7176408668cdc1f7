package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpflow/mcpflow"
)

// TestToolCallMetrics pins the labels and counts of the tool-call metrics
// and that a call gets its span when tracing is on, none when it is off.
func TestToolCallMetrics(t *testing.T) {
	t.Parallel()
	r := NewRuntime(Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = r.Close() })
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	rm := newRuntimeMetrics(r, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"), tp.Tracer("test"))
	require.True(t, rm.tracing)

	ok := func(context.Context) (*mcpflow.ToolResult, error) { return &mcpflow.ToolResult{}, nil }
	toolErr := func(context.Context) (*mcpflow.ToolResult, error) { return &mcpflow.ToolResult{IsError: true}, nil }
	notFound := func(context.Context) (*mcpflow.ToolResult, error) {
		return nil, mcpflow.Errorf(mcpflow.ENotFound, "unknown tool")
	}
	cancelled := func(context.Context) (*mcpflow.ToolResult, error) {
		return nil, fmt.Errorf("call: %w", context.Canceled)
	}
	for range 3 {
		_, _ = rm.observe(context.Background(), "demo", "demo_echo", ok)
	}
	_, _ = rm.observe(context.Background(), "demo", "demo_fail", toolErr)
	_, _ = rm.observe(context.Background(), "other", "other_echo", ok)
	_, _ = rm.observe(context.Background(), "(unknown)", "nope", notFound)
	_, err := rm.observe(context.Background(), "demo", "demo_slow", cancelled)
	require.True(t, errors.Is(err, context.Canceled))

	var data metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &data))
	counts := map[string]int64{}
	durations := map[string]uint64{}
	for _, sm := range data.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.Equal(t, "mcpflow.tool.calls", m.Name)
				for _, p := range d.DataPoints {
					counts[p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
				}
			case metricdata.Histogram[float64]:
				require.Equal(t, "mcpflow.tool.call.duration", m.Name)
				for _, p := range d.DataPoints {
					durations[p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Count
				}
			}
		}
	}
	want := map[string]int64{
		"outcome=ok,server=demo":             3,
		"outcome=tool_error,server=demo":     1,
		"outcome=ok,server=other":            1,
		"outcome=not_found,server=(unknown)": 1,
		"outcome=cancelled,server=demo":      1,
	}
	require.Equal(t, want, counts)
	for k, n := range want {
		require.Equal(t, uint64(n), durations[k], k)
	}

	ended := spans.Ended()
	require.Len(t, ended, 7, "one span per call")
	last := ended[len(ended)-1]
	require.Equal(t, "mcp.tool_call", last.Name())
	require.Contains(t, last.Attributes(), attribute.String("mcp.outcome", "cancelled"))
	require.Contains(t, last.Attributes(), attribute.String("mcp.tool", "demo_slow"))

	off := newRuntimeMetrics(r, nil, nil)
	require.False(t, off.tracing, "no tracer: tracing is off")
	res, err := off.observe(context.Background(), "demo", "demo_echo", ok)
	require.NoError(t, err)
	require.NotNil(t, res)
}
