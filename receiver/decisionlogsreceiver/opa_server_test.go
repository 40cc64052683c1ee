package decisionlogsreceiver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/collectortest"
)

const opaVersion = "v1.22.2"

// opaBinary is the real OPA that hack/test-servers.sh installs.
func opaBinary(t *testing.T) string {
	dir := os.Getenv("CACHE_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "otelcol-policy")
	}
	bin := filepath.Join(dir, "bin", "opa-"+opaVersion)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("OPA %s not found at %s: run hack/test-servers.sh (make test does)", opaVersion, bin)
	}
	return bin
}

// startOPA runs an OPA server whose decision_logs plugin uploads to the receiver at logsURL.
func startOPA(t *testing.T, logsURL string) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "policy.rego"), []byte(`package example

default allow := false

allow if input.user == "alice"
`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(fmt.Sprintf(`services:
  collector:
    url: %s
decision_logs:
  service: collector
  resource: /logs
  reporting:
    min_delay_seconds: 1
    max_delay_seconds: 2
`, logsURL)), 0o600))
	addr := fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t))
	cmd := exec.Command(opaBinary(t), "run", "--server", "--addr", addr, "--config-file", filepath.Join(dir, "config.yaml"),
		filepath.Join(dir, "policy.rego"))
	logf, err := os.Create(filepath.Join(dir, "opa.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		http.DefaultClient.CloseIdleConnections()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "opa.log"))
			t.Logf("opa log:\n%s", b)
		}
	})
	url := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond)
	return url
}

// evaluate asks OPA for n decisions and returns their decision ids.
func evaluate(t *testing.T, opaURL string, n int) []string {
	ids := make([]string, 0, n)
	for i := range n {
		user := "alice"
		if i%3 == 0 {
			user = "mallory"
		}
		body := fmt.Sprintf(`{"input":{"user":%q,"i":%d}}`, user, i)
		resp, err := http.Post(opaURL+"/v1/data/example/allow", "application/json", bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		var out struct {
			DecisionID string `json:"decision_id"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		resp.Body.Close()
		require.NotEmpty(t, out.DecisionID, "OPA returns a decision id when decision logging is on")
		ids = append(ids, out.DecisionID)
	}
	return ids
}

func TestRealOPADecisionLogsArriveExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real OPA server")
	}
	cfg := opaConfig(t)
	tr := startReceiver(t, cfg)
	opaURL := startOPA(t, "http://"+cfg.OPA.Get().ServerConfig.NetAddr.Endpoint)

	// The pipeline refuses for a while: OPA keeps its chunks and retries.
	tr.sink.refusing.Store(true)
	const n = 60
	ids := evaluate(t, opaURL, n)
	require.Eventually(t, func() bool { return tr.sink.refused.Load() >= 1 }, 15*time.Second, 50*time.Millisecond)
	time.Sleep(2 * time.Second)
	tr.sink.refusing.Store(false)

	got := tr.waitDecisions(n, 60*time.Second)
	gotIDs := make([]string, 0, n)
	denied := 0
	for _, d := range got {
		gotIDs = append(gotIDs, d.ID)
		assert.Equal(t, "opa", d.Source)
		assert.Equal(t, "example/allow", d.Policy)
		require.NotNil(t, d.Allowed)
		if !*d.Allowed {
			denied++
		}
		assert.False(t, d.Timestamp.IsZero(), "OPA's timestamp")
	}
	sort.Strings(ids)
	sort.Strings(gotIDs)
	assert.Equal(t, ids, gotIDs, "the same decision ids, each once")
	assert.Equal(t, n/3, denied, "every third request was denied")
}
