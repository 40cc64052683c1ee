// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/internal/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/pgtest"
	"github.com/otelcol-policy/otelcol-policy/internal/resultsapi"
	"github.com/otelcol-policy/otelcol-policy/internal/resultsserver"
	"github.com/otelcol-policy/otelcol-policy/internal/resultsserver/attacktest"
	"github.com/otelcol-policy/otelcol-policy/internal/resultsserver/testcerts"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// The results server under load from clients that may send and query, on its default limits: big requests at
// once, many expensive fleet queries at once, many streams on one connection, a fleet of 100,000 clusters, and
// sign-in guessing. Every attack keeps the server under resultsServerLoadBoundMiB with the harness's legitimate
// collector forwarding throughout; what is beyond a limit is refused with a retry hint and counted.

// resultsServerLoadBoundMiB is the peak resident memory the server must stay under during these attacks: its
// ingest budget (64 MiB of requests being decoded and stored) and its query slots (4 fleet queries with a
// 2 MiB page cache each) on top of its idle footprint, with the garbage collector's headroom.
const resultsServerLoadBoundMiB = 256

var loadOptions = resultsServerOptions{boundMiB: resultsServerLoadBoundMiB}

// eachStore runs f against servers on SQLite and on PostgreSQL; start starts one with extra serve flags.
func eachStore(t *testing.T, f func(t *testing.T, start func(args ...string) *resultsServer)) {
	t.Run("sqlite", func(t *testing.T) {
		f(t, func(args ...string) *resultsServer { return startResultsServerWith(t, loadOptions, args...) })
	})
	t.Run("postgres", func(t *testing.T) {
		pg := pgtest.Start(t)
		var n atomic.Int64
		f(t, func(args ...string) *resultsServer {
			db := pg.CreateDB(fmt.Sprintf("results%d", n.Add(1)))
			return startResultsServerWith(t, loadOptions, append([]string{"--db", db}, args...)...)
		})
	})
}

// loadResult is result i of a seeded fleet: failing, in cluster, observed daysAgo days before now (so that the
// trend has history on every day).
func loadResult(cluster string, i, daysAgo int, message string) *pb.Result {
	r := policyresult.Result{Cluster: cluster, Source: "kyverno", Policy: fmt.Sprintf("policy-%d", i%50), Rule: "check",
		Outcome: policyresult.OutcomeFail, Severity: policyresult.SeverityHigh, State: policyresult.StateNew,
		Message: message, Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod",
			Namespace: fmt.Sprintf("ns-%d", i%100), Name: fmt.Sprintf("pod-%d", i)}}
	p := resultsapi.FromResult(&r)
	p.ObservedTimestamp = timestamppb.New(time.Now().Add(-time.Duration(daysAgo) * 24 * time.Hour))
	return p
}

// withToken is a call context carrying the server's token.
func withToken(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+resultsServerToken)
}

// seed stores n results in clusters clusters (result i in cluster i % clusters), in requests of 10,000.
func (s *resultsServer) seed(n, clusters int) {
	s.t.Helper()
	conn, err := grpc.NewClient(s.grpc, s.grpcCreds())
	require.NoError(s.t, err)
	defer conn.Close()
	client := pb.NewResultForwarderClient(conn)
	for start := 0; start < n; start += 10000 {
		req := &pb.ForwardRequest{}
		for i := start; i < min(n, start+10000); i++ {
			req.Results = append(req.Results, loadResult(fmt.Sprintf("cluster-%06d", i%clusters), i, i%366,
				fmt.Sprintf("label team is missing on pod %d", i)))
		}
		ctx, cancel := context.WithTimeout(withToken(context.Background()), 2*time.Minute)
		resp, err := client.Forward(ctx, req)
		cancel()
		require.NoError(s.t, err)
		require.Equal(s.t, len(req.Results), int(resp.GetAccepted()), "seeded results are accepted")
	}
}

