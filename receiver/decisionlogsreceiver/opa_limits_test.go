// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

// opaURL is where the test receiver's OPA endpoint listens.
func opaURL(cfg *Config) string {
	return "http://" + cfg.OPA.Get().ServerConfig.NetAddr.Endpoint + "/logs"
}

// upload is a JSON array of OPA events with ids prefix-0 … prefix-(n-1).
func upload(prefix string, n int) []byte {
	events := make([]string, n)
	for i := range events {
		events[i] = opaEvent(fmt.Sprintf("%s-%d", prefix, i), true)
	}
	return []byte("[" + strings.Join(events, ",") + "]")
}

func ids(ds []gotDecision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func TestOPAUploadOfTooManyEventsIsRefused(t *testing.T) {
	cfg := opaConfig(t)
	cfg.OPA.Get().MaxEventsPerRequest = 5
	tr := startReceiver(t, cfg)

	// The bomb in small: many tiny events, each of which would become a record of its own.
	resp := post(t, opaURL(cfg), []byte("["+strings.Repeat("{},", 5)+"{}]"), true)
	msg, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Contains(t, string(msg), "more than 5 decision events in one upload")
	assert.Equal(t, int64(1), tr.rejectedCount("opa", "too_many_events"))

	resp = post(t, opaURL(cfg), upload("ok", 5), true)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "max_events_per_request events are taken")
	tr.waitDecisions(5, 5*time.Second)
}

func TestOPAEventsThatWouldAmplifyAreSkipped(t *testing.T) {
	cfg := opaConfig(t)
	cfg.OPA.Get().ServerConfig.MaxRequestBodySize = 4 << 20
	cfg.MaxBatchBytes, cfg.MaxObjectMembers = 1<<20, 100
	tr := startReceiver(t, cfg)

	// The array bomb in small: 2 MiB of JSON, 1,000,000 elements (27 MB as pdata), as 2 KiB of gzip.
	array := `{"decision_id":"array","result":[` + strings.Repeat("0,", 999_999) + "0]}"
	wide := `{"decision_id":"wide","result":{` + strings.TrimPrefix(strings.Repeat(`,"k":1`, 101), ",") + "}}"
	body := []byte("[" + opaEvent("before", true) + "," + array + "," + wide + "," + opaEvent("after", false) + "]")
	resp := post(t, opaURL(cfg), body, true)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the other events of the upload are delivered")
	assert.Equal(t, []string{"before", "after"}, ids(tr.waitDecisions(2, 5*time.Second)))
	assert.Equal(t, int64(2), tr.rejectedCount("opa", "event_too_large"))
}

func TestOPAUploadIsDeliveredInBatches(t *testing.T) {
	sizes := func(tr *testReceiver) []int {
		var out []int
		for _, ld := range tr.sink.AllLogs() {
			out = append(out, ld.LogRecordCount())
		}
		return out
	}
	t.Run("max_batch_records", func(t *testing.T) {
		cfg := opaConfig(t)
		cfg.MaxBatchRecords = 4
		tr := startReceiver(t, cfg)
		assert.Equal(t, http.StatusOK, post(t, opaURL(cfg), upload("d", 10), true).StatusCode)
		got := tr.waitDecisions(10, 5*time.Second)
		assert.Equal(t, "d-0", got[0].ID)
		assert.Equal(t, "d-9", got[9].ID)
		assert.Equal(t, []int{4, 4, 2}, sizes(tr), "one ConsumeLogs per batch of max_batch_records")
	})
	t.Run("max_batch_bytes", func(t *testing.T) {
		cfg := opaConfig(t)
		cfg.MaxBatchBytes = minBatchBytes
		tr := startReceiver(t, cfg)
		ev, err := decode.OPA([]byte(opaEvent("x", true)))
		require.NoError(t, err)
		price, err := tr.rcv.price(&ev)
		require.NoError(t, err)
		perBatch := cfg.MaxBatchBytes / price

		assert.Equal(t, http.StatusOK, post(t, opaURL(cfg), upload("e", 3*perBatch), true).StatusCode)
		tr.waitDecisions(3*perBatch, 5*time.Second)
		assert.Equal(t, []int{perBatch, perBatch, perBatch}, sizes(tr), "batches of what max_batch_bytes holds")
	})
}

func TestOPAUploadsOverMaxConcurrentRequestsAreAnswered429(t *testing.T) {
	cfg := opaConfig(t) // max_request_body_size 64 KiB
	cfg.OPA.Get().MaxConcurrentRequests = 1
	tr := startReceiver(t, cfg)
	tr.sink.gated()

	// An upload of 39 KB holds its body (in a buffer of 64 KiB) while the pipeline takes it: all one request may.
	first := make(chan int)
	go func() { first <- post(t, opaURL(cfg), upload("first", 200), false).StatusCode }()
	<-tr.sink.entered

	resp := post(t, opaURL(cfg), upload("second", 1), false)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"), "OPA retries, after a second")
	assert.Equal(t, int64(1), tr.rejectedCount("opa", "busy"))

	tr.sink.gate <- struct{}{}
	assert.Equal(t, http.StatusOK, <-first)
	go func() { tr.sink.gate <- struct{}{} }()
	resp = post(t, opaURL(cfg), upload("third", 1), false)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the memory is free again")
	got := tr.waitDecisions(201, 5*time.Second)
	assert.Equal(t, "third-0", got[200].ID)
}

