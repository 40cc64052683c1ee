// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/hostileclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// resultsServerBoundMiB is the peak resident memory bin/results-server, on its default limits with a token,
// must stay under during every attack: its idle footprint is about 20 MiB, a gRPC connection costs about 70
// KiB, and an unauthenticated call nothing that outlives its headers.
const resultsServerBoundMiB = 96

const resultsServerToken = "hostile-results-token-0123456789abcdef"

// resultsServer is bin/results-server (built by make build next to the collector) serving SQLite with one
// token, its gRPC and HTTP listeners on free loopback ports.
type resultsServer struct {
	t          *testing.T
	cmd        *exec.Cmd
	exited     chan struct{}
	out        *lockedBuffer
	grpc, http string
	resultsServerOptions
}

// resultsServerOptions change how the harness starts and reaches the server.
type resultsServerOptions struct {
	// boundMiB replaces resultsServerBoundMiB as the peak an attack must stay under.
	boundMiB float64
	// tls is the clients' configuration when the server serves TLS (its args carry --tls-cert and --tls-key).
	tls *tls.Config
}

func startResultsServer(t *testing.T, args ...string) *resultsServer {
	return startResultsServerWith(t, resultsServerOptions{}, args...)
}

func startResultsServerWith(t *testing.T, o resultsServerOptions, args ...string) *resultsServer {
	bin := filepath.Join(filepath.Dir(collectortest.Binary(t)), "results-server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (run make build)", bin, err)
	}
	dir := t.TempDir()
	tokens := writeFile(t, filepath.Join(dir, "tokens"), resultsServerToken+"\n")
	if o.boundMiB == 0 {
		o.boundMiB = resultsServerBoundMiB
	}
	s := &resultsServer{t: t, exited: make(chan struct{}), out: &lockedBuffer{},
		grpc: fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t)),
		http: fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t)), resultsServerOptions: o}
	s.cmd = exec.Command(bin, append([]string{"serve", "--listen", s.grpc, "--http-listen", s.http,
		"--db", "sqlite://" + filepath.Join(dir, "results.db"), "--token-file", tokens, "--log-level", "warn"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	require.NoError(t, s.cmd.Start())
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	collectortest.Eventually(t, 30*time.Second, func() error {
		select {
		case <-s.exited:
			t.Fatalf("results-server exited:\n%s", s.out.String())
		default:
		}
		_, err := s.legitStored()
		return err
	})
	return s
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}

// httpClient sends the token with every request.
func (s *resultsServer) httpClient() *http.Client {
	tr := http.DefaultTransport
	if s.tls != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = s.tls
		tr = t
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: bearer{tr}}
}

// httpURL is the URL of path on the HTTP listener.
func (s *resultsServer) httpURL(path string) string {
	if s.tls != nil {
		return "https://" + s.http + path
	}
	return "http://" + s.http + path
}

// grpcCreds are the transport credentials of a gRPC client of the server.
func (s *resultsServer) grpcCreds() grpc.DialOption {
	if s.tls != nil {
		return grpc.WithTransportCredentials(credentials.NewTLS(s.tls))
	}
	return grpc.WithTransportCredentials(insecure.NewCredentials())
}

type bearer struct{ http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+resultsServerToken)
	return b.RoundTripper.RoundTrip(r)
}

// legitStored is how many results of the legitimate collector's cluster the fleet view counts.
func (s *resultsServer) legitStored() (int, error) { return s.stored("legit") }

// stored is how many results of cluster the fleet view counts.
func (s *resultsServer) stored(cluster string) (int, error) {
	resp, err := s.httpClient().Get(s.httpURL("/v1/fleet?cluster=" + cluster))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("fleet view: %s", resp.Status)
	}
	var view struct{ Clusters []struct{ Total int } }
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil {
		return 0, err
	}
	if len(view.Clusters) == 0 {
		return 0, nil
	}
	return view.Clusters[0].Total, nil
}

// silentClosedMetric counts the connections the server closed before they showed a client, by listener and reason.
const silentClosedMetric = "results_server_silent_connections_closed_total"

