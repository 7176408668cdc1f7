package worker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/mcpflow/mcpflow/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

// Options configure the worker.
type Options struct {
	TaskQueue string
	// MaxConcurrentActivities bounds concurrent activity executions
	// (config.yaml mcp_tasks.max_concurrent_polls maps here); 0 keeps the
	// SDK default.
	MaxConcurrentActivities int
	// StopTimeout is how long Stop waits for running activities.
	StopTimeout time.Duration
	// Register adds workflows and activities; nil registers nothing.
	Register func(sdkworker.Registry)
	// Versioning, when set, makes the worker a version of a worker
	// deployment; nil: an unversioned worker.
	Versioning *Versioning
}

// New builds (but does not start) a Temporal worker on the task queue.
func New(c client.Client, o Options) sdkworker.Worker {
	w := sdkworker.New(c, o.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.MaxConcurrentActivities,
		WorkerStopTimeout:                  o.StopTimeout,
		DeploymentOptions:                  o.Versioning.deploymentOptions(),
	})
	if o.Register != nil {
		o.Register(w)
	}
	return w
}

// WaitForTemporal blocks until the Temporal frontend answers a health check,
// retrying with capped backoff and logging while it waits, or until ctx
// ends.
func WaitForTemporal(ctx context.Context, c client.Client, log *slog.Logger) error {
	delay := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := c.CheckHealth(hctx, &client.CheckHealthRequest{})
		cancel()
		if err == nil {
			return nil
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("waiting for Temporal", "attempt", attempt, "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal not reachable: %w", err)
		case <-time.After(delay):
		}
		if delay < 3*time.Second {
			delay *= 2
		}
	}
}

// RegisterSearchAttributes is EnsureSearchAttributes that logs to log
// (nil: nothing) what it added, or that it could not.
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string, log *slog.Logger) {
	added, err := EnsureSearchAttributes(ctx, c, namespace)
	switch {
	case log == nil:
	case err != nil:
		log.Warn("could not check the custom search attributes; register them with `temporal operator search-attribute create`", "error", err)
	case len(added) > 0:
		log.Info("registered search attributes", "names", added)
	}
}

// EnsureSearchAttributes registers the custom search attributes of
// workflows.SearchAttributeNames that the namespace lacks, as Keyword, and
// returns the names it added. The dev server skips --search-attribute flags
// when its database file already exists; this closes that gap, and does the
// same on a self-hosted cluster where the caller may use the operator API.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes: %w", err)
	}
	have := resp.GetCustomAttributes()
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range workflows.SearchAttributeNames {
		t, ok := have[name]
		if ok && t != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			return nil, fmt.Errorf("search attribute %s exists with type %s, want Keyword", name, t)
		}
		if !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	added := slices.Sorted(maps.Keys(missing))
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	if err != nil {
		return nil, fmt.Errorf("add search attributes %v: %w", added, err)
	}
	return added, nil
}
