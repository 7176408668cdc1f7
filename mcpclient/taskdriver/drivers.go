package taskdriver

import (
	"context"

	"github.com/mcpflow/mcpflow"
)

// Drivers is the mcpflow.Driver of the task activities: it hands each
// task to its driver by the task's driver data, which the workflow passes
// to every call. A task whose driver data names a native tool
// (mcpflow.DriverDataNativeTool) goes to Native, one that waits for
// approval (mcpflow.DriverDataApprovalTool) to Approval, every other one to
// Ordinary, so workflows and activities stay driver-agnostic.
type Drivers struct {
	// Ordinary drives task toolsets (Ordinary).
	Ordinary mcpflow.Driver
	// Native drives native MCP tasks (Native).
	Native mcpflow.Driver
	// Approval drives calls waiting for approval (Approval).
	Approval mcpflow.Driver
}

var (
	_ mcpflow.Driver      = (*Drivers)(nil)
	_ mcpflow.InputDriver = (*Drivers)(nil)
	_ mcpflow.Driver      = (*Ordinary)(nil)
	_ mcpflow.InputDriver = (*Ordinary)(nil)
	_ mcpflow.Driver      = (*Native)(nil)
	_ mcpflow.InputDriver = (*Native)(nil)
)

// Submit implements mcpflow.Driver.
func (d *Drivers) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	drv, err := d.pick(req.DriverData)
	if err != nil {
		return mcpflow.Submission{}, err
	}
	return drv.Submit(ctx, req)
}

// Status implements mcpflow.Driver.
func (d *Drivers) Status(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	drv, err := d.pick(ref.DriverData)
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	return drv.Status(ctx, ref)
}

// Cancel implements mcpflow.Driver.
func (d *Drivers) Cancel(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	drv, err := d.pick(ref.DriverData)
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	return drv.Cancel(ctx, ref)
}

// Answer implements mcpflow.InputDriver: the task's driver delivers the
// answer; a driver that cannot is mcpflow.ErrInputGone.
func (d *Drivers) Answer(ctx context.Context, ref mcpflow.TaskReference, answer mcpflow.InputAnswer) error {
	drv, err := d.pick(ref.DriverData)
	if err != nil {
		return err
	}
	in, ok := drv.(mcpflow.InputDriver)
	if !ok {
		return mcpflow.ErrInputGone
	}
	return in.Answer(ctx, ref, answer)
}

// HoldsQuestion implements mcpflow.InputDriver.
func (d *Drivers) HoldsQuestion(ref mcpflow.TaskReference) bool {
	drv, err := d.pick(ref.DriverData)
	if err != nil {
		return false
	}
	in, ok := drv.(mcpflow.InputDriver)
	return ok && in.HoldsQuestion(ref)
}

// pick returns the driver of a task's driver data; a missing driver is a
// protocol error (the task fails).
func (d *Drivers) pick(data map[string]string) (mcpflow.Driver, error) {
	if _, approval := data[mcpflow.DriverDataApprovalTool]; approval {
		if d.Approval == nil {
			return nil, mcpflow.NewProtocolError("this mcpflow worker has no approval driver")
		}
		return d.Approval, nil
	}
	if _, native := data[mcpflow.DriverDataNativeTool]; native {
		if d.Native == nil {
			return nil, mcpflow.NewProtocolError("this mcpflow worker has no native MCP task driver")
		}
		return d.Native, nil
	}
	if d.Ordinary == nil {
		return nil, mcpflow.NewProtocolError("this mcpflow worker has no ordinary MCP task driver")
	}
	return d.Ordinary, nil
}
