// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// startExporter starts an exporter without queue or retry, so that ConsumeLogs returns what the file returned.
func startExporter(t testing.TB, cfg *Config) exporter.Logs {
	t.Helper()
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp
}

func resultLogs(n int, message string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), "test-cluster")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range n {
		r := policyresult.Result{Cluster: "test-cluster", Source: "kyverno", Policy: "require-labels", Outcome: policyresult.OutcomeFail, Message: message,
			Resource: policyresult.Resource{Kind: "Pod", Namespace: "shop", Name: "pod-" + string(rune('a'+i%26))}}
		policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
	}
	return ld
}

func readLines(t *testing.T, path string) []plog.Logs {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []plog.Logs
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(sc.Bytes())
		require.NoError(t, err, "line %d is not an OTLP JSON logs request", len(out)+1)
		out = append(out, ld)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestWritesOneOTLPJSONLinePerBatch(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Path = filepath.Join(t.TempDir(), "nested", "dir", "results.jsonl")
	exp := startExporter(t, cfg)

	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(3, "first")))
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(2, "second")))

	batches := readLines(t, cfg.Path)
	require.Len(t, batches, 2)
	assert.Equal(t, 3, batches[0].LogRecordCount())
	assert.Equal(t, 2, batches[1].LogRecordCount())
	rl := batches[1].ResourceLogs().At(0)
	got, err := policyresult.ReadLogRecord(rl.Resource(), rl.ScopeLogs().At(0).LogRecords().At(1))
	require.NoError(t, err)
	assert.Equal(t, "test-cluster", got.Cluster)
	assert.Equal(t, "second", got.Message)
	assert.Equal(t, "pod-b", got.Resource.Name)

	st, err := os.Stat(cfg.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
}

func TestAppendsAcrossRestarts(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Path = filepath.Join(t.TempDir(), "results.jsonl")
	for range 2 {
		exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(1, "x")))
		require.NoError(t, exp.Shutdown(context.Background()))
	}
	assert.Len(t, readLines(t, cfg.Path), 2)
}

func TestWriteFailureIsRetryable(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Path = "/dev/full" // every write fails with ENOSPC
	exp := startExporter(t, cfg)
	err := exp.ConsumeLogs(context.Background(), resultLogs(1, "x"))
	require.ErrorContains(t, err, "writing /dev/full: write /dev/full: no space left on device")
	assert.False(t, consumererror.IsPermanent(err), "a full disk may recover: the queue must keep the batch")
}

// TestRemovedFileIsWrittenAgain: a file (or directory) removed or renamed under the exporter must not swallow the
// next batches. Writes to the open file would succeed into a file no one reads, and acknowledge batches that are
// then lost; the exporter writes them to a new file at the path instead.
func TestRemovedFileIsWrittenAgain(t *testing.T) {
	for _, tt := range []struct {
		name   string
		remove func(path string) error
		// kept is where the first batch is afterwards, if anywhere.
		kept func(path string) string
	}{
		{"file removed", os.Remove, nil},
		{"directory removed", func(path string) error { return os.RemoveAll(filepath.Dir(path)) }, nil},
		{"file renamed", func(path string) error { return os.Rename(path, path+".old") },
			func(path string) string { return path + ".old" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Path = filepath.Join(t.TempDir(), "out", "results.jsonl")
			exp := startExporter(t, cfg)
			require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(1, "before")))
			require.NoError(t, tt.remove(cfg.Path))

			require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(2, "after")))
			require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(3, "after")))
			batches := readLines(t, cfg.Path)
			require.Len(t, batches, 2, "the batches after the removal are in a new file at the path")
			assert.Equal(t, 2, batches[0].LogRecordCount())
			assert.Equal(t, 3, batches[1].LogRecordCount())
			if tt.kept != nil {
				assert.Len(t, readLines(t, tt.kept(cfg.Path)), 1, "the renamed file keeps what was written before")
			}
		})
	}
}

// TestReopenFailureIsRetryable: when the file cannot be created again, the batch is kept for the retry, which
// writes it once the path is usable.
func TestReopenFailureIsRetryable(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Path = filepath.Join(t.TempDir(), "out", "results.jsonl")
	exp := startExporter(t, cfg)
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(1, "before")))
	dir := filepath.Dir(cfg.Path)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, nil, 0o600)) // a file where the directory was

	ld := resultLogs(2, "after")
	err := exp.ConsumeLogs(context.Background(), ld)
	require.ErrorContains(t, err, "creating the directory of "+cfg.Path)
	assert.False(t, consumererror.IsPermanent(err), "the path may become usable: the queue must keep the batch")

	require.NoError(t, os.Remove(dir))
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld), "the retry")
	batches := readLines(t, cfg.Path)
	require.Len(t, batches, 1)
	assert.Equal(t, 2, batches[0].LogRecordCount())
}

func TestStartFailsOnUnusablePath(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Path = t.TempDir() // a directory
	exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	assert.ErrorContains(t, exp.Start(context.Background(), componenttest.NewNopHost()), "opening "+cfg.Path)
}

func TestRotationKeepsMaxBackups(t *testing.T) {
	dir := t.TempDir()
	cfg := createDefaultConfig().(*Config)
	cfg.Path = filepath.Join(dir, "results.jsonl")
	cfg.Rotation = RotationConfig{MaxMegabytes: 1, MaxBackups: 2}
	exp := startExporter(t, cfg)

	big := resultLogs(1, strings.Repeat("m", 600<<10)) // two batches pass 1 MiB
	for range 8 {
		require.NoError(t, exp.ConsumeLogs(context.Background(), big))
	}
	rotated, err := filepath.Glob(filepath.Join(dir, "results-*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, rotated, 2, "only max_backups rotated files are kept")
	for _, p := range rotated {
		assert.Len(t, readLines(t, p), 2, p)
	}
	// Every batch written after the last rotation is in the live file.
	_, err = os.Stat(cfg.Path)
	require.NoError(t, err)
}
