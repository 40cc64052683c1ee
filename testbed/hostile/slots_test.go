// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit/connlimittest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// The attacks of issue 29 on connection slots: connections that never authenticate nor send a complete request
// or line, as many as a listener holds, while legitimate clients connect. Before, they kept the legitimate
// clients out: the results server's HTTP listener answered 0 of 30 of them, its gRPC listener 18 of 30, the
// collector's OPA endpoint 0 of 31 uploads carrying the token, its NDJSON socket 0 of 31 producers, and a silent
// NDJSON connection kept its place for idle_timeout (an hour). Now a silent connection gives way to a new one
// (pkg/connlimit), one address holds a bounded share of the silent places, and a silent connection is
// closed after a short deadline.
//
// Each listener is attacked twice: from the legitimate clients' own address (127.0.0.1), with connections
// opened once, as in the issue; and from four other loopback addresses, each holding as many silent connections
// as one address may and dialing again every one the server closes.

// The defaults the attacks fill (results-server/cmd/results-server/limits.go, the receiver's factory.go).
const (
	resultsServerMaxConnections     = 512
	resultsServerHTTPMaxConnections = 128
	opaMaxSilentPerSource           = 64
	ndjsonMaxConnections            = defaultMaxConnections
)

// attackerAddrs are the loopback addresses of the redialing attacker: hosts other than the legitimate clients'.
var attackerAddrs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}

// legitAddr is where the legitimate clients connect from, and the attacker of the attacks.
const legitAddr = "127.0.0.1"

const (
	// floodRedialPause is how soon the attacker dials again a connection the server closed.
	floodRedialPause = 20 * time.Millisecond
	// floodMaxDials bounds the connections one attack opens.
	floodMaxDials = 200_000
	// oneShotTimeout is how long a legitimate client waits for its one attempt.
	oneShotTimeout = 5 * time.Second
)

// firstDeadline is the silent connections' deadline the attacks run with: short at short scale (flags and
// config overlays set it), the default at full scale.
func firstDeadline(def time.Duration) time.Duration { return pick(2*time.Second, def) }

// silentFlood holds connections that send nothing (or a prefix that is no complete request or line).
type silentFlood struct {
	dial   func(from string) (net.Conn, error)
	prefix []byte
	redial bool

	stopping     atomic.Bool
	dialed, open atomic.Int64
	wg           sync.WaitGroup
	mu           sync.Mutex
	conns        map[net.Conn]struct{}
}

// floodSilent opens perSource connections from each of sources with dial. With redial, every connection the
// server closes is dialed again floodRedialPause later, until stopRedialing.
func floodSilent(t *testing.T, sources []string, perSource int, redial bool, prefix []byte, dial func(from string) (net.Conn, error)) *silentFlood {
	f := &silentFlood{dial: dial, prefix: prefix, redial: redial, conns: map[net.Conn]struct{}{}}
	t.Cleanup(f.closeAll)
	for _, src := range sources {
		for range perSource {
			f.wg.Add(1)
			go f.hold(src)
		}
	}
	return f
}

func (f *silentFlood) hold(src string) {
	defer f.wg.Done()
	for !f.stopping.Load() && f.dialed.Load() < floodMaxDials {
		c, err := f.dial(src)
		if err != nil {
			time.Sleep(floodRedialPause)
			continue
		}
		f.dialed.Add(1)
		f.open.Add(1)
		f.mu.Lock()
		f.conns[c] = struct{}{}
		f.mu.Unlock()
		if len(f.prefix) > 0 {
			_, _ = c.Write(f.prefix)
		}
		_, _ = io.Copy(io.Discard, c) // until the server closes it, or closeAll
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		c.Close()
		f.open.Add(-1)
		if !f.redial {
			return
		}
		time.Sleep(floodRedialPause)
	}
}

// stopRedialing lets the connections open stay, and dials no more.
func (f *silentFlood) stopRedialing() { f.stopping.Store(true) }

