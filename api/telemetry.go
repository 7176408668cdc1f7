package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow/internal/attrset"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// httpMetrics counts requests and their latency by route template (never
// the raw path, which holds ids), method and status.
type httpMetrics struct {
	requests metric.Int64Counter
	latency  metric.Float64Histogram
	attrs    attrset.Cache[httpLabels]
}

// httpLabels are the labels of one request's measurements.
type httpLabels struct {
	route, method string
	status        int
}

func newHTTPMetrics(m metric.Meter) *httpMetrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	h := &httpMetrics{}
	h.requests, _ = m.Int64Counter("mcpflow.http.requests", metric.WithDescription("HTTP requests served, by route template, method and status"))
	h.latency, _ = m.Float64Histogram("mcpflow.http.request.duration", metric.WithUnit("s"),
		metric.WithDescription("HTTP request latency, by route template, method and status"),
		metric.WithExplicitBucketBoundaries(.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60))
	return h
}

func (s *Server) measure(c *gin.Context) {
	start := time.Now()
	c.Next()
	attrs := s.metrics.attrs.Get(httpLabels{route: routeOf(c), method: methodLabel(c.Request.Method), status: c.Writer.Status()},
		func(l httpLabels) attribute.Set {
			return attribute.NewSet(attribute.String("route", l.route), attribute.String("method", l.method),
				attribute.String("status", strconv.Itoa(l.status)))
		})
	s.metrics.requests.Add(c.Request.Context(), 1, attrs.Add...)
	s.metrics.latency.Record(c.Request.Context(), time.Since(start).Seconds(), attrs.Record...)
}

// methodLabel keeps the method label bounded: any method but the standard
// ones is "_OTHER" (a client must not mint series).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// untraced are the probe and scrape routes, which get no spans.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// tracing returns the span middleware: one server span per request named
// after the route template. Its own HTTP metrics are off: measure counts
// requests.
func (s *Server) tracing() gin.HandlerFunc {
	return otelgin.Middleware("mcpflow", otelgin.WithTracerProvider(s.opts.Tracer),
		otelgin.WithMeterProvider(noop.NewMeterProvider()),
		otelgin.WithGinFilter(func(c *gin.Context) bool { return !untraced[c.FullPath()] }))
}
