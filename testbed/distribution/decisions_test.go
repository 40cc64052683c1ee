// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func readDecisions(t *testing.T, dir string) []policyresult.Decision {
	var out []policyresult.Decision
	eachRecord(t, dir, func(res pcommon.Resource, lr plog.LogRecord) {
		if d, err := policyresult.ReadDecisionLogRecord(res, lr); err == nil {
			out = append(out, d)
		}
	})
	return out
}

// TestDefaultConfigReceivesDecisionStreams: `make run` takes Gatekeeper NDJSON on ./data/decisions.sock and
// OPA uploads on 127.0.0.1, and writes them under ./data.
func TestDefaultConfigReceivesDecisionStreams(t *testing.T) {
	dir := t.TempDir()
	c, p := start(t, dir, "")

	sock := filepath.Join(dir, "data", "decisions.sock")
	st, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	_, err = conn.Write([]byte(`{"id":"2026-11-22T08:00:00Z","eventType":"violation_audited","kind":"K8sRequiredLabels",` +
		`"name":"must-have-owner","message":"you must provide labels: {\"owner\"}","enforcementAction":"deny",` +
		`"resourceAPIVersion":"v1","resourceKind":"Namespace","resourceName":"shop"}` + "\n"))
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	body := `[{"decision_id":"opa-1","path":"example/allow","input":{"user":"bob"},"result":false,"timestamp":"2026-11-22T08:00:01Z"}]`
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/logs", p.OPA), "application/json", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var got []policyresult.Decision
	collectortest.Eventually(t, 30*time.Second, func() error {
		if got = readDecisions(t, dir); len(got) < 2 {
			return fmt.Errorf("%d of 2 decisions written", len(got))
		}
		return nil
	})
	c.Stop()
	bySource := map[string]policyresult.Decision{}
	for _, d := range got {
		bySource[d.Source] = d
	}
	assert.Equal(t, "K8sRequiredLabels", bySource["gatekeeper"].Policy)
	assert.Equal(t, "shop", bySource["gatekeeper"].Resource.Name)
	assert.Equal(t, "opa-1", bySource["opa"].ID)
	assert.Equal(t, "local", bySource["opa"].Cluster)
	_, err = os.Stat(sock)
	assert.True(t, os.IsNotExist(err), "the socket is removed at shutdown")
}
