package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestTLSProxy runs a real Temporal dev server (plaintext) and real SDK
// clients and workers through StartTLSProxy.
func TestTLSProxy(t *testing.T) {
	if _, err := TemporalCLIPath(); err != nil {
		MissingDependency(t, "%v", err)
	}
	temporal := StartTemporalT(t, TemporalOptions{})
	files := NewTLSFiles(t)

	t.Run("TLS", func(t *testing.T) {
		p := StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files})
		c := dialProxy(t, p, tlsConfig(t, files, false), nil)
		requireReachesTemporal(t, c)
		require.GreaterOrEqual(t, p.Requests(), 3, "GetSystemInfo, Check and DescribeNamespace went through the proxy")
		require.Zero(t, p.Rejected())
		require.Empty(t, p.ClientCNs(), "no client certificate was offered")
		require.Empty(t, p.Authorizations())
	})

	t.Run("PlaintextClientFails", func(t *testing.T) {
		p := StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files})
		err := checkHealthLazy(t, p, nil, nil)
		require.Error(t, err, "a plaintext client must not get through a TLS listener")
		require.Zero(t, p.Requests())
	})

	t.Run("UntrustedServerFails", func(t *testing.T) {
		// A client that does not trust the test CA refuses the proxy's
		// certificate: the proxy really terminates TLS with Files.
		p := StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files})
		err := checkHealthLazy(t, p, &tls.Config{ServerName: TLSServerName}, nil)
		require.Error(t, err)
		require.Zero(t, p.Requests())
	})

	t.Run("MTLS", func(t *testing.T) {
		p := StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files, RequireClientCert: true})
		c := dialProxy(t, p, tlsConfig(t, files, true), nil)
		requireReachesTemporal(t, c)
		require.Equal(t, []string{TLSClientCN}, p.ClientCNs())
		before := p.Requests()

		err := checkHealthLazy(t, p, tlsConfig(t, files, false), nil)
		require.Error(t, err, "without a client certificate the mTLS handshake must fail")
		require.Equal(t, before, p.Requests(), "nothing got through without a client certificate")
	})

	t.Run("APIKey", func(t *testing.T) {
		p := StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files, RequireAPIKey: "k-123"})
		c := dialProxy(t, p, tlsConfig(t, files, false), client.NewAPIKeyStaticCredentials("k-123"))
		requireReachesTemporal(t, c)
		require.Contains(t, p.Authorizations(), "Bearer k-123")
		require.Zero(t, p.Rejected())

		for name, creds := range map[string]client.Credentials{
			"wrong key": client.NewAPIKeyStaticCredentials("k-999"),
			"no key":    nil,
		} {
			rejected := p.Rejected()
			err := checkHealthLazy(t, p, tlsConfig(t, files, false), creds)
			require.Error(t, err, name)
			require.Equal(t, codes.Unauthenticated, status.Code(err), "%s: %v", name, err)
			require.Greater(t, p.Rejected(), rejected, name)
		}
		require.Contains(t, p.Authorizations(), "Bearer k-999")
	})

	t.Run("WireFormat", func(t *testing.T) {
		// What gRPC clients rely on, seen on the wire: a refusal is a
		// trailers-only response (HTTP 200, grpc-status in the only
		// HEADERS frame, no body), and a forwarded call ends with the
		// backend's grpc-status in trailers.
		p := StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files, RequireAPIKey: "k-123"})
		h2 := new(http.Protocols)
		h2.SetHTTP2(true)
		tr := &http.Transport{TLSClientConfig: tlsConfig(t, files, false), Protocols: h2}
		t.Cleanup(tr.CloseIdleConnections)
		call := func(auth string) *http.Response {
			// An empty GetSystemInfoRequest: uncompressed, length 0.
			req, err := http.NewRequest(http.MethodPost, "https://"+p.Addr+"/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo",
				bytes.NewReader([]byte{0, 0, 0, 0, 0}))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/grpc")
			req.Header.Set("Te", "trailers")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			res, err := tr.RoundTrip(req)
			require.NoError(t, err)
			require.Equal(t, "HTTP/2.0", res.Proto)
			return res
		}

		res := call("Bearer nope")
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "application/grpc", res.Header.Get("Content-Type"))
		require.Equal(t, "16", res.Header.Get("Grpc-Status"))
		require.NotEmpty(t, res.Header.Get("Grpc-Message"))
		require.Empty(t, body)
		require.Empty(t, res.Trailer)
		require.Equal(t, 1, p.Rejected())

		res = call("Bearer k-123")
		body, err = io.ReadAll(res.Body)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Empty(t, res.Header.Get("Grpc-Status"), "not trailers-only")
		require.Greater(t, len(body), 5, "a GetSystemInfoResponse message")
		require.Equal(t, "0", res.Trailer.Get("Grpc-Status"), "trailers: %v", res.Trailer)
		require.Equal(t, 1, p.Requests())
	})

	t.Run("Worker", func(t *testing.T) {
		// A worker polls through the proxy: its polls are held open until
		// a task comes (the workflow sleeps first, so one is held for at
		// least that long) and end with the server's trailers.
		p := StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files, RequireClientCert: true, RequireAPIKey: "k-123"})
		c := dialProxy(t, p, tlsConfig(t, files, true), client.NewAPIKeyStaticCredentials("k-123"))
		queue := fmt.Sprintf("tlsproxy-%d", time.Now().UnixNano())
		w := worker.New(c, queue, worker.Options{})
		w.RegisterWorkflowWithOptions(func(ctx workflow.Context, name string) (string, error) {
			if err := workflow.Sleep(ctx, 2*time.Second); err != nil {
				return "", err
			}
			ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
			var out string
			err := workflow.ExecuteActivity(ctx, "greet", name).Get(ctx, &out)
			return out, err
		}, workflow.RegisterOptions{Name: "tlsproxy-greeting"})
		w.RegisterActivityWithOptions(func(ctx context.Context, name string) (string, error) {
			return "hello " + name, nil
		}, activity.RegisterOptions{Name: "greet"})
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue, WorkflowExecutionTimeout: 30 * time.Second}, "tlsproxy-greeting", "tls")
		require.NoError(t, err)
		var out string
		require.NoError(t, run.Get(ctx, &out))
		require.Equal(t, "hello tls", out)
		require.Zero(t, p.Rejected())
		require.Equal(t, []string{TLSClientCN}, p.ClientCNs())
	})

	t.Run("CloseEndsLongPoll", func(t *testing.T) {
		// Closing the proxy with a long poll in flight fails the poll at
		// once and leaves no goroutine of the proxy behind.
		ignore := goleak.IgnoreCurrent()
		var p *TLSProxy
		var pollErr error
		t.Run("proxy", func(t *testing.T) {
			p = StartTLSProxy(t, TLSProxyOptions{Backend: temporal.HostPort, Files: files})
			c := dialProxy(t, p, tlsConfig(t, files, false), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
			require.NoError(t, err)
			queue := fmt.Sprintf("tlsproxy-empty-%d", time.Now().UnixNano())
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				_, err := c.WorkflowService().PollWorkflowTaskQueue(ctx, &workflowservice.PollWorkflowTaskQueueRequest{
					Namespace: "default",
					TaskQueue: &taskqueuepb.TaskQueue{Name: queue},
					Identity:  "tlsproxy-test",
				})
				done <- err
			}()
			// The server holds the poll once it lists the poller on the
			// queue (asked directly, not through the proxy).
			require.Eventually(t, func() bool { return hasPoller(t, temporal.Client(), queue, "tlsproxy-test") }, 30*time.Second, 10*time.Millisecond,
				"the server never saw the poll through the proxy")
			p.Close()
			select {
			case pollErr = <-done:
			case <-time.After(60 * time.Second): // a hang guard, not a timing claim
				t.Fatal("the long poll did not end when the proxy closed")
			}
			// Cut by the close: a poll the server answered (an empty task
			// queue's poll times out into an empty answer) ends without error.
			require.Error(t, pollErr, "the poll ended because the proxy closed its connection")
		})
		require.NoError(t, goleak.Find(ignore))
	})
}