// largeRequest is an encoded request of n valid results filling at most size bytes with their messages.
func largeRequest(t *testing.T, n, size int) []byte {
	pad := size/n - 400
	for ; ; pad -= 16 {
		req := &pb.ForwardRequest{}
		for i := range n {
			req.Results = append(req.Results, loadResult("large", i, 0, strings.Repeat("m", pad)))
		}
		if proto.Size(req) <= size {
			b, err := proto.Marshal(req)
			require.NoError(t, err)
			return b
		}
	}
}

// retryDelay is the RetryInfo of a refusal, 0 without one.
func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// TestResultsServerConcurrentLargeRequests: 4 connections each with 32 calls of 4 MiB requests at once, as a
// token holder (or an exporter with a large queue after an outage) sends them, retried as the results_grpc
// exporter retries: after the server's RetryInfo on RESOURCE_EXHAUSTED. Before the ingest budget every call was
// read, decoded and held at once: 3.1 GiB and 50 of 128 calls past their deadline (the issue; 554 MiB with 32
// calls at the short scale). Now the calls beyond the budget are refused at once with a retry hint; each request
// is stored once it gets its turn, and none runs out of time.
func TestResultsServerConcurrentLargeRequests(t *testing.T) {
	conns, perConn := 4, pick(8, 32)
	n := pick(1000, 10000)
	msg := largeRequest(t, n, resultsserver.DefaultMaxRecvMsgSize-64<<10)
	eachStore(t, func(t *testing.T, start func(args ...string) *resultsServer) {
		s := start()
		var stored, busy atomic.Int64
		errs := make(chan error, conns*perConn)
		s.attack("large-requests", func() {
			var wg sync.WaitGroup
			for range conns {
				conn, err := grpc.NewClient(s.grpc, s.grpcCreds())
				require.NoError(t, err)
				defer conn.Close()
				for range perConn {
					wg.Go(func() {
						if err := forwardRetrying(conn, msg, n, &busy); err != nil {
							errs <- err
							return
						}
						stored.Add(1)
					})
				}
			}
			wg.Wait()
			close(errs)
		}, func() map[string]float64 {
			for err := range errs {
				t.Error(err)
			}
			require.Equal(t, int64(conns*perConn), stored.Load(), "every request is stored in the end")
			refused := s.metric("results_server_requests_refused_total", `api="grpc",reason="busy"`)
			require.GreaterOrEqual(t, refused, float64(busy.Load()), "every refusal is counted (the legitimate collector's too)")
			return map[string]float64{"requests_stored": float64(stored.Load()), "requests_refused_busy": refused}
		})
	})
}

// forwardRetrying sends msg until it is stored: a RESOURCE_EXHAUSTED with a retry hint is retried after the
// hint (counted in busy); any other error, or a refusal without a hint, ends it.
func forwardRetrying(conn *grpc.ClientConn, msg []byte, n int, busy *atomic.Int64) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(withToken(context.Background()), time.Minute)
		var resp pb.ForwardResponse
		err := attacktest.Forward(ctx, conn, msg, &resp)
		cancel()
		switch {
		case err == nil && int(resp.GetAccepted()) == n:
			return nil
		case err == nil:
			return fmt.Errorf("%d of %d results accepted: %v", resp.GetAccepted(), n, resp.GetRejected())
		case status.Code(err) != codes.ResourceExhausted || retryDelay(err) <= 0:
			return fmt.Errorf("want OK, or RESOURCE_EXHAUSTED with a retry hint: %w", err)
		case time.Now().After(deadline):
			return fmt.Errorf("still refused after 3 minutes: %w", err)
		}
		busy.Add(1)
		time.Sleep(retryDelay(err))
	}
}