func (s *resultsServer) metric(name, labels string) float64 {
	s.t.Helper()
	text, err := selfmetrics.Scrape(s.httpClient(), s.httpURL("/metrics"))
	require.NoError(s.t, err)
	v, found := selfmetrics.Sum(text, name, labels)
	require.True(s.t, found, "%s{%s} is exposed", name, labels)
	return v
}

// alive fails the test unless the process runs and its HTTP API answers.
func (s *resultsServer) alive() {
	s.t.Helper()
	select {
	case <-s.exited:
		s.t.Fatalf("results-server exited:\n%s", s.out.String())
	default:
	}
	_, err := s.legitStored()
	require.NoError(s.t, err, "the fleet view answers")
}

// legitForwarder is a collector forwarding during an attack: 20 results every 50 ms on its own connection,
// each request retried until the server accepts it, as the results_grpc exporter retries.
type legitForwarder struct {
	stop, done chan struct{}
	once       sync.Once
	mu         sync.Mutex
	accepted   int
	retries    int
	err        error
}

func (s *resultsServer) startLegit() *legitForwarder {
	l := &legitForwarder{stop: make(chan struct{}), done: make(chan struct{})}
	conn, err := grpc.NewClient(s.grpc, s.grpcCreds())
	require.NoError(s.t, err)
	client := pb.NewResultForwarderClient(conn)
	go func() {
		defer close(l.done)
		defer conn.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			req := &pb.ForwardRequest{}
			for i := range 20 {
				r := policyresult.Result{Cluster: "legit", Source: "kyverno", Policy: "require-labels", Rule: "check",
					Outcome: policyresult.OutcomeFail, State: policyresult.StateNew,
					Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%d-%d", n, i)}}
				req.Results = append(req.Results, resultsapi.FromResult(&r))
			}
			for {
				ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(),
					"authorization", "Bearer "+resultsServerToken), 10*time.Second)
				resp, err := client.Forward(ctx, req)
				cancel()
				if err == nil {
					l.mu.Lock()
					if resp.GetAccepted() != 20 && l.err == nil {
						l.err = fmt.Errorf("request %d: %d of 20 accepted, rejected %v", n, resp.GetAccepted(), resp.GetRejected())
					}
					l.accepted += int(resp.GetAccepted())
					l.mu.Unlock()
					break
				}
				l.mu.Lock()
				l.retries++
				l.mu.Unlock()
				select {
				case <-l.stop:
					return // the request in hand was never accepted: it is not owed
				case <-time.After(100 * time.Millisecond):
				}
			}
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

// Stop ends the traffic (once; later calls only report) and returns what the server accepted.
func (l *legitForwarder) Stop() (accepted, retries int, err error) {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted, l.retries, l.err
}

// attack runs flood while a legitimate collector forwards, then checks the results server: it runs and
// answers, its peak resident memory stayed under its bound (resultsServerBoundMiB unless set), every result it accepted from the
// legitimate collector is stored. counted then asserts and returns what the server counted of the attack.
func (s *resultsServer) attack(name string, flood func(), counted func() map[string]float64) {
	s.t.Helper()
	require.NoError(s.t, procsample.ResetPeak(s.cmd.Process.Pid))
	legit := s.startLegit()
	defer func() {
		_, _, _ = legit.Stop() // when flood failed the test
		if mem, err := procsample.ReadMemory(s.cmd.Process.Pid); err == nil && s.t.Failed() {
			s.t.Logf("%s failed; peak RSS of results-server %.0f MiB", name, mem.HWM)
		}
	}()
	flood()
	accepted, retries, err := legit.Stop()
	s.alive()
	mem, merr := procsample.ReadMemory(s.cmd.Process.Pid)
	require.NoError(s.t, merr)
	stored, serr := s.legitStored()
	require.NoError(s.t, serr)
	s.t.Logf("%s: peak RSS %.0f MiB (bound %.0f), %d legitimate results accepted (%d retries), %d stored",
		name, mem.HWM, s.boundMiB, accepted, retries, stored)
	require.NoError(s.t, err, "legitimate requests are accepted whole")
	require.NotZero(s.t, accepted, "legitimate results got through during the attack")
	require.Equal(s.t, accepted, stored, "every accepted legitimate result is stored")
	require.Less(s.t, mem.HWM, s.boundMiB, "%s: peak resident memory of results-server", name)
	c := counted()
	r := attackResult{Attack: name, Config: "results-server", Scale: currentScale().Name, PeakRSSMiB: mem.HWM,
		BoundMiB: s.boundMiB, LegitAccepted: accepted, LegitRefusals: retries, LegitDelivered: stored, Counted: c}
	_, err = procsample.WriteResult(fmt.Sprintf("hostile-%s-%s-%s", name, r.Config, r.Scale), r)
	require.NoError(s.t, err)
}

// TestResultsServerUnauthenticatedFlood: concurrent callers without a token each send 4 MiB requests of empty
// results (two bytes each, a few hundred bytes each once decoded). Before the token was checked on the headers,
// every one was read and decoded before an interceptor refused it: 8 concurrent calls took the server to 3 GiB
// (the issue), 5.8 GiB here.
// Now each is UNAUTHENTICATED before a byte of its message is read.
func TestResultsServerUnauthenticatedFlood(t *testing.T) {
	s := startResultsServer(t)
	callers, rounds := 8, pick(3, 50)
	msg := hostileclient.EmptyResults(server.DefaultMaxRecvMsgSize)
	codesSeen := make(chan codes.Code, callers*rounds)
	s.attack("unauthenticated-4mib", func() {
		var wg sync.WaitGroup
		for range callers {
			conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer conn.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					err := hostileclient.Forward(ctx, conn, msg, &pb.ForwardResponse{})
					cancel()
					codesSeen <- status.Code(err)
				}
			}()
		}
		wg.Wait()
		close(codesSeen)
	}, func() map[string]float64 {
		for c := range codesSeen {
			require.Equal(t, codes.Unauthenticated, c, "every call without a token is refused")
		}
		refused := s.metric("results_server_requests_refused_total", `api="grpc",reason="unauthenticated"`)
		require.Equal(t, float64(callers*rounds), refused, "every refusal is counted")
		return map[string]float64{"requests_refused_unauthenticated": refused}
	})
}

