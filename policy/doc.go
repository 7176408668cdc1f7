// Package policy decides which caller may see and call which tool.
//
// The rules are written in extensions_config.json ("policies"): each allows
// or denies the calls of matching servers and tools (globs) whose condition
// holds. A condition is a CEL expression (github.com/google/cel-go, the
// language Envoy, agentgateway and Kubernetes write such rules in) over the
// caller (user), the tool, its server, the thread and the call's arguments
// (args); it is type-checked when the rules are written, so a policy that
// does not compile is refused with the position of the error.
//
// Rules combine deny over approve over allow: a call is refused when a
// matching deny rule holds, sent to approval (Decision.Approval: a durable
// task waits for one of the rule's approvers, mcpflow.Approvals) when a
// matching approve rule holds, allowed when a matching allow rule holds,
// and otherwise decided by the server's default or the global one. A condition that
// fails to evaluate (a missing claim, a wrong type, the cost limit) never
// allows: a deny or approve rule's refuses the call, an allow rule's does
// not allow it (write has(user.claims.groups) && ... to test for a claim first).
//
// A tool a caller may not call whatever its arguments is hidden: Guard
// leaves it out of every listing and answers a call of it as for a tool
// that does not exist. Whether a tool is visible is decided without the
// arguments, by CEL's partial evaluation: a condition that depends on
// them is unknown then, so a tool that some arguments would allow stays
// listed, and its calls are decided with their arguments. A decision
// without arguments is cached per caller and tool (Set.visible), with what
// the call's decision reuses: the rules that read the arguments joined in
// one program, and, when none reads them or they read them only as
// args.K, the decision with no arguments, which is then the decision of a
// call whose arguments have no such K, made without decoding them.
//
// What is ours here is only the decision (which rules match, how they
// combine, how a listing is filtered); the language, its type checker and
// evaluator are cel-go's.
package policy