// TestBatchesAreBuiltWithinMaxConcurrentBatches: uploads and stream connections together never build and hand
// over more than max_concurrent_batches batches at once.
func TestBatchesAreBuiltWithinMaxConcurrentBatches(t *testing.T) {
	cfg, path := unixConfig(t)
	o := opaConfig(t).OPA
	o.Get().MaxConcurrentRequests = 4
	cfg.OPA = o
	cfg.MaxConcurrentBatches = 2
	tr := startReceiver(t, cfg)
	tr.sink.gated()

	const uploads, streams = 4, 4
	var wg sync.WaitGroup
	for i := range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.Equal(t, http.StatusOK, post(t, opaURL(cfg), upload(fmt.Sprintf("u%d", i), 3), true).StatusCode)
		}()
	}
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("unix", path)
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			_, err = c.Write([]byte(gatekeeperLine(i) + "\n"))
			assert.NoError(t, err)
		}()
	}
	// Each batch is let through once another is waiting inside: with no bound, the others would pile in.
	for range uploads + streams {
		<-tr.sink.entered
		tr.sink.gate <- struct{}{}
	}
	wg.Wait()
	tr.waitDecisions(uploads*3+streams, 5*time.Second)
	assert.LessOrEqual(t, tr.sink.maxInflight.Load(), int64(2))
}

// TestOPATrickledBodyIsCutOff: a body that arrives a little at a time is cut off at read_timeout, and holds
// no more than what it sent meanwhile: uploads go on beside it.
func TestOPATrickledBodyIsCutOff(t *testing.T) {
	cfg := opaConfig(t)
	o := cfg.OPA.Get()
	o.ServerConfig.ReadTimeout, o.MaxConcurrentRequests = time.Second, 1
	tr := startReceiver(t, cfg)

	c, err := net.Dial("tcp", o.ServerConfig.NetAddr.Endpoint)
	require.NoError(t, err)
	defer c.Close()
	// A body announced as 60,000 bytes, of which 10 arrive.
	_, err = fmt.Fprintf(c, "POST /logs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n[{\"a\":1},")
	require.NoError(t, err)

	resp := post(t, opaURL(cfg), upload("beside", 1), true)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "an upload beside the trickled one")

	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "the server answers before the client's deadline")
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.Equal(t, int64(1), tr.rejectedCount("opa", "timeout"))
	assert.Equal(t, []string{"beside-0"}, ids(tr.waitDecisions(1, 5*time.Second)))
}

func TestBodyPoolReservesBeforeTheBodyGrows(t *testing.T) {
	p := bodyPool{limit: 100 << 10}
	body, reserved, err := p.read(strings.NewReader(strings.Repeat("x", 70<<10)), 80<<10)
	require.NoError(t, err)
	assert.Len(t, body, 70<<10)
	assert.Equal(t, int64(cap(body)), reserved, "what is reserved is what the buffer holds")
	assert.Equal(t, reserved, p.held.Load())

	_, r2, err := p.read(strings.NewReader(strings.Repeat("y", 40<<10)), 80<<10)
	assert.ErrorIs(t, err, errBodiesFull)
	p.release(r2)
	p.release(reserved)
	assert.Zero(t, p.held.Load())

	_, r3, err := p.read(strings.NewReader(strings.Repeat("z", 80<<10+1)), 80<<10)
	var tooLarge *http.MaxBytesError
	assert.ErrorAs(t, err, &tooLarge)
	p.release(r3)
	body, r4, err := p.read(strings.NewReader(strings.Repeat("z", 80<<10)), 80<<10)
	require.NoError(t, err, "exactly max_request_body_size")
	assert.Len(t, body, 80<<10)
	p.release(r4)
	assert.Zero(t, p.held.Load())
}

// postOn uploads body over the connection c, with token when not empty, and returns the answer's status.
func postOn(t *testing.T, c net.Conn, body []byte, token string) int {
	t.Helper()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	_, err := fmt.Fprintf(c, "POST /logs HTTP/1.1\r\nHost: opa\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", auth, len(body), body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestOPAConnectionsBeyondTheLimitAreClosed: beyond opa::max_connections of connections that uploaded (keep-alive
// ones, each a goroutine and buffers until the idle timeout), one more is closed as it comes and counted;
// uploads go on over the connections held, and over a new one once a place is free.
func TestOPAConnectionsBeyondTheLimitAreClosed(t *testing.T) {
	cfg := opaConfig(t)
	cfg.OPA.Get().MaxConnections = 3
	tr := startReceiver(t, cfg)
	addr := cfg.OPA.Get().ServerConfig.NetAddr.Endpoint

	var idle []net.Conn
	for i := range 3 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		require.Equal(t, http.StatusOK, postOn(t, c, upload(fmt.Sprintf("first-%d", i), 1), ""))
		idle = append(idle, c)
	}
	extra, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer extra.Close()
	require.NoError(t, extra.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = extra.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "a connection beyond the limit is closed at once")
	require.Eventually(t, func() bool { return tr.rejectedCount("opa", "too_many_connections") == 1 }, 5*time.Second, 10*time.Millisecond)

	// One of the held connections uploads.
	assert.Equal(t, http.StatusOK, postOn(t, idle[0], upload("held", 2), ""))

	// A closed one frees its place for a new client.
	require.NoError(t, idle[1].Close())
	require.Eventually(t, func() bool {
		resp, err := http.Post(opaURL(cfg), "application/json", strings.NewReader(string(upload("new", 1))))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	tr.waitDecisions(6, 5*time.Second)
	assert.Zero(t, tr.rejectedCount("opa", "evicted"))
}