// TestResultsServerStreamsOnOneConnection: one HTTP/2 connection opens streams regardless of the server's
// SETTINGS, each declaring a 4 MiB message and sending 16 KiB of it. Without a token every stream is answered
// UNAUTHENTICATED at once (before, each got a handler that waited for its whole message); with the token, the
// connection holds at most --max-concurrent-streams calls and the server resets the others with
// REFUSED_STREAM (before, there was no limit). The ingest budget is raised so that it admits every call the
// connection holds (its own limit is resultsserver_load_test.go's).
func TestResultsServerStreamsOnOneConnection(t *testing.T) {
	s := startResultsServer(t, "--ingest-budget", strconv.Itoa(2*server.DefaultMaxConcurrentStreams*server.DefaultMaxRecvMsgSize+64<<20))
	unauthenticated, beyond := pick(1000, 20000), pick(100, 2000)
	held := server.DefaultMaxConcurrentStreams
	chunk := make([]byte, 16<<10)
	s.attack("streams", func() {
		c, err := hostileclient.Dial(s.grpc, unauthenticated+beyond+held)
		require.NoError(t, err)
		defer c.Close()
		for range unauthenticated {
			_, err := c.OpenStream("", 4<<20, chunk)
			require.NoError(t, err)
		}
		outcomes, err := c.Wait(unauthenticated, 30*time.Second)
		require.NoError(t, err, "every stream without a token is answered")
		for _, o := range outcomes {
			require.Equal(t, hostileclient.Outcome{StreamID: o.StreamID, GRPCStatus: "16"}, o, "UNAUTHENTICATED")
		}
		for range held + beyond {
			_, err := c.OpenStream("Bearer "+resultsServerToken, 4<<20, chunk)
			require.NoError(t, err)
		}
		outcomes, err = c.Wait(beyond, 30*time.Second)
		require.NoError(t, err, "the streams beyond the limit are refused")
		for _, o := range outcomes {
			require.Equal(t, hostileclient.Outcome{StreamID: o.StreamID, Reset: true, Code: http2.ErrCodeRefusedStream}, o)
		}
	}, func() map[string]float64 {
		refused := s.metric("results_server_requests_refused_total", `api="grpc",reason="unauthenticated"`)
		require.Equal(t, float64(unauthenticated), refused)
		return map[string]float64{"requests_refused_unauthenticated": refused, "streams_refused_by_the_limit": float64(beyond)}
	})
}

