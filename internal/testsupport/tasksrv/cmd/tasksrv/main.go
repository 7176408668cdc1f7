// Command tasksrv serves the test task server (internal/testsupport/tasksrv) over
// stdio, with its write tool: tests run it as a stdio MCP server in a
// thread's workspace. Only tests build it.
package main

import (
	"fmt"
	"os"

	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
)

func main() {
	s := tasksrv.New()
	s.AddWriteTool()
	if err := s.ServeStdio(); err != nil {
		fmt.Fprintln(os.Stderr, "tasksrv:", err)
		os.Exit(1)
	}
}
