// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// pssReportJSON is a PolicyReport of testbed/k8sreports: the 19 results of Kyverno's Pod Security Standards
// "restricted" policies for one Pod, one of them failing, with $NAMESPACE, $UID (also its name), $RV and $POD
// to fill in.
var pssReportJSON = func() string {
	raw, err := os.ReadFile(filepath.Join("testdata", "state", "pss-report.json"))
	if err != nil {
		panic(err)
	}
	return string(raw)
}()

// pssResults is the number of results of pssReportJSON.
const pssResults = 19

// pssReport is the i-th PolicyReport of testbed/k8sreports (in 50 namespaces), parsed and diffed as the
// receiver does: its key and the state committed once its records were accepted.
func pssReport(tb testing.TB, i int) (objKey, *emittedReport) {
	tb.Helper()
	ns := fmt.Sprintf("ns-%02d", i%50)
	uid := fmt.Sprintf("0b7f7c1e-%04d-4c1e-9f35-%012d", i%10000, i)
	raw := strings.NewReplacer("$NAMESPACE", ns, "$UID", uid, "$RV", fmt.Sprint(100000+i),
		"$POD", fmt.Sprintf("app-%d-7d9f8c6b5-x%04d", i%40, i)).Replace(pssReportJSON)
	obj, err := parse.DecodeObject(policyReportGVR, []byte(raw))
	require.NoError(tb, err)
	parsed, err := parse.PolicyReport(obj, testBudget)
	require.NoError(tb, err)
	require.Len(tb, parsed, pssResults)
	_, state := diff(nil, parsed, false, false, true, "c1")
	state.UID, state.ResourceVersion = obj.Metadata.UID, obj.Metadata.ResourceVersion
	return objKey{policyReportGVR, ns, uid}, state
}

// countingClient is the real storage client, counting what each Batch writes. With fail set, a Batch that
// writes fails without applying anything, as a crash before its transaction committed would leave the storage.
type countingClient struct {
	storage.Client
	batches, sets, deletes, gets int
	// written is the bytes of the keys and values set, lastSets the keys the last Batch set.
	written  int64
	lastSets []string
	fail     bool
}

func (c *countingClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	if c.fail && slices.ContainsFunc(ops, func(op *storage.Operation) bool { return op.Type != storage.Get }) {
		return fmt.Errorf("injected failure of a batch of %d operations", len(ops))
	}
	c.batches++
	c.lastSets = c.lastSets[:0]
	for _, op := range ops {
		switch op.Type {
		case storage.Set:
			c.sets++
			c.lastSets = append(c.lastSets, op.Key)
			c.written += int64(len(op.Key) + len(op.Value))
		case storage.Delete:
			c.deletes++
		case storage.Get:
			c.gets++
		}
	}
	return c.Client.Batch(ctx, ops...)
}

func (c *countingClient) Get(ctx context.Context, key string) ([]byte, error) {
	op := storage.GetOperation(key)
	err := c.Batch(ctx, op)
	return op.Value, err
}

func (c *countingClient) Set(ctx context.Context, key string, value []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, value))
}

func (c *countingClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, storage.DeleteOperation(key))
}

// openStateStorage starts file_storage on dir and opens the receiver's client, counted; stop closes both.
func openStateStorage(tb testing.TB, dir string) (client *countingClient, stop func()) {
	tb.Helper()
	ext := filestoragetest.Start(tb, dir)
	c, err := ext.(storage.Extension).GetClient(context.Background(), component.KindReceiver, component.MustNewID("k8s_reports"), "")
	require.NoError(tb, err)
	return &countingClient{Client: c}, func() {
		require.NoError(tb, c.Close(context.Background()))
		require.NoError(tb, ext.Shutdown(context.Background()))
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc) //nolint:gosec // G115: a heap's size
}

// rssFile is the resident file-backed memory of the process, the mapped storage files' pages among it (Linux
// only; 0 elsewhere).
func rssFile() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// dirSize is the size of the files in dir: the storage's bbolt file.
func dirSize(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	entries, err := os.ReadDir(dir)
	require.NoError(tb, err)
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		require.NoError(tb, err)
		n += info.Size()
	}
	return n
}

