package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpflow/mcpflow/config"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Versioning puts the task queue's worker into a Temporal worker deployment
// (Worker Versioning). Task workflows are AutoUpgrade: a running task moves
// to the deployment's current version at its next workflow task, so a new
// build must replay every older build's histories (the recorded-history
// replay test guards that); new tasks start only on the current version.
type Versioning struct {
	DeploymentName string
	BuildID        string
	// Promote is temporal.promote: config.PromoteNewest (unless a version
	// of the deployment was created after this one, so a restarted older
	// build never takes back over), config.PromoteFirst (only when the
	// deployment has no current version) or config.PromoteNever.
	Promote string
}

func (v *Versioning) deploymentOptions() sdkworker.DeploymentOptions {
	if v == nil {
		return sdkworker.DeploymentOptions{}
	}
	return sdkworker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   sdkworker.WorkerDeploymentVersion{DeploymentName: v.DeploymentName, BuildID: v.BuildID},
		DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade,
	}
}

// SetCurrentCommand is the temporal CLI command that makes v current.
func (v Versioning) SetCurrentCommand() string {
	return fmt.Sprintf("temporal worker deployment set-current-version --deployment-name %s --build-id %s", v.DeploymentName, v.BuildID)
}

// PromoteResult says what Promote did.
type PromoteResult struct {
	Promoted bool   // this call made the version current
	Current  string // the current build id afterwards ("" when unversioned workers are current)
	Reason   string // why the version was not promoted, when it was not
}

// Promote applies v.Promote once the server knows this worker's version
// (the worker must be polling: a version exists after its first poll). It
// retries while the version is not yet registered and on conflicting
// concurrent changes, until ctx ends.
func Promote(ctx context.Context, c client.Client, v Versioning, log *slog.Logger) (PromoteResult, error) {
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	delay := 200 * time.Millisecond
	for {
		res, retry, err := promoteOnce(ctx, h, v)
		if !retry {
			return res, err
		}
		log.Debug("worker version not ready to promote; retrying", "deployment", v.DeploymentName, "build_id", v.BuildID, "error", err)
		select {
		case <-ctx.Done():
			return PromoteResult{}, fmt.Errorf("promote %s/%s: %w (last: %v)", v.DeploymentName, v.BuildID, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(delay*2, 3*time.Second)
	}
}

func promoteOnce(ctx context.Context, h client.WorkerDeploymentHandle, v Versioning) (res PromoteResult, retry bool, err error) {
	desc, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		var nf *serviceerror.NotFound
		return PromoteResult{}, errors.As(err, &nf), err
	}
	info := desc.Info
	var ours *client.WorkerDeploymentVersionSummary
	for i := range info.VersionSummaries {
		if info.VersionSummaries[i].Version.BuildID == v.BuildID {
			ours = &info.VersionSummaries[i]
		}
	}
	if ours == nil {
		return PromoteResult{}, true, errors.New("the version is not registered yet")
	}
	if cur := info.RoutingConfig.CurrentVersion; cur != nil {
		res.Current = cur.BuildID
		if cur.BuildID == v.BuildID {
			return res, false, nil
		}
	}
	switch v.Promote {
	case config.PromoteNever:
		res.Reason = "temporal.promote is never"
		return res, false, nil
	case config.PromoteFirst:
		if res.Current != "" {
			res.Reason = "temporal.promote is first and the deployment has a current version"
			return res, false, nil
		}
	case config.PromoteNewest:
		for _, s := range info.VersionSummaries {
			if s.Version.BuildID != v.BuildID && s.CreateTime.After(ours.CreateTime) {
				res.Reason = fmt.Sprintf("version %s was created after this one", s.Version.BuildID)
				return res, false, nil
			}
		}
	default:
		return res, false, fmt.Errorf("unknown promote policy %q", v.Promote)
	}
	_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID, ConflictToken: desc.ConflictToken})
	if err != nil {
		// A concurrent change (conflict token) or a version whose pollers the
		// server has not yet seen: look again.
		var fp *serviceerror.FailedPrecondition
		var nf *serviceerror.NotFound
		return res, errors.As(err, &fp) || errors.As(err, &nf), err
	}
	return PromoteResult{Promoted: true, Current: v.BuildID}, false, nil
}