func (f *silentFlood) closeAll() {
	f.stopping.Store(true)
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// openAtLeast is nil once n connections are open.
func (f *silentFlood) openAtLeast(n int) func() error {
	return func() error {
		if got := f.open.Load(); got < int64(n) {
			return fmt.Errorf("%d of %d attack connections open (%d dialed)", got, n, f.dialed.Load())
		}
		return nil
	}
}

// dialedAtLeast is nil once n connections were dialed.
func (f *silentFlood) dialedAtLeast(n int) func() error {
	return func() error {
		if got := f.dialed.Load(); got < int64(n) {
			return fmt.Errorf("%d of %d attack connections dialed", got, n)
		}
		return nil
	}
}

// allClosed is nil once the server closed every connection (stopRedialing first).
func (f *silentFlood) allClosed() error {
	if n := f.open.Load(); n > 0 {
		return fmt.Errorf("%d silent connections still open", n)
	}
	return nil
}

// legitPace is how legitimate clients come: at at once, a wave every pause.
type legitPace struct {
	at    int
	pause time.Duration
}

// oneShots runs n legitimate clients, each with one attempt on a connection of its own, at pace, and fails the
// test unless every attempt succeeded.
func oneShots(t *testing.T, what string, n int, pace legitPace, attempt func(i int) error) {
	t.Helper()
	var failed []error
	var mu sync.Mutex
	for wave := 0; wave < n; wave += pace.at {
		if wave > 0 {
			time.Sleep(pace.pause)
		}
		var wg sync.WaitGroup
		for i := wave; i < min(wave+pace.at, n); i++ {
			wg.Go(func() {
				if err := attempt(i); err != nil {
					mu.Lock()
					failed = append(failed, fmt.Errorf("%s %d: %w", what, i, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	require.Empty(t, failed, "%d of %d legitimate %s got through", n-len(failed), n, what)
}

// tcpFrom dials addr from a loopback address.
func tcpFrom(addr string) func(from string) (net.Conn, error) {
	return func(from string) (net.Conn, error) { return connlimittest.Dialer(from).Dial("tcp", addr) }
}

// forwardOnce is a collector forwarding one result from legitAddr on a new connection, as the results_grpc
// exporter does after a reconnect: it waits up to oneShotTimeout for a connection and the answer.
func (s *resultsServer) forwardOnce(cluster string, i int) error {
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return connlimittest.Dialer(legitAddr).DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		return err
	}
	defer conn.Close()
	r := policyresult.Result{Cluster: cluster, Source: "kyverno", Policy: "require-labels", Rule: "check",
		Outcome: policyresult.OutcomeFail, State: policyresult.StateNew,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%d", i)}}
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(),
		"authorization", "Bearer "+resultsServerToken), oneShotTimeout)
	defer cancel()
	resp, err := pb.NewResultForwarderClient(conn).Forward(ctx, &pb.ForwardRequest{Results: []*pb.Result{resultsapi.FromResult(&r)}},
		grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	if resp.GetAccepted() != 1 {
		return fmt.Errorf("rejected: %v", resp.GetRejected())
	}
	return nil
}

// slotsAttack runs one attack on a results server listener: flood fills it, 30 legitimate clients (attempt)
// each get through at the first try, then the attacker stops dialing and the server closes every silent
// connection left within the first call deadline.
func (s *resultsServer) slotsAttack(name, listener string, deadline time.Duration, flood func() *silentFlood, attempt func(i int) error) {
	t := s.t
	t.Helper()
	n := pick(30, 300)
	s.attack(name, func() {
		f := flood()
		oneShots(t, "clients", n, legitPace{at: 10}, attempt)
		f.stopRedialing()
		collectortest.Eventually(t, deadline+cutOffMargin, f.allClosed)
	}, func() map[string]float64 {
		evicted := s.metric(silentClosedMetric, fmt.Sprintf(`listener=%q,reason="evicted"`, listener))
		timedOut := s.metric(silentClosedMetric, fmt.Sprintf(`listener=%q,reason="timeout"`, listener))
		require.Positive(t, evicted, "silent connections gave way to legitimate ones")
		require.Positive(t, timedOut, "the silent connections left were closed at the first call deadline")
		return map[string]float64{"evicted": evicted, "timed_out": timedOut, "legit_first_try": float64(n)}
	})
}

// TestSlotsResultsServerGRPC: 512 gRPC connections that never call (--max-connections) kept collectors out;
// now each collector's connection takes a silent one's place and forwards at its first try.
func TestSlotsResultsServerGRPC(t *testing.T) {
	deadline := firstDeadline(server.DefaultFirstCallTimeout)
	s := startResultsServer(t, pick([]string{"--first-call-timeout", "2s"}, nil)...)
	attempt := func(cluster string) func(int) error {
		return func(i int) error { return s.forwardOnce(cluster, i) }
	}
	s.slotsAttack("silent-grpc-one-address", "grpc", deadline, func() *silentFlood {
		f := floodSilent(t, []string{legitAddr}, resultsServerMaxConnections, false, nil, tcpFrom(s.grpc))
		collectortest.Eventually(t, 30*time.Second, f.dialedAtLeast(resultsServerMaxConnections))
		return f
	}, attempt("oneshot-1"))
	s.slotsAttack("silent-grpc-four-addresses", "grpc", deadline, func() *silentFlood {
		per := resultsServerMaxConnections / len(attackerAddrs)
		f := floodSilent(t, attackerAddrs, per, true, nil, tcpFrom(s.grpc))
		// The legitimate forwarder holds a place: the attacker holds the others, and redials what it loses.
		collectortest.Eventually(t, 30*time.Second, f.openAtLeast(resultsServerMaxConnections-8))
		return f
	}, attempt("oneshot-2"))
	for _, cluster := range []string{"oneshot-1", "oneshot-2"} {
		stored, err := s.stored(cluster)
		require.NoError(t, err)
		assert.Equal(t, pick(30, 300), stored, "every result forwarded at the first try is stored (%s)", cluster)
	}
}

// TestSlotsResultsServerHTTP: 128 HTTP connections that never send a request (--http-max-connections) kept
// every fleet view client out; now each client's connection takes a silent one's place.
func TestSlotsResultsServerHTTP(t *testing.T) {
	deadline := firstDeadline(server.DefaultFirstCallTimeout)
	s := startResultsServer(t, pick([]string{"--http-first-request-timeout", "2s"}, nil)...)
	client := &http.Client{Timeout: oneShotTimeout, Transport: bearer{&http.Transport{DisableKeepAlives: true,
		DialContext: connlimittest.Dialer(legitAddr).DialContext}}}
	get := func(int) error {
		resp, err := client.Get("http://" + s.http + "/v1/fleet")
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}
	s.slotsAttack("silent-http-one-address", "http", deadline, func() *silentFlood {
		f := floodSilent(t, []string{legitAddr}, resultsServerHTTPMaxConnections, false, nil, tcpFrom(s.http))
		collectortest.Eventually(t, 30*time.Second, f.dialedAtLeast(resultsServerHTTPMaxConnections))
		return f
	}, get)
	s.slotsAttack("silent-http-four-addresses", "http", deadline, func() *silentFlood {
		per := resultsServerHTTPMaxConnections / len(attackerAddrs)
		f := floodSilent(t, attackerAddrs, per, true, nil, tcpFrom(s.http))
		collectortest.Eventually(t, 30*time.Second, f.openAtLeast(resultsServerHTTPMaxConnections-8))
		return f
	}, get)
}

// collectorSlotsAttack runs one attack on a collector listener within tg.Attack (whose OPA-like client uploads
// throughout): flood fills it, n legitimate producers (attempt, at pace, returning the decision ID it sent) each
// get through at the first try and their decisions are delivered, then the attacker stops dialing and the
// collector closes every silent connection left within deadline.
func (tg *Target) collectorSlotsAttack(name string, deadline time.Duration, timeoutReason string, pace legitPace, flood func() *silentFlood, attempt func(i int) (string, error)) {
	t := tg.t
	t.Helper()
	n := pick(31, 310)
	r := tg.Attack(name, func() map[string]float64 {
		f := flood()
		ids := make([]string, n)
		oneShots(t, "producers", n, pace, func(i int) error {
			var err error
			ids[i], err = attempt(i)
			return err
		})
		tg.WaitDecisions(ids, time.Minute)
		f.stopRedialing()
		tg.WaitBounded(deadline+cutOffMargin, f.allClosed)
		return tg.counted("evicted", timeoutReason, "too_many_connections")
	})
	assert.Positive(t, r.Counted["evicted"], "silent connections gave way to legitimate ones")
	assert.Positive(t, r.Counted[timeoutReason], "the silent connections left were closed at %s", timeoutReason)
}

// TestSlotsOPAEndpoint: 256 silent connections to the DaemonSet's OPA endpoint (opa::max_connections) kept out
// every upload carrying the token; now each upload's connection takes a silent one's place.
func TestSlotsOPAEndpoint(t *testing.T) {
	deadline := firstDeadline(10 * time.Second)
	tg := StartDaemonSet(t, pick(`
receivers:
  decision_logs:
    opa:
      first_request_timeout: 2s
`, ""))
	addr := fmt.Sprintf("127.0.0.1:%d", tg.Ports.OPA)
	client := &http.Client{Timeout: oneShotTimeout, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: connlimittest.Dialer(legitAddr).DialContext}}
	upload := func(prefix string) func(int) (string, error) {
		return func(i int) (string, error) {
			id := fmt.Sprintf("%s-%d", prefix, i)
			req, err := http.NewRequest(http.MethodPost, tg.OPAURL(), bytes.NewReader(gzipped(opaUpload([]string{id}))))
			if err != nil {
				return id, err
			}
			req.Header.Set("Content-Encoding", "gzip")
			req.Header.Set("Authorization", "Bearer "+tg.Token)
			resp, err := client.Do(req)
			if err != nil {
				return id, err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return id, errors.New(resp.Status)
			}
			return id, nil
		}
	}
	tg.collectorSlotsAttack("opa-silent-one-address", deadline, "first_request_timeout", legitPace{at: 10}, func() *silentFlood {
		f := floodSilent(t, []string{legitAddr}, defaultOPAMaxConnections, false, nil, tcpFrom(addr))
		tg.WaitBounded(30*time.Second, f.dialedAtLeast(defaultOPAMaxConnections))
		return f
	}, upload("oneshot-1"))
	tg.collectorSlotsAttack("opa-silent-four-addresses", deadline, "first_request_timeout", legitPace{at: 10}, func() *silentFlood {
		f := floodSilent(t, attackerAddrs, opaMaxSilentPerSource, true, nil, tcpFrom(addr))
		tg.WaitBounded(30*time.Second, f.openAtLeast(defaultOPAMaxConnections-8))
		return f
	}, upload("oneshot-2"))
}

// TestSlotsNDJSONSocket: 16 connections to the NDJSON socket (max_connections) that never send a complete line
// kept every producer out for idle_timeout; now each producer's connection takes a silent one's place, and the
// silent ones are closed at first_line_timeout.
func TestSlotsNDJSONSocket(t *testing.T) {
	deadline := firstDeadline(time.Minute)
	tg := StartDefault(t, pick(`
receivers:
  decision_logs:
    ndjson:
      - transport: unix
        endpoint: ./data/decisions.sock
        socket_mode: "0600"
        first_line_timeout: 2s
`, ""))
	// A producer writes its line and closes without an answer: its connect, write and close are done before the
	// collector accepts it, so producers faster than the collector accepts them are more at once than
	// max_connections, and evict each other's unread lines (before, they were closed on accept), attack or not.
	// They come one every 100 ms.
	producerPace := legitPace{at: 1, pause: 100 * time.Millisecond}
	dial := func(string) (net.Conn, error) { return tg.dialSocket() }
	produce := func(prefix string) func(int) (string, error) {
		return func(i int) (string, error) {
			id := fmt.Sprintf("%s-%d", prefix, i)
			c, err := tg.dialSocket()
			if err != nil {
				return id, err
			}
			defer c.Close()
			_, err = fmt.Fprintf(c, `{"decision_id":%q,"path":"stream/legit","result":true,"timestamp":"2026-11-23T08:00:00Z"}`+"\n", id)
			return id, err
		}
	}
	tg.collectorSlotsAttack("ndjson-silent-once", deadline, "first_line_timeout", producerPace, func() *silentFlood {
		f := floodSilent(t, []string{""}, ndjsonMaxConnections, false, nil, dial)
		tg.WaitBounded(30*time.Second, f.openAtLeast(ndjsonMaxConnections))
		return f
	}, produce("oneshot-1"))
	tg.collectorSlotsAttack("ndjson-silent-redialing", deadline, "first_line_timeout", producerPace, func() *silentFlood {
		f := floodSilent(t, []string{""}, ndjsonMaxConnections, true, nil, dial)
		tg.WaitBounded(30*time.Second, f.openAtLeast(ndjsonMaxConnections-2))
		return f
	}, produce("oneshot-2"))
}