// TestResultsServerStalledCalls: a token holder opens calls on a few connections, each declaring a 4 MiB
// message and sending 16 KiB of it, and stalls: each holds its admission to the ingest budget until
// --request-timeout. A token is admitted up to half the budget, so the rest of the calls are
// RESOURCE_EXHAUSTED at once and a collector with another token keeps storing meanwhile.
func TestResultsServerStalledCalls(t *testing.T) {
	const attacker = "hostile-stalling-token-0123456789abcdef"
	tokens := writeFile(t, filepath.Join(t.TempDir(), "tokens"), resultsServerToken+"\n"+attacker+"\n")
	s := startResultsServerWith(t, loadOptions, "--token-file", tokens)
	conns, perConn := 4, int(resultsserver.DefaultMaxConcurrentStreams)
	admitted := int(resultsserver.DefaultIngestBudget / 2 / resultsserver.DefaultMaxRecvMsgSize)
	chunk := make([]byte, 16<<10)
	var exhausted int
	s.attack("stalled-calls", func() {
		var open []*attacktest.Conn
		for range conns {
			c, err := attacktest.Dial(s.grpc, perConn)
			require.NoError(t, err)
			defer c.Close()
			for range perConn {
				_, err := c.OpenStream("Bearer "+attacker, 4<<20, chunk)
				require.NoError(t, err)
			}
			open = append(open, c)
		}
		// Every call beyond the admitted ones is refused at once.
		want := conns*perConn - admitted
		collectortest.Eventually(t, 10*time.Second, func() error {
			for _, c := range open {
				for len(c.Outcomes()) > 0 {
					o := <-c.Outcomes()
					require.Equal(t, attacktest.Outcome{StreamID: o.StreamID, GRPCStatus: "8"}, o, "RESOURCE_EXHAUSTED")
					exhausted++
				}
			}
			if exhausted < want {
				return fmt.Errorf("%d of %d calls refused", exhausted, want)
			}
			return nil
		})
		require.Equal(t, want, exhausted, "the calls beyond half the budget are refused, the others held")
		// The legitimate collector stores meanwhile.
		before, err := s.legitStored()
		require.NoError(t, err)
		collectortest.Eventually(t, 30*time.Second, func() error {
			n, err := s.legitStored()
			if err == nil && n < before+200 {
				err = fmt.Errorf("%d results stored during the stall", n-before)
			}
			return err
		})
	}, func() map[string]float64 {
		refused := s.metric("results_server_requests_refused_total", `api="grpc",reason="busy"`)
		require.GreaterOrEqual(t, refused, float64(exhausted))
		return map[string]float64{"calls_stalled": float64(admitted), "calls_refused_busy": float64(exhausted)}
	})
}

// httpOutcomes counts the answers of concurrent HTTP requests: by status code, and the 503s without a
// Retry-After.
type httpOutcomes struct {
	mu        sync.Mutex
	codes     map[int]int
	noRetry   int
	maxBytes  int
	transport []error
}

func (o *httpOutcomes) add(code int, retryAfter string, size int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.transport = append(o.transport, err)
		return
	}
	if o.codes == nil {
		o.codes = map[int]int{}
	}
	o.codes[code]++
	if code == http.StatusServiceUnavailable && retryAfter == "" {
		o.noRetry++
	}
	o.maxBytes = max(o.maxBytes, size)
}

// concurrentGets sends n GETs of the paths (in turn) at once, each on its own connection.
func (s *resultsServer) concurrentGets(n int, paths ...string) *httpOutcomes {
	out := &httpOutcomes{}
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			client := &http.Client{Timeout: 2 * time.Minute, Transport: bearer{&http.Transport{TLSClientConfig: s.tls}}}
			defer client.CloseIdleConnections()
			<-startGate
			resp, err := client.Get(s.httpURL(paths[i%len(paths)]))
			if err != nil {
				out.add(0, "", 0, err)
				return
			}
			defer resp.Body.Close()
			b, err := io.Copy(io.Discard, resp.Body)
			out.add(resp.StatusCode, resp.Header.Get("Retry-After"), int(b), err)
		})
	}
	close(startGate)
	wg.Wait()
	return out
}

