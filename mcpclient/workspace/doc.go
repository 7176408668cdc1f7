// Package workspace holds the stdio side of a thread's files: the
// directory tree each user+thread gets under workspace.root (Prepare, a
// bounded cache of prepared trees, file snapshots through inotify on
// Linux) and the translation of the paths a stdio server's results name
// to what the agent sees under VirtualRoot (Workspace.TranslateResult).
//
// It knows no session, server or runtime: mcpclient prepares the workspace
// of a stdio route and translates its results. It imports the root domain
// package and mcp-go's types only; it must not import config/ or any other
// package of mcpclient.
package workspace
