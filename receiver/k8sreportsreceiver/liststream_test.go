// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"
)

// endlessObject is a list response whose first object never ends, as a broken or hostile server might send.
type endlessObject struct{ written atomic.Int64 }

func (e *endlessObject) ServeHTTP(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	n, _ := rw.Write([]byte(`{"kind":"PolicyReportList","items":[{"metadata":{"name":"a"},"results":[`))
	e.written.Add(int64(n))
	chunk := []byte(strings.Repeat(`{"policy":"p","result":"pass"},`, 1000))
	for e.written.Load() < 4*maxObjectBytes {
		n, err := rw.Write(chunk)
		e.written.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// TestListRefusesAnObjectLongerThanTheBound reads a list from a server whose object never ends: the list fails
// with an error naming the resource and the bound once the object passes maxObjectBytes, having read little
// more than that, instead of buffering the object to the end.
func TestListRefusesAnObjectLongerThanTheBound(t *testing.T) {
	h := &endlessObject{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	clients, err := newAPIClients(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	w := &watcher{gvr: policyReportGVR, client: clients.rest, cfg: fakeConfig()}

	chunks := make(chan listChunk, listChunks)
	go w.readList(context.Background(), chunks)
	c := <-chunks
	require.Error(t, c.err)
	assert.ErrorIs(t, c.err, errObjectTooLarge)
	assert.Contains(t, c.err.Error(), "reading the list of policyreports: items[0]")
	assert.Less(t, h.written.Load(), int64(2*maxObjectBytes), "the receiver read on past the bound")
}

// TestListReadsTheNextPageWhileThisOneIsParsed holds the parsing of the first page and checks that the second
// page is requested meanwhile: the API server produces a page while the receiver parses the previous one.
func TestListReadsTheNextPageWhileThisOneIsParsed(t *testing.T) {
	srv := startFakeServer(t)
	applyPodReports(t, srv, "fail", "r1", "r2", "r3")
	clients, err := newAPIClients(&rest.Config{Host: srv.URL()})
	require.NoError(t, err)
	cfg := fakeConfig()
	cfg.PageSize = 1
	w := &watcher{gvr: policyReportGVR, client: clients.rest, cfg: cfg}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chunks := make(chan listChunk, listChunks)
	go w.readList(ctx, chunks)
	first := <-chunks // nothing more is taken from chunks until the later pages were requested
	require.Len(t, first.items, 1)
	srv.WaitRequest(t, func(r fakeapiserver.Request) bool {
		return r.Verb == "list" && r.GVR == policyReportGVR && r.Query.Get("continue") != ""
	})
}
