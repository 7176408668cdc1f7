// Package deployments_test checks the deployment files against mcpflow's
// configuration: every config.yaml they carry loads (unknown keys are
// errors), every extensions_config.json decodes, and every MCPFLOW_*
// variable they set is one mcpflow reads.
package deployments_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/workflows"
)

// otherEnv are variables the pods may set that are not config keys.
var otherEnv = []string{
	"MCPFLOW_CONFIG", "MCPFLOW_EXTENSIONS_CONFIG_PATH", config.EnvStdioAllowlist,
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
}

// docs reads every YAML document of a file.
func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, path)
		if d != nil {
			out = append(out, d)
		}
	}
}

func loadServiceYAML(t *testing.T, where, content string, env map[string]string) *config.Service {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	s, err := config.LoadService(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err, "%s: config.yaml must load", where)
	return s
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

func checkEnvNames(t *testing.T, where string, names []string) {
	t.Helper()
	known := config.EnvKeys()
	for _, n := range names {
		if !strings.HasPrefix(n, "MCPFLOW_") && n != "OTEL_EXPORTER_OTLP_ENDPOINT" {
			continue // the MCP servers' own variables ($VAR in extensions_config.json)
		}
		require.True(t, slices.Contains(known, n) || slices.Contains(otherEnv, n), "%s sets %s, which mcpflow does not read", where, n)
	}
}

func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	kinds := map[string]int{}
	var svc *config.Service
	ports := map[string]int{} // serve/worker → the container port its probes use
	for _, f := range files {
		for _, d := range docs(t, f) {
			kind, _ := d["kind"].(string)
			require.NotEmpty(t, kind, f)
			require.NotEmpty(t, d["apiVersion"], f)
			kinds[kind]++
			switch kind {
			case "ConfigMap":
				data := d["data"].(map[string]any)
				svc = loadServiceYAML(t, f, data["config.yaml"].(string), nil)
				_, err := config.ParseExtensions([]byte(data["extensions_config.json"].(string)), f, func(string) (string, bool) { return "Bearer x", true })
				require.NoError(t, err, "%s: extensions_config.json must decode", f)
			case "Secret":
				var names []string
				for k := range d["stringData"].(map[string]any) {
					names = append(names, k)
				}
				checkEnvNames(t, f, names)
			case "Deployment":
				spec := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				for _, c := range spec["containers"].([]any) {
					c := c.(map[string]any)
					require.NotNil(t, c["readinessProbe"], "%s: readiness probe", f)
					require.NotNil(t, c["livenessProbe"], "%s: liveness probe", f)
					require.NotNil(t, c["resources"].(map[string]any)["requests"], "%s: resource requests", f)
					var names []string
					for _, e := range c["env"].([]any) {
						names = append(names, e.(map[string]any)["name"].(string))
					}
					checkEnvNames(t, f, names)
					args := c["args"].([]any)
					require.Contains(t, []any{"serve", "worker"}, args[0])
					p := c["ports"].([]any)[0].(map[string]any)
					require.Equal(t, "http", p["name"], "%s: the probes use the port named http", f)
					ports[args[0].(string)] = p["containerPort"].(int)
				}
			}
		}
	}
	for _, k := range []string{"Deployment", "ConfigMap", "Secret", "Service", "PodDisruptionBudget"} {
		require.Positive(t, kinds[k], "a %s", k)
	}
	require.Equal(t, 2, kinds["Deployment"], "serve and worker")
	require.NotNil(t, svc)
	require.Equal(t, port(t, svc.Server.Addr), ports["serve"], "serve listens on server.addr")
	require.Equal(t, port(t, svc.Server.WorkerAddr), ports["worker"], "a worker listens on server.worker_addr")
}

func TestCompose(t *testing.T) {
	t.Parallel()
	d := docs(t, "compose/docker-compose.yml")[0]
	services := d["services"].(map[string]any)
	for _, s := range []string{"postgres", "temporal", "temporal-ui", "search-attributes", "serve-1", "serve-2", "worker", "lb"} {
		require.Contains(t, services, s)
	}
	require.EqualValues(t, 2, services["worker"].(map[string]any)["deploy"].(map[string]any)["replicas"])
	for _, name := range []string{"serve-1", "serve-2", "worker"} {
		s := services[name].(map[string]any)
		require.NotNil(t, s["healthcheck"], "%s has a health check", name)
		var envNames []string
		for k := range s["environment"].(map[string]any) {
			envNames = append(envNames, k)
		}
		checkEnvNames(t, "docker-compose.yml "+name, envNames)
	}
	cfg, err := os.ReadFile("compose/config.yaml")
	require.NoError(t, err)
	svc := loadServiceYAML(t, "compose/config.yaml", string(cfg), map[string]string{"MCPFLOW_MCP_TASKS_SECRETS_KEY": "k"})
	for name, addr := range map[string]string{"serve-1": svc.Server.Addr, "worker": svc.Server.WorkerAddr} {
		check := fmt.Sprint(services[name].(map[string]any)["healthcheck"].(map[string]any)["test"])
		require.Contains(t, check, fmt.Sprintf("127.0.0.1:%d/readyz", port(t, addr)), "%s probes the port it listens on", name)
	}
	ext, err := os.ReadFile("compose/extensions_config.json")
	require.NoError(t, err)
	_, err = config.ParseExtensions(ext, "compose/extensions_config.json", nil)
	require.NoError(t, err)
}

func TestDevConfig(t *testing.T) {
	t.Parallel()
	cfg, err := os.ReadFile("dev/config.yaml")
	require.NoError(t, err)
	loadServiceYAML(t, "dev/config.yaml", string(cfg), nil)
}

// make dev and the compose file register exactly mcpflow's search
// attributes (workflows.SearchAttributeNames).
func TestSearchAttributesRegistered(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(workflows.SearchAttributeNames))
	for file, pattern := range map[string]string{
		"dev/run.sh":                 `SEARCH_ATTRS=\(([^)]*)\)`,
		"compose/docker-compose.yml": `for a in ([A-Za-z ]+); do`,
	} {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		m := regexp.MustCompile(pattern).FindSubmatch(raw)
		require.NotNil(t, m, "%s lists the search attributes", file)
		require.Equal(t, want, slices.Sorted(slices.Values(strings.Fields(string(m[1])))), file)
	}
}
