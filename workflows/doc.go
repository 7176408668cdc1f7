// Package workflows holds mcpflow's Temporal workflow definitions and the
// names other packages use to talk to them: search-attribute keys, signal,
// update and query names.
//
// TaskWorkflow runs one durable MCP task in steps: it serves the submit
// update (awaitSubmit), polls the remote task until it ends or is
// cancelled (track), waits for its last event's delivery (drain) and, when
// its history has grown long, continues as new with its state
// (continueAsNew).
//
// A task's history shape (TaskConfig.Shape) is fixed when it starts and
// decides the commands its runs emit, so that every stored history
// replays (testdata/histories; testdata/histories/earlier, recorded by
// earlier builds). After the submit, track picks the shape's polling loop
// once; each loop holds only its shape's steps:
//   - trackClassic (Shape 0): a workflow timer waits for each poll, the
//     poll activity returns each change, the workflow writes the row and
//     upserts the status search attribute after every change;
//   - trackLean (ShapeLean, and ShapeReport or ShapeApproval with a
//     webhook): the poll
//     activity waits out the delay itself (no timer) and, without a
//     webhook, writes the change it finds to the row (no marker);
//   - trackReport (ShapeReport or ShapeApproval without a webhook; the
//     latter is ShapeReport under a number older workers refuse, for
//     calls waiting for approval): one poll activity runs
//     across changes, writes and signals each one (SignalReport) and polls
//     on, so a change costs a signal and a workflow task; the run closes
//     on the terminal report with the poll pending, and reads the row back
//     (adoptRow) whenever it stops the poll.
//
// The loops share the other steps: ahead (the end, a cancel, an answer,
// before each poll), poll and polled (one poll and its result), cancel,
// deliverAnswer, persist, upsertStatus (the lean and report shapes upsert
// only a changed status), and notify, the webhook deliveries, which run
// beside the loop. Before the loop the shapes differ in the submit wait
// only: the lean and report shapes yield once for the submit before its
// 5-minute timer, and the report shape ends that wait on a cancel (a
// Temporal cancellation then ends the run Canceled). A change to a loop's
// commands is versioned with workflow.GetVersion (versionSettleAnswer,
// versionKeepQuestionOnFailure) or becomes a new shape.
//
// Workflow code is deterministic: workflow.Now, timers, workflow.Go, no I/O,
// no map iteration without sorting. It imports the root domain package and
// the Temporal SDK only; never store/, api/, mcpclient/ or activities/
// (activities are called by name through a nil *Activities pointer type
// declared in activities/, which is a compile-time dependency only).
package workflows