// check asserts that every request was answered 200 or 503 with Retry-After, that some were refused beyond the
// limit and that the refusals were counted.
func (o *httpOutcomes) check(t *testing.T, s *resultsServer, before float64) map[string]float64 {
	t.Helper()
	require.Empty(t, o.transport, "every request is answered")
	ok, refused := o.codes[http.StatusOK], o.codes[http.StatusServiceUnavailable]
	assert.Zero(t, o.otherCodes(), "only 200 and 503: %v", o.codes)
	assert.Zero(t, o.noRetry, "every 503 has a Retry-After")
	assert.Positive(t, ok, "queries within the limit are answered")
	assert.Positive(t, refused, "queries beyond the limit are refused")
	counted := s.metric("results_server_requests_refused_total", `api="http",reason="busy"`) - before
	assert.Equal(t, float64(refused), counted, "every refusal is counted")
	return map[string]float64{"answered": float64(ok), "refused_busy": float64(refused)}
}

func (o *httpOutcomes) otherCodes() int {
	n := 0
	for c, k := range o.codes {
		if c != http.StatusOK && c != http.StatusServiceUnavailable {
			n += k
		}
	}
	return n
}

// queueWait makes the short scale's queries refused as soon as every query slot is taken, so that a few dozen
// concurrent queries on a small fleet show the limit (the default waits 1 s for a slot, which they would get).
var queueWait = pick([]string{"--query-queue-wait", "1ms"}, nil)

// TestResultsServerConcurrentQueries: many text searches (matching nothing, so every failing result is read)
// and many year-long trends at once. Before the limit every query had its own database connection with a
// 32 MiB page cache: at 200,000 results 32 searches took 2.0 GiB, 100 passed 4 GiB in 8.7 s, 32 trends 2.4 GiB
// (the issue). Now --max-concurrent-queries run at once and the others are 503 with Retry-After.
func TestResultsServerConcurrentQueries(t *testing.T) {
	n, concurrent := pick(20000, 200000), pick(32, 100)
	eachStore(t, func(t *testing.T, start func(args ...string) *resultsServer) {
		s := start(queueWait...)
		s.seed(n, 20)
		var searches, trends *httpOutcomes
		s.attack("text-search", func() {
			searches = s.concurrentGets(concurrent, "/v1/fleet/failing?q=absent-needle&limit=10000", "/results?q=absent-needle&size=500")
		}, func() map[string]float64 { return searches.check(t, s, 0) })
		before := s.metric("results_server_requests_refused_total", `api="http",reason="busy"`)
		s.attack("trend-366-days", func() {
			trends = s.concurrentGets(concurrent, "/trend?days=366")
		}, func() map[string]float64 { return trends.check(t, s, before) })
	})
}

// TestResultsServerHTTP2StreamsOnOneTLSConnection: one TLS connection to the fleet view opens 200 streams of
// text searches at once, ignoring the server's SETTINGS. Before, Go's default of 250 streams per connection let
// them all run: past 4 GiB in 9 s (the issue). Now the server advertises --http-max-concurrent-streams (16) and
// resets the streams that arrive while it is full; of those it serves, the queries beyond --max-concurrent-queries
// are 503.
func TestResultsServerHTTP2StreamsOnOneTLSConnection(t *testing.T) {
	certs := testcerts.New(t)
	files := certs.Write(t, t.TempDir())
	client := certs.ClientTLS(t, false)
	s := startResultsServerWith(t, resultsServerOptions{boundMiB: resultsServerLoadBoundMiB, tls: client},
		append([]string{"--tls-cert", files.ServerCert, "--tls-key", files.ServerKey}, queueWait...)...)
	s.seed(pick(20000, 200000), 20)
	const streams = 200
	var got h2Outcomes
	s.attack("h2-streams-one-connection", func() {
		got = h2Flood(t, s.http, client, streams, "/v1/fleet/failing?q=absent-needle&limit=10000")
	}, func() map[string]float64 {
		assert.Equal(t, uint32(16), got.maxStreams, "the server advertises its stream limit")
		assert.Equal(t, streams, got.reset+got.codes[200]+got.codes[503], "every stream is reset, answered or refused: %+v", got)
		// A stream that arrives after an earlier one ended finds a free slot, so how many are reset depends on
		// how fast the served ones end (172 of 200 on a fast machine); with Go's default of 250 none would be.
		assert.Positive(t, got.reset, "the streams beyond the limit are reset")
		assert.Positive(t, got.codes[200], "streams within the limit are served")
		return map[string]float64{"streams_reset": float64(got.reset), "answered": float64(got.codes[200]),
			"refused_busy": float64(got.codes[503])}
	})
}

