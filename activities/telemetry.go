package activities

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// taskMetrics are the activities' instruments: remote status polls by
// server and outcome, and webhook delivery attempts by outcome.
type taskMetrics struct {
	polls         metric.Int64Counter
	pollErrors    metric.Int64Counter
	notifications metric.Int64Counter
}

var metricsOnce sync.Map // *Activities → *taskMetrics

func (a *Activities) metrics() *taskMetrics {
	if m, ok := metricsOnce.Load(a); ok {
		return m.(*taskMetrics)
	}
	meter := a.Meter
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("")
	}
	m := &taskMetrics{}
	m.polls, _ = meter.Int64Counter("mcpflow.task.polls", metric.WithDescription("remote status polls of durable tasks, by server and outcome (changed, unchanged, error)"))
	m.pollErrors, _ = meter.Int64Counter("mcpflow.task.poll.errors", metric.WithDescription("failed remote status polls, by server"))
	m.notifications, _ = meter.Int64Counter("mcpflow.notifications", metric.WithDescription("webhook delivery attempts, by outcome (delivered, busy, gone, failed)"))
	actual, _ := metricsOnce.LoadOrStore(a, m)
	return actual.(*taskMetrics)
}

func (a *Activities) countPoll(ctx context.Context, server, outcome string) {
	m := a.metrics()
	m.polls.Add(ctx, 1, metric.WithAttributes(attribute.String("server", server), attribute.String("outcome", outcome)))
	if outcome == "error" {
		m.pollErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("server", server)))
	}
}

func (a *Activities) countDelivery(ctx context.Context, outcome string) {
	a.metrics().notifications.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}