// hasPoller reports whether the server lists a poller named identity on
// the workflow task queue.
func hasPoller(t testing.TB, c client.Client, queue, identity string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	require.NoError(t, err)
	for _, p := range resp.GetPollers() {
		if p.GetIdentity() == identity {
			return true
		}
	}
	return false
}

// tlsConfig trusts files.CA for TLSServerName, with the client certificate
// when withCert.
func tlsConfig(t testing.TB, files *TLSFiles, withCert bool) *tls.Config {
	t.Helper()
	conf := &tls.Config{RootCAs: files.CertPool(t), ServerName: TLSServerName}
	if withCert {
		cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
		require.NoError(t, err)
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf
}

func clientOptions(p *TLSProxy, conf *tls.Config, creds client.Credentials) client.Options {
	return client.Options{
		HostPort:          p.Addr,
		Namespace:         "default",
		ConnectionOptions: client.ConnectionOptions{TLS: conf},
		Credentials:       creds,
		Logger:            sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}
}

// dialProxy dials the proxy (TLS when conf is set) and closes the client
// at cleanup.
func dialProxy(t testing.TB, p *TLSProxy, conf *tls.Config, creds client.Credentials) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, clientOptions(p, conf, creds))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// requireReachesTemporal checks that c's calls reach the dev server: its
// health check and the default namespace.
func requireReachesTemporal(t testing.TB, c client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)
	resp, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Equal(t, "default", resp.GetNamespaceInfo().GetName())
}

// checkHealthLazy makes a client that is expected to fail and returns the
// error of its CheckHealth, given 3 seconds (the SDK retries UNAVAILABLE).
func checkHealthLazy(t testing.TB, p *TLSProxy, conf *tls.Config, creds client.Credentials) error {
	t.Helper()
	c, err := client.NewLazyClient(clientOptions(p, conf, creds))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	t.Logf("CheckHealth: %v", err)
	return err
}