// h2Outcomes is how the server ended the streams of h2Flood.
type h2Outcomes struct {
	maxStreams uint32
	reset      int
	codes      map[int]int
}

// h2Flood opens n GET streams of path at once on one TLS connection, ignoring the server's
// SETTINGS_MAX_CONCURRENT_STREAMS, reads every response (granting flow control as a client does) and reports how
// each ended.
func h2Flood(t *testing.T, addr string, cfg *tls.Config, n int, path string) h2Outcomes {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	require.NoError(t, err)
	defer conn.Close()
	require.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol)
	require.NoError(t, conn.SetDeadline(time.Now().Add(3*time.Minute)))
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	require.NoError(t, fr.WriteSettings())

	out := h2Outcomes{codes: map[int]int{}}
	// The server's first frame is its SETTINGS; the streams are opened before acknowledging it, as a client
	// racing the server does.
	f, err := fr.ReadFrame()
	require.NoError(t, err)
	settings, ok := f.(*http2.SettingsFrame)
	require.True(t, ok, "the server starts with SETTINGS, not %v", f)
	out.maxStreams, _ = settings.Value(http2.SettingMaxConcurrentStreams)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for i := range n {
		hbuf.Reset()
		for _, hf := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", path}, {":authority", addr},
			{"authorization", "Bearer " + resultsServerToken}} {
			require.NoError(t, enc.WriteField(hpack.HeaderField{Name: hf[0], Value: hf[1]}))
		}
		require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hbuf.Bytes(),
			EndHeaders: true, EndStream: true}))
	}
	require.NoError(t, fr.WriteSettingsAck())
	status := map[uint32]int{}
	for ended := 0; ended < n; {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "after %d of %d streams ended", ended, n)
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			code, _ := strconv.Atoi(f.PseudoValue("status"))
			status[f.StreamID] = code
			if f.StreamEnded() {
				out.codes[code]++
				ended++
			}
		case *http2.DataFrame:
			// Flow control counts the whole payload, padding included.
			if l := f.Length; l > 0 {
				require.NoError(t, fr.WriteWindowUpdate(0, l))
				if !f.StreamEnded() {
					require.NoError(t, fr.WriteWindowUpdate(f.StreamID, l))
				}
			}
			if f.StreamEnded() {
				out.codes[status[f.StreamID]]++
				ended++
			}
		case *http2.RSTStreamFrame:
			out.reset++
			ended++
		case *http2.PingFrame:
			if !f.IsAck() {
				require.NoError(t, fr.WritePing(true, f.Data))
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v after %d of %d streams: %s", f.ErrCode, ended, n, f.DebugData())
		}
	}
	return out
}

// maxPageBytes is what every page of a fleet of 100,000 clusters must stay under.
const maxPageBytes = 1 << 20

