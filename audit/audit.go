// Package audit writes the audit log: one record per tool call and per
// decision, per task cancel and answer, per change of the servers or the
// policies (mcpflow.AuditRecord), stored in the database off the request
// path.
//
// Record never blocks a request: it appends the record to a bounded queue
// (a slice under a mutex, whose memory the flushes reuse: a channel of
// QueueSize records would hold megabytes the garbage collector scans, and
// every record would land on a cache line no recent one used), and one
// goroutine writes the queue every FlushEvery, in batches of BatchSize (it
// does not wake for each record). A full queue drops the record, counts it in
// mcpflow_audit_records_total{result="dropped"} and logs a warning (at most
// once per 10 seconds): never silently. A batch the database refuses is
// tried again with the next flush, and dropped (counted as "failed") after
// 5 tries. Close writes what is queued. What a kill -9 loses is bounded by
// what was queued and not yet written: at most the records of the last two
// flush intervals (plus the batch being retried while the database is
// down).
//
// Retention: at start and every SweepEvery (an hour) records older than
// Retention are deleted.
package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpflow/mcpflow"
)

// Options configure a Log.
type Options struct {
	Store      mcpflow.AuditStore
	QueueSize  int           // default 10,000
	BatchSize  int           // default 500
	FlushEvery time.Duration // default 200 ms
	Retention  time.Duration // 0: keep every record
	SweepEvery time.Duration // how often Retention is applied; default 1 h
	Logger     *slog.Logger
	Meter      metric.Meter
	// Export, when set, also receives every record written, as an
	// OpenTelemetry log record (to a collector).
	Export otellog.Logger
}

// Log is the audit log's writer.
type Log struct {
	o       Options
	done    chan struct{}
	closing chan struct{}
	once    sync.Once

	records                  metric.Int64Counter
	written, dropped, failed metric.MeasurementOption

	mu         sync.Mutex
	queue      []mcpflow.AuditRecord // at most o.QueueSize
	lastWarned time.Time
}

const maxTries = 5

// New starts a Log; Close stops it.
func New(o Options) *Log {
	if o.QueueSize <= 0 {
		o.QueueSize = 10_000
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = time.Hour
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Meter == nil {
		o.Meter = noop.NewMeterProvider().Meter("")
	}
	l := &Log{o: o, done: make(chan struct{}), closing: make(chan struct{})}
	l.records, _ = o.Meter.Int64Counter("mcpflow_audit_records_total",
		metric.WithDescription("Audit records by result: written, dropped (the queue was full), failed (the database refused them 5 times)"))
	l.written = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "written")))
	l.dropped = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "dropped")))
	l.failed = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "failed")))
	_, _ = o.Meter.Int64ObservableGauge("mcpflow_audit_queue_length",
		metric.WithDescription("Audit records waiting to be written"),
		metric.WithInt64Callback(func(_ context.Context, obs metric.Int64Observer) error {
			obs.Observe(int64(l.queued()))
			return nil
		}))
	go l.run()
	return l
}

// Record queues r; it never blocks.
func (l *Log) Record(r mcpflow.AuditRecord) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	l.mu.Lock()
	if len(l.queue) < l.o.QueueSize {
		l.queue = append(l.queue, r)
		l.mu.Unlock()
		return
	}
	warn := time.Since(l.lastWarned) >= 10*time.Second
	if warn {
		l.lastWarned = time.Now()
	}
	l.mu.Unlock()
	l.records.Add(context.Background(), 1, l.dropped)
	if warn {
		l.o.Logger.Warn("audit queue full: records are being dropped (see mcpflow_audit_records_total{result=\"dropped\"})",
			"queue_size", l.o.QueueSize)
	}
}

func (l *Log) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// take moves up to n queued records, oldest first, to the end of batch.
func (l *Log) take(batch []mcpflow.AuditRecord, n int) []mcpflow.AuditRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, len(l.queue))
	batch = append(batch, l.queue[:n]...)
	rest := copy(l.queue, l.queue[n:])
	clear(l.queue[rest:])
	l.queue = l.queue[:rest]
	if rest == 0 && cap(l.queue) > 4*l.o.BatchSize {
		l.queue = nil // a burst's memory, not kept
	}
	return batch
}