// idleFlood opens n connections to addr: those with a request send it, read the answer and stay idle, the
// others send nothing. It returns when the server closed every one (a read ends), or fails the test when one is
// still open after within.
func idleFlood(t *testing.T, addr string, n int, request func(i int) []byte, within time.Duration) (answered int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []int
	for i := range n {
		conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(within))
			r := bufio.NewReader(conn)
			if req := request(i); req != nil {
				if _, err := conn.Write(req); err == nil {
					if resp, err := http.ReadResponse(r, nil); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						mu.Lock()
						answered++
						mu.Unlock()
					}
				}
			}
			// Whatever the server sends (gRPC its SETTINGS), until it closes the connection.
			if _, err := io.Copy(io.Discard, r); err != nil {
				if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
					mu.Lock()
					open = append(open, i)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, len(open), "%d of %d connections not closed by the server after %v (the first: %v)",
		len(open), n, within, open[:min(len(open), 10)])
	return answered
}

// TestResultsServerIdleHTTPConnections: many connections to the fleet view's HTTP listener, half of them
// silent, half idle after one request. The server holds at most --http-max-connections and closes the rest on
// accept; it closes the silent ones after --http-read-header-timeout and the idle ones after
// --http-idle-timeout (before, an idle keep-alive connection stayed open forever, and there was no limit).
// Short scale runs with 2 s timeouts, full scale on the defaults (10 s and 60 s).
func TestResultsServerIdleHTTPConnections(t *testing.T) {
	args := pick([]string{"--http-read-header-timeout", "2s", "--http-idle-timeout", "2s"}, nil)
	within := pick(15*time.Second, 90*time.Second)
	n := pick(400, 5000)
	s := startResultsServer(t, args...)
	request := []byte("GET /v1/fleet HTTP/1.1\r\nHost: results\r\nAuthorization: Bearer " + resultsServerToken + "\r\n\r\n")
	var answered int
	s.attack("idle-http", func() {
		answered = idleFlood(t, s.http, n, func(i int) []byte {
			if i%2 == 0 {
				return request
			}
			return nil
		}, within)
	}, func() map[string]float64 {
		// Beyond --http-max-connections: refused, or (issue 29) a silent one evicted for the new one.
		refused := s.metric("results_server_connections_refused_total", `listener="http"`) +
			s.metric(silentClosedMetric, `listener="http",reason="evicted"`)
		require.Positive(t, refused, "connections beyond --http-max-connections are closed")
		require.LessOrEqual(t, float64(answered), float64(n)-refused)
		return map[string]float64{"connections_refused": refused, "answered": float64(answered)}
	})
}

// TestResultsServerIdleGRPCConnections: many TCP connections to the gRPC listener that never send the HTTP/2
// preface. The server holds at most --max-connections and closes the rest on accept, and closes the silent ones
// after --handshake-timeout (before: no limit, and gRPC's own two minutes). Short scale runs with a 2 s
// timeout, full scale on the default (10 s).
func TestResultsServerIdleGRPCConnections(t *testing.T) {
	args := pick([]string{"--handshake-timeout", "2s"}, nil)
	within := pick(15*time.Second, 30*time.Second)
	n := pick(1000, 5000)
	s := startResultsServer(t, args...)
	s.attack("idle-grpc", func() {
		idleFlood(t, s.grpc, n, func(int) []byte { return nil }, within)
	}, func() map[string]float64 {
		refused := s.metric("results_server_connections_refused_total", `listener="grpc"`) +
			s.metric(silentClosedMetric, `listener="grpc",reason="evicted"`)
		require.Positive(t, refused, "connections beyond --max-connections are closed")
		return map[string]float64{"connections_refused": refused}
	})
}
