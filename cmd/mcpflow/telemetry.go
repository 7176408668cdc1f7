package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// EnvOTLPEndpoint or EnvOTLPTracesEndpoint turns tracing on: spans are
// exported over OTLP/HTTP, to the traces endpoint when it is set (a full
// URL), else to /v1/traces under the base endpoint (e.g.
// http://collector:4318), as OpenTelemetry's exporter rules say. Unset,
// tracing is off. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read
// for the resource.
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	// EnvOTLPLogsEndpoint (or EnvOTLPEndpoint's /v1/logs) receives the
	// audit records as OpenTelemetry log records, when the audit log is on.
	EnvOTLPLogsEndpoint = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
)

// telemetry is the process's metrics and tracing: OpenTelemetry providers
// whose metrics are exposed in Prometheus text on /metrics (mcpflow's own
// instruments, the Temporal SDK's, Go runtime and process metrics), and
// whose spans go over OTLP when EnvOTLPEndpoint is set.
type telemetry struct {
	registry *prometheus.Registry
	meters   *sdkmetric.MeterProvider
	tracer   trace.TracerProvider
	spans    *sdktrace.TracerProvider // nil when tracing is off
	temporal interceptor.Interceptor  // Temporal's tracing interceptor, nil when off
	logs     *sdklog.LoggerProvider   // the audit records' exporter; nil without an OTLP endpoint
}

func newTelemetry(env func(string) (string, bool), mode string) (*telemetry, error) {
	t := &telemetry{registry: prometheus.NewRegistry()}
	t.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	// Defaults first: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	res, err := resource.New(context.Background(),
		resource.WithAttributes(semconv.ServiceName("mcpflow"), semconv.ServiceVersion(version()), attrMode(mode)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	t.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))

	t.tracer = noop.NewTracerProvider()
	if endpoint, name, ok := tracesEndpoint(env); ok {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%s: must be a URL such as http://collector:4318", name)
		}
		spans, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(u.String()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t.spans = sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		t.tracer = t.spans
		ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: t.spans.Tracer("temporal-sdk-go")})
		if err != nil {
			return nil, fmt.Errorf("temporal tracing: %w", err)
		}
		t.temporal = ti
	}
	if endpoint, name, ok := otlpEndpoint(env, EnvOTLPLogsEndpoint, "/v1/logs"); ok {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%s: must be a URL such as http://collector:4318", name)
		}
		exp, err := otlploghttp.New(context.Background(), otlploghttp.WithEndpointURL(u.String()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t.logs = sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)), sdklog.WithResource(res))
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return t, nil
}

// otlpEndpoint is a signal's OTLP/HTTP URL from the environment (its own
// variable, else the base endpoint and path) and the variable it came from.
func otlpEndpoint(env func(string) (string, bool), own, path string) (endpoint, name string, ok bool) {
	if v, _ := env(own); v != "" {
		return v, own, true
	}
	if v, _ := env(EnvOTLPEndpoint); v != "" {
		return strings.TrimSuffix(v, "/") + path, EnvOTLPEndpoint, true
	}
	return "", "", false
}

// auditLogger is the OpenTelemetry logger of the audit records (nil
// without an OTLP endpoint).
func (t *telemetry) auditLogger() otellog.Logger {
	if t == nil || t.logs == nil {
		return nil
	}
	return t.logs.Logger("github.com/mcpflow/mcpflow/audit")
}

// tracesEndpoint is the OTLP/HTTP traces URL from the environment and the
// variable it came from.
func tracesEndpoint(env func(string) (string, bool)) (endpoint, name string, ok bool) {
	return otlpEndpoint(env, EnvOTLPTracesEndpoint, "/v1/traces")
}

// temporalMetrics is the Temporal SDK's metrics handler on the same
// provider (worker and client metrics under temporal_*).
func (t *telemetry) temporalMetrics() temporalotel.MetricsHandler {
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                t.meters.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              func(error) {},
	})
}

// interceptors are the Temporal client's interceptors; the SDK applies
// them to the workers built on the client too (setting them on a worker as
// well would double every span).
func (t *telemetry) interceptors() []interceptor.ClientInterceptor {
	if t.temporal == nil {
		return nil
	}
	return []interceptor.ClientInterceptor{t.temporal}
}

// handler serves /metrics.
func (t *telemetry) handler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// meter is for mcpflow's own process-level instruments.
func (t *telemetry) meter() metric.Meter { return t.meters.Meter("github.com/mcpflow/mcpflow") }

// close flushes spans and stops the providers.
func (t *telemetry) close(ctx context.Context) error {
	var errs []error
	if t.spans != nil {
		errs = append(errs, t.spans.Shutdown(ctx))
	}
	if t.logs != nil {
		errs = append(errs, t.logs.Shutdown(ctx))
	}
	errs = append(errs, t.meters.Shutdown(ctx))
	return errors.Join(errs...)
}

func attrMode(mode string) attribute.KeyValue { return attribute.String("mcpflow.mode", mode) }

// buildVersion is stamped by make build and the Dockerfile
// (-ldflags "-X main.buildVersion=..."; git describe --always --dirty).
var buildVersion string

// version is the binary's version: the stamp, else the module version or
// VCS revision go build recorded, else "dev".
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev != "" {
		return rev + dirty
	}
	return "dev"
}