// Close writes the queued records and stops; ctx bounds the wait.
func (l *Log) Close(ctx context.Context) error {
	l.once.Do(func() { close(l.closing) })
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Log) run() {
	defer close(l.done)
	tick := time.NewTicker(l.o.FlushEvery)
	defer tick.Stop()
	sweep := time.NewTicker(l.o.SweepEvery)
	defer sweep.Stop()
	l.sweep()
	var batch []mcpflow.AuditRecord
	tries := 0
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := l.o.Store.InsertAudit(ctx, batch)
		cancel()
		switch {
		case err == nil:
			l.records.Add(context.Background(), int64(len(batch)), l.written)
			l.export(batch)
		case tries+1 < maxTries:
			tries++
			l.o.Logger.Warn("audit records not written; trying again", "records", len(batch), "error", err)
			return
		default:
			l.records.Add(context.Background(), int64(len(batch)), l.failed)
			l.o.Logger.Error("audit records lost: the database refused them", "records", len(batch), "tries", maxTries, "error", err)
		}
		batch, tries = batch[:0], 0
	}
	// The queue is read on the tick only, not as records come: a record
	// wakes no goroutine on the request path.
	drain := func() {
		for {
			batch = l.take(batch, l.o.BatchSize-len(batch))
			if flush(); len(batch) > 0 || l.queued() == 0 {
				return // written, or the database refuses: try again at the next tick
			}
		}
	}
	for {
		select {
		case <-tick.C:
			drain()
		case <-sweep.C:
			l.sweep()
		case <-l.closing:
			for range maxTries {
				if drain(); len(batch) == 0 && l.queued() == 0 {
					return
				}
			}
			return
		}
	}
}

// export emits records as OpenTelemetry log records: the body names the
// kind, the attributes are the record's fields (mcpflow.audit.*).
func (l *Log) export(records []mcpflow.AuditRecord) {
	if l.o.Export == nil {
		return
	}
	for _, r := range records {
		var lr otellog.Record
		lr.SetTimestamp(r.Time)
		lr.SetSeverity(otellog.SeverityInfo)
		lr.SetEventName("mcpflow.audit." + r.Kind)
		lr.SetBody(attribute.StringValue("mcpflow audit: " + r.Kind))
		lr.AddAttributes(
			attribute.Int64("mcpflow.audit.id", r.ID),
			attribute.String("mcpflow.audit.kind", r.Kind),
			attribute.String("enduser.id", r.UserID),
			attribute.Bool("mcpflow.audit.admin", r.Admin),
			attribute.String("mcpflow.audit.provider", r.Provider),
			attribute.String("mcpflow.audit.client", r.Client),
			attribute.String("mcpflow.audit.surface", r.Surface),
			attribute.String("mcpflow.audit.thread_id", r.ThreadID),
			attribute.String("mcpflow.audit.server", r.Server),
			attribute.String("mcpflow.audit.tool", r.Tool),
			attribute.String("mcpflow.audit.decision", r.Decision),
			attribute.String("mcpflow.audit.rule", r.Rule),
			attribute.String("mcpflow.audit.outcome", r.Outcome),
			attribute.Float64("mcpflow.audit.latency_ms", r.LatencyMS),
			attribute.String("mcpflow.audit.task_id", r.TaskID),
			attribute.String("mcpflow.audit.request_id", r.RequestID),
			attribute.String("trace_id", r.TraceID),
			attribute.String("mcpflow.audit.detail", r.Detail),
			attribute.String("mcpflow.audit.arguments", r.Arguments))
		l.o.Export.Emit(context.Background(), lr)
	}
}

func (l *Log) sweep() {
	if l.o.Retention <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := l.o.Store.DeleteAuditBefore(ctx, time.Now().Add(-l.o.Retention))
	if err != nil {
		l.o.Logger.Warn("old audit records not deleted", "error", err)
		return
	}
	if n > 0 {
		l.o.Logger.Info("old audit records deleted", "records", n, "retention", l.o.Retention.String())
	}
}

// Add records r completed with what ctx says of the request: the caller
// (admin, identity provider; the user id when r has none), where it came
// from (surface, MCP client, request id) and its trace id.
func (l *Log) Add(ctx context.Context, r mcpflow.AuditRecord) {
	if c := mcpflow.CallerFrom(ctx); c != nil {
		r.Admin, r.Provider = c.Admin, c.Provider
		if r.UserID == "" {
			r.UserID = c.UserID
		}
	}
	o := mcpflow.CallOriginFrom(ctx)
	r.Surface, r.Client, r.RequestID = o.Surface, ClientName(o.ClientInfo), o.RequestID
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		r.TraceID = sc.TraceID().String()
	}
	l.Record(r)
}

// clientNames caches ClientName's answers: a process sees few distinct
// clientInfo values, and each call of a session carries the same one.
var clientNames struct {
	sync.Mutex
	m map[string]string
}

// ClientName renders an MCP clientInfo as "name/version" ("" for none).
func ClientName(info json.RawMessage) string {
	if len(info) == 0 {
		return ""
	}
	clientNames.Lock()
	name, ok := clientNames.m[string(info)]
	clientNames.Unlock()
	if ok {
		return name
	}
	name = clientName(info)
	if len(info) > 512 {
		return name // a clientInfo this large is nobody's: not kept
	}
	clientNames.Lock()
	if clientNames.m == nil || len(clientNames.m) >= 1024 {
		clientNames.m = map[string]string{} // bounded: start over
	}
	clientNames.m[string(info)] = name
	clientNames.Unlock()
	return name
}

func clientName(info json.RawMessage) string {
	var ci struct{ Name, Version string }
	if json.Unmarshal(info, &ci) != nil || ci.Name == "" {
		return ""
	}
	if ci.Version == "" {
		return ci.Name
	}
	return ci.Name + "/" + ci.Version
}
