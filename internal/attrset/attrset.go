// Package attrset caches OpenTelemetry measurement options per label
// combination, for the HTTP metrics of api and the tool-call metrics of
// mcpclient: building an attribute set (copying, sorting and hashing its
// attributes) and the options' slices on every request cost about as much
// as recording the measurements, and the same few combinations repeat.
package attrset

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Max bounds a Cache. The labels it is keyed by are bounded already
// (route templates, methods, statuses; configured server names,
// outcomes); the bound keeps a surprise from growing it without end: past
// it, options are built per measurement again.
const Max = 1024

// Cache holds the options of each label combination K. The zero value is
// ready to use.
type Cache[K comparable] struct {
	m sync.Map // K → *Opts
	n atomic.Int64
}

// Opts are the options of one label combination, ready to pass to Add and
// Record as they are (opts...), which allocates nothing.
type Opts struct {
	Add    []metric.AddOption
	Record []metric.RecordOption
}

// Get returns the options of labels k, whose set build makes on first use.
func (c *Cache[K]) Get(k K, build func(K) attribute.Set) *Opts {
	if o, ok := c.m.Load(k); ok {
		return o.(*Opts)
	}
	opt := metric.WithAttributeSet(build(k))
	o := &Opts{Add: []metric.AddOption{opt}, Record: []metric.RecordOption{opt}}
	if c.n.Load() < Max {
		if v, loaded := c.m.LoadOrStore(k, o); loaded {
			return v.(*Opts)
		}
		c.n.Add(1)
	}
	return o
}