// pssCommit is the reports of one commit of the initial sync: one batch of max_batch_records (1,000) records.
const pssCommit = 1000 / pssResults

// BenchmarkStoredStateOfPSSReports builds the emitted state of the testbed's PolicyReports (19 results each),
// as the receiver keeps it for every report, and stores it in file_storage in the commits of an initial sync,
// then loads it as a restart does. It reports, per result: the heap of the state (with a map of the reports,
// as the tracker's), of what the store keeps beside it (and the storage client), of the state loaded, and the
// bytes written; and the bytes written by the last commit, the size of the bbolt file, the resident
// file-backed memory the sync and the load added (the mapped bbolt pages they touched), and their durations.
// Run it once: go test -run '^$' -bench StoredStateOfPSS -benchtime 1x.
//
// Seen on the 2-core development machine, the first version of the stored state (JSON entries and an index
// rewritten by every commit) against the second:
//
//	reports                          10,000           50,000
//	heap of the state, B/result      123 -> 94        122 -> 92
//	store's heap, B/result           28 -> 9          41 -> 7
//	written, B/result                785 -> 47.8      2,909 -> 47.8
//	the last commit                  1.1 MB -> 15 KB  5.4 MB -> 25 KB (16 and 28 reports)
//	bbolt file                       85 -> 34 MB      840 -> 118 MB
//	file resident after the sync     51 -> 2.5 MB     587 -> 19 MB
//	file resident after a load       73 -> 21 MB      603 -> 105 MB
//	sync, load                       1.1 s, 0.7 s -> 0.1 s, 0.1 s  14.8 s, 3.4 s -> 0.4 s, 0.2 s
func BenchmarkStoredStateOfPSSReports(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("reports=%d", n), func(b *testing.B) {
			before := heapInUse()
			states := make(map[objKey]*emittedReport, n)
			keys := make([]objKey, n)
			for i := range n {
				k, state := pssReport(b, i)
				keys[i], states[k] = k, state
			}
			results := float64(n * pssResults)
			perResult := func(bytes int64) float64 { return float64(bytes) / results }
			heap := heapInUse() - before

			for b.Loop() {
				dir := b.TempDir()
				before, rss := heapInUse(), rssFile()
				client, stop := openStateStorage(b, dir)
				store := &stateStore{client: client}
				_, err := store.load(context.Background())
				require.NoError(b, err)
				start := time.Now()
				var lastCommit int64
				for chunk := range slices.Chunk(keys, pssCommit) {
					commit := make(map[objKey]*emittedReport, len(chunk))
					for _, k := range chunk {
						commit[k] = states[k]
					}
					written := client.written
					require.NoError(b, store.save(context.Background(), commit))
					lastCommit = client.written - written
				}
				saving, savingRSS := time.Since(start), rssFile()-rss
				storeHeap := heapInUse() - before
				runtime.KeepAlive(store)
				written := client.written
				stop()
				file := dirSize(b, dir)

				before, rss = heapInUse(), rssFile()
				client, stop = openStateStorage(b, dir)
				start = time.Now()
				loader := &stateStore{client: client}
				loaded, err := loader.load(context.Background())
				loading, loadingRSS := time.Since(start), rssFile()-rss
				require.NoError(b, err)
				require.Len(b, loaded, n)
				loadedHeap := heapInUse() - before
				runtime.KeepAlive(loader)
				runtime.KeepAlive(loaded)
				stop()

				b.ReportMetric(perResult(heap), "heap-B/result")
				b.ReportMetric(perResult(storeHeap), "store-heap-B/result")
				b.ReportMetric(perResult(loadedHeap), "loaded-heap-B/result")
				b.ReportMetric(perResult(written), "written-B/result")
				b.ReportMetric(float64(lastCommit), "last-commit-B")
				b.ReportMetric(float64(file)/1e6, "file-MB")
				b.ReportMetric(float64(savingRSS)/1e6, "save-rss-file-MB")
				b.ReportMetric(float64(loadingRSS)/1e6, "load-rss-file-MB")
				b.ReportMetric(saving.Seconds(), "save-s")
				b.ReportMetric(loading.Seconds(), "load-s")
			}
			runtime.KeepAlive(states)
		})
	}
}