// TestResultsServerPagesOfManyClusters: 100,000 clusters of one result each (10,000 at the short scale), then
// every page of the fleet view, several at once. Before, every page held a row, a column or a chart bar per cluster:
// /policies 519 MiB, / 87 MiB, /trend 102 MiB at 1.9-2.2 GiB (the issue). Now each shows the clusters with the
// most failing results, a page of them at a time, and says how many more there are.
func TestResultsServerPagesOfManyClusters(t *testing.T) {
	clusters := pick(10000, 100000)
	pages := []string{"/", "/?cpage=2", "/policies", "/policies?differs=true", "/namespaces", "/trend", "/trend?days=366",
		"/results", "/v1/fleet"}
	eachStore(t, func(t *testing.T, start func(args ...string) *resultsServer) {
		// The fleet of a token that may write that many clusters (a gateway's; TestResultsServerManyClusters is
		// one token past its quota): the seeded clusters and the legitimate collector's.
		s := start("--max-clusters-per-token", strconv.Itoa(clusters+1))
		s.seed(clusters, clusters)
		sizes := map[string]int{}
		s.attack("many-clusters-pages", func() {
			for _, p := range pages {
				got := s.concurrentGets(4, p)
				require.Empty(t, got.transport, p)
				require.Equal(t, map[int]int{http.StatusOK: 4}, got.codes, p)
				sizes[p] = got.maxBytes
			}
		}, func() map[string]float64 {
			out := map[string]float64{}
			for p, n := range sizes {
				t.Logf("%s: %d bytes", p, n)
				assert.Less(t, n, maxPageBytes, "%s is bounded whatever the number of clusters", p)
				out["bytes "+p] = float64(n)
			}
			// The legitimate collector's cluster is one more.
			more := fmt.Sprintf("%s more clusters", formatThousands(clusters+1-resultsserver.ClustersShown))
			assert.True(t, strings.Contains(s.get("/"), more), "the overview says %q", more)
			return out
		})
	})
}

// get returns the body of a page, which must be 200.
func (s *resultsServer) get(path string) string {
	s.t.Helper()
	resp, err := s.httpClient().Get(s.httpURL(path))
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	require.Equal(s.t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
	return string(b)
}

func formatThousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestResultsServerSignInGuessing: one address posts wrong tokens to the login page as fast as it can. Before,
// nothing limited it (3,860 guesses/s, the issue). Now an address has --auth-failures-per-minute failed
// attempts (10, at once or over a minute), then 429 with Retry-After without its token being checked; a person
// at another address signs in meanwhile.
func TestResultsServerSignInGuessing(t *testing.T) {
	s := startResultsServerWith(t, loadOptions)
	duration := pick(3*time.Second, 20*time.Second)
	var checked, limited, noRetry int
	s.attack("sign-in-guessing", func() {
		// Not from 127.0.0.1, where the harness checks the fleet view with the token.
		guesser := loginClient("127.0.0.3")
		stop := time.Now().Add(duration)
		var signedIn *http.Response
		for i := 0; time.Now().Before(stop); i++ {
			if i == 100 {
				signedIn = postLogin(t, loginClient("127.0.0.2"), s, resultsServerToken)
			}
			resp := postLogin(t, guesser, s, fmt.Sprintf("guess-%032d", i))
			switch resp.StatusCode {
			case http.StatusUnauthorized:
				checked++
			case http.StatusTooManyRequests:
				limited++
				if resp.Header.Get("Retry-After") == "" {
					noRetry++
				}
			default:
				t.Fatalf("guess %d: %s", i, resp.Status)
			}
		}
		require.NotNil(t, signedIn, "the legitimate sign-in ran")
		require.Equal(t, http.StatusSeeOther, signedIn.StatusCode, "a person at another address signs in")
		require.NotEmpty(t, signedIn.Cookies(), "and gets the cookie")
	}, func() map[string]float64 {
		t.Logf("%d guesses checked, %d refused in %v", checked, limited, duration)
		// 10 at once, then one every 6 s.
		assert.LessOrEqual(t, checked, 10+int(duration/(6*time.Second))+1, "guesses checked")
		assert.Positive(t, limited, "guesses beyond the limit are refused")
		assert.Zero(t, noRetry, "every 429 has a Retry-After")
		counted := s.metric("results_server_requests_refused_total", `api="http",reason="auth_rate"`)
		assert.Equal(t, float64(limited), counted)
		return map[string]float64{"guesses_checked": float64(checked), "guesses_refused": float64(limited)}
	})
}

// loginClient posts from the loopback address ip and does not follow redirects.
func loginClient(ip string) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func postLogin(t *testing.T, c *http.Client, s *resultsServer, token string) *http.Response {
	t.Helper()
	resp, err := c.PostForm(s.httpURL("/login"), url.Values{"token": {token}, "next": {"/"}})
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
