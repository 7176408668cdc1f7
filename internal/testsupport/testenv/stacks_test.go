package testenv

import "testing"

func TestWithoutStacks(t *testing.T) {
	out := "time=1 level=ERROR msg=\"Failed to start gRPC listener\" error=\"listen tcp 127.0.0.1:1: bind: address already in use\"\n" +
		"goroutine 1 [running]:\n" +
		"go.uber.org/dig.defaultInvoker({0x1})\n" +
		"\t/root/go/pkg/mod/go.uber.org/dig@v1.18.1/container.go:257 +0x25\n" +
		"main.main()\n" +
		"\t/root/go/pkg/mod/github.com/temporalio/cli@v1.5.1/cmd/temporal/main.go:18 +0x96\n"
	want := "time=1 level=ERROR msg=\"Failed to start gRPC listener\" error=\"listen tcp 127.0.0.1:1: bind: address already in use\"\n" +
		"goroutine 1 [running]:\n"
	if got := withoutStacks(out); got != want {
		t.Fatalf("withoutStacks:\n%s\nwant:\n%s", got, want)
	}
}
