// Package session is one MCP client session to one upstream server and the
// pool of stdio sessions: Dial connects over stdio, SSE or streamable HTTP
// (streamhttp for streamable HTTP), negotiates the revision (server/discover, else
// 2025-11-25), and Session lists tools, calls them (relaying an ordinary
// call's questions, sampling, roots (forward_roots) and log messages to its
// caller, see WithRelay), reads prompts and resources, holds resource
// subscriptions and hears list changes (surface.go), and speaks MCP Tasks
// (session_task.go). Pool holds the persistent stdio sessions keyed by
// (server, user:thread), bounded, single-flight per key, with pins for
// running durable tasks.
//
// On 2026-07-28 a session's resource subscriptions and list changes travel
// on one subscriptions/listen stream, which a listener goroutine of the
// session replaces as they change and opens again when the server ends it;
// which URI a refused stream is refused for is asked of the server one URI
// at a time (refused).
// A stdio request whose caller stopped waiting is cancelled at the server
// with notifications/cancelled (over HTTP ending the request does it).
//
// A session knows one server's configuration and nothing of discovery,
// credentials or workspaces: its caller hands it the header function, the
// working directory and environment, and the question relay (DialOptions).
// It imports the root domain package, config/ and mcpclient's question,
// credential and streamhttp; it must not import mcpclient.
package session
