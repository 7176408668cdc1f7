package testenv

import (
	"context"
	"net"
	"strings"
	"testing"
)

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

// TestStartTemporalPortTaken: a dev server whose port is taken fails with
// the cause in the error (tried three times, each ended by the cause in its
// output rather than the 60-second dial timeout).
func TestStartTemporalPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = StartTemporal(context.Background(), TemporalOptions{HostPort: l.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "can't set frontend port") || !strings.Contains(err.Error(), portTaken) {
		t.Fatalf("StartTemporal on a taken port: %v", err)
	}
}
