package attrset

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

type labels struct{ server, outcome string }

// The cache keeps one entry per label combination, each with its own
// labels, and past the bound still gives the right labels (built per call,
// not kept).
func TestCache(t *testing.T) {
	t.Parallel()
	var c Cache[labels]
	build := func(l labels) attribute.Set {
		return attribute.NewSet(attribute.String("server", l.server), attribute.String("outcome", l.outcome))
	}
	first := c.Get(labels{"a", "ok"}, build)
	require.Same(t, first, c.Get(labels{"a", "ok"}, build), "a combination is built once")
	other := c.Get(labels{"a", "tool_error"}, build)
	require.NotSame(t, first, other)
	require.Equal(t, "outcome=ok,server=a", labelsOf(t, first))
	require.Equal(t, "outcome=tool_error,server=a", labelsOf(t, other))

	for i := range Max + 10 {
		l := labels{fmt.Sprint("s", i), "ok"}
		require.Equal(t, "outcome=ok,server="+l.server, labelsOf(t, c.Get(l, build)))
	}
	require.Equal(t, int64(Max), c.n.Load(), "the cache stops at its bound")
	past := labels{"past-the-bound", "ok"}
	require.NotSame(t, c.Get(past, build), c.Get(past, build), "past the bound, options are built per call")
	require.Equal(t, "outcome=ok,server=past-the-bound", labelsOf(t, c.Get(past, build)))
}

// labelsOf are the labels options give a measurement, encoded.
func labelsOf(t *testing.T, o *Opts) string {
	t.Helper()
	add, rec := metric.NewAddConfig(o.Add).Attributes(), metric.NewRecordConfig(o.Record).Attributes()
	require.True(t, add.Equals(&rec), "Add and Record carry the same labels")
	return add.Encoded(attribute.DefaultEncoder())
}
