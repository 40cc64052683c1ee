// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

func opaConfig(t *testing.T) *Config {
	cfg := createDefaultConfig().(*Config)
	o := defaultOPA()
	o.ServerConfig.NetAddr.Endpoint = fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t))
	o.ServerConfig.MaxRequestBodySize = 64 << 10
	cfg.OPA = configoptional.Some(o)
	return cfg
}

func opaEvent(id string, allow bool) string {
	return fmt.Sprintf(`{"decision_id":%q,"path":"example/allow","input":{"user":"alice","secret":"s3cr3t"},"result":%t,`+
		`"timestamp":"2026-11-22T08:00:00.123456789Z","labels":{"id":"opa-1","version":"1.22.2"}}`, id, allow)
}

func post(t *testing.T, url string, body []byte, gz bool) *http.Response {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write(body)
		require.NoError(t, w.Close())
		req.Body = io.NopCloser(&b)
		req.ContentLength = int64(b.Len())
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	// Read and close the body here, so the connection goes back to the pool and is closed at cleanup.
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

func TestOPAEndpointAnswers(t *testing.T) {
	cfg := opaConfig(t)
	tr := startReceiver(t, cfg)
	url := "http://" + cfg.OPA.Get().ServerConfig.NetAddr.Endpoint + "/logs"

	resp := post(t, url, []byte("["+opaEvent("d-1", true)+","+opaEvent("d-2", false)+"]"), true)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "gzip JSON array, as OPA sends")
	got := tr.waitDecisions(2, 5*time.Second)
	assert.Equal(t, "d-1", got[0].ID)
	assert.Equal(t, policyresult.OutcomePass, got[0].Outcome())
	assert.Equal(t, time.Date(2026, 11, 22, 8, 0, 0, 123456789, time.UTC), got[0].Timestamp, "the event's time, not arrival")
	assert.NotContains(t, got[0].Body, "input", "inputs are left out unless include_input")
	assert.Equal(t, true, got[0].Attrs["policy.decision.input.omitted"])

	for name, tt := range map[string]struct {
		body []byte
		want int
	}{
		"not json":  {[]byte("{{{"), http.StatusBadRequest},
		"not array": {[]byte(`"hello"`), http.StatusBadRequest},
		"too large": {[]byte("[" + opaEvent(string(bytes.Repeat([]byte("x"), 70<<10)), true) + "]"), http.StatusRequestEntityTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			resp := post(t, url, tt.body, false)
			msg, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tt.want, resp.StatusCode, string(msg))
		})
	}
	resp, err := http.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	// While the pipeline refuses, OPA is told to retry and nothing is kept.
	tr.sink.refusing.Store(true)
	resp = post(t, url, []byte("["+opaEvent("d-3", true)+"]"), true)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	tr.sink.refusing.Store(false)
	assert.Equal(t, 2, tr.sink.LogRecordCount())
}

func TestOPAEndpointIncludesBoundedInputs(t *testing.T) {
	cfg := opaConfig(t)
	cfg.IncludeInput, cfg.MaxInputBytes = true, 100
	tr := startReceiver(t, cfg)
	url := "http://" + cfg.OPA.Get().ServerConfig.NetAddr.Endpoint + "/logs"
	big := fmt.Sprintf(`{"decision_id":"big","path":"p","input":{"blob":%q},"result":true}`, string(bytes.Repeat([]byte("y"), 200)))
	resp := post(t, url, []byte("["+opaEvent("small", true)+","+big+"]"), false)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := tr.waitDecisions(2, 5*time.Second)
	assert.Equal(t, map[string]any{"user": "alice", "secret": "s3cr3t"}, got[0].Body["input"])
	assert.NotContains(t, got[1].Body, "input", "inputs over max_input_bytes are left out")
	assert.Equal(t, true, got[1].Attrs["policy.decision.input.omitted"])
	assert.Equal(t, int64(len(fmt.Sprintf(`{"blob":%q}`, string(bytes.Repeat([]byte("y"), 200))))), got[1].Attrs["policy.decision.input.size"])
}

func TestSplitEvents(t *testing.T) {
	for body, want := range map[string]int{`[]`: 0, ` [ {"a":1} , {"b":[2,3]} ] `: 2, `{"decision_id":"x"}`: 1} {
		ev, err := decode.SplitEvents([]byte(body), 10)
		require.NoError(t, err, body)
		assert.Len(t, ev, want, body)
	}
	for _, bad := range []string{``, `"x"`, `[{"a":1},]`, `[{"a":1}`, `[{"a":1}] x`, `{"a":1} {}`, `[1 2]`, `{{{`} {
		_, err := decode.SplitEvents([]byte(bad), 10)
		assert.Error(t, err, bad)
	}
}

func stringsReader(s string) io.Reader { return bytes.NewReader([]byte(s)) }
