package mcpclient

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// maxAttrSets bounds an attrSets cache. The labels it is keyed by are
// bounded already (configured server names, outcomes); the bound
// keeps a surprise from growing it without end: past it, options are built
// per measurement again.
const maxAttrSets = 1024

// attrSets caches, per label combination, the measurement options that
// carry its attribute set. Building the set (copying, sorting and hashing
// its attributes) and the options' slices on every call cost about as
// much as recording the measurements, and the same few combinations
// repeat. (api has the same type for its HTTP metrics.)
type attrSets[K comparable] struct {
	m sync.Map // K → *attrOpts
	n atomic.Int64
}

// attrOpts are the options of one label combination, ready to pass to
// Add and Record as they are (opts...), which allocates nothing.
type attrOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// get returns the options of labels k, whose set build makes on first use.
func (a *attrSets[K]) get(k K, build func(K) attribute.Set) *attrOpts {
	if o, ok := a.m.Load(k); ok {
		return o.(*attrOpts)
	}
	opt := metric.WithAttributeSet(build(k))
	o := &attrOpts{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	if a.n.Load() < maxAttrSets {
		if v, loaded := a.m.LoadOrStore(k, o); loaded {
			return v.(*attrOpts)
		}
		a.n.Add(1)
	}
	return o
}
