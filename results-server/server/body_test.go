// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// nested is depth arrays, one inside the other.
func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

func TestNestsDeeper(t *testing.T) {
	for _, tt := range []struct {
		body  string
		limit int
		want  bool
	}{
		{"", 0, false},
		{`{"a":[1,{"b":2}]}`, 3, false},
		{`{"a":[1,{"b":2}]}`, 2, true},
		{nested(64), 64, false},
		{nested(65), 64, true},
		{`["[[[[", "\"[[[["]`, 1, false},
		{`[[` + strings.Repeat("[1],", 1000) + `1]]`, 3, false},
		{`not json [[[`, 2, true},
		{`]]]][[`, 2, false},
	} {
		assert.Equal(t, tt.want, nestsDeeper(tt.body, tt.limit), "%.40s within %d", tt.body, tt.limit)
	}
}

func TestPrettyBody(t *testing.T) {
	for _, body := range []string{
		`{}`, `[]`, `{"a": [], "b": {}, "c": [1, 2, {"d": "x,y:[z]"}], "e": "\"quoted\" \\"}`,
		" \n{\"trivy\":{\"vulnerabilities\":[{\"id\":\"CVE-2024-3094\",\"score\":10}]}}\n",
		nested(10), `"just a string"`, `12.5`,
	} {
		var want bytes.Buffer
		require.NoError(t, json.Indent(&want, []byte(strings.TrimSpace(body)), "", "  "))
		got, cut := prettyBody(body, 1<<20)
		assert.Equal(t, want.String(), got, body)
		assert.False(t, cut)
	}

	got, cut := prettyBody("not {json", 1<<20)
	assert.Equal(t, "not {json", got)
	assert.False(t, cut)
	got, cut = prettyBody(strings.Repeat("x", 100), 10)
	assert.Equal(t, strings.Repeat("x", 10), got)
	assert.True(t, cut)

	// 20 KB of 9,999 nested arrays indent to 190 MiB: printed up to the limit only.
	got, cut = prettyBody(nested(9999), 64<<10)
	assert.True(t, cut)
	assert.Less(t, len(got), 64<<10+2*9999+1)
	got, cut = prettyBody(`[1, 2]`+strings.Repeat(" ", 100), 4)
	assert.Equal(t, "[\n  ", got, "stops once the output is full")
	assert.True(t, cut)
}

// TestBodyLimits: a body over the bytes or the depth is rejected with the reason and counted; a body that is not
// JSON is stored as it is, as before.
func TestBodyLimits(t *testing.T) {
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/r.db", Ingest: IngestLimits{MaxBodyBytes: 1000, MaxBodyDepth: 8}})
	large := mutate(podA.pb(), func(r *pb.Result) { r.BodyJson = `"` + strings.Repeat("x", 999) + `"` })
	deep := mutate(podB.pb(), func(r *pb.Result) { r.BodyJson = nested(9) })
	atLimits := mutate(with(podA, func(s *spec) { s.name = "at-limits" }).pb(),
		func(r *pb.Result) { r.BodyJson = nested(8) + strings.Repeat(" ", 1000-16) })
	notJSON := mutate(with(podA, func(s *spec) { s.name = "not-json" }).pb(), func(r *pb.Result) { r.BodyJson = "{{{{{{{{{{ oops" })
	resp := forward(t, s, batch(large, deep, atLimits, notJSON))
	assert.Equal(t, uint32(1), resp.GetAccepted())
	assert.Equal(t, []*pb.Rejection{
		{Index: 0, Id: idOf(podA), Reason: "body_json is 1001 bytes, more than this server's limit of 1000"},
		{Index: 1, Id: idOf(podB), Reason: "body_json nests arrays and objects deeper than this server's limit of 8"},
		{Index: 3, Id: notJSON.GetId(), Reason: "body_json nests arrays and objects deeper than this server's limit of 8"},
	}, resp.GetRejected())
	m := metricsText(t, s)
	assert.Contains(t, m, `results_server_results_rejected_total{reason="body_too_large"} 1`)
	assert.Contains(t, m, `results_server_results_rejected_total{reason="body_too_deep"} 2`)
	assert.Contains(t, m, `results_server_results_total{outcome="rejected"} 3`)
}

// TestResultPageBodyBounded: a body stored before the limits (9,999 nested arrays, inserted as an older server
// stored it) renders a page of a few hundred KiB, not 190 MiB; a large body within the limits (1 MiB of arrays
// 60 deep, which would indent to 60 MiB) as well.
func TestResultPageBodyBounded(t *testing.T) {
	s := sqliteServer(t)
	hs := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(hs.Close)
	wide := "[" + strings.Repeat(nested(60)+",", (1<<20)/122-1) + "1]"
	require.False(t, nestsDeeper(wide, DefaultMaxBodyDepth))
	require.LessOrEqual(t, len(wide), DefaultMaxBodyBytes)
	forward(t, s, batch(podA.pb(), mutate(podB.pb(), func(r *pb.Result) { r.BodyJson = wide })))
	_, err := s.store.DB().Exec(`UPDATE results SET body_json = $1 WHERE key = $2`, nested(9999), keyOf(podA))
	require.NoError(t, err)

	for _, key := range []string{keyOf(podA), keyOf(podB)} {
		code, _, page := getPage(t, hs.Client(), hs.URL+"/results/"+key)
		assert.Equal(t, 200, code)
		assert.Less(t, len(page), 2*MaxBodyShown, "the page is bounded")
		assert.True(t, strings.Contains(page, `id="body-cut"`) && strings.Contains(page, `<pre id="body">[`), key)
	}
	_, _, page := getPage(t, hs.Client(), hs.URL+"/results/"+keyOf(podB))
	assert.True(t, strings.Contains(page, "The first 262,144 bytes of the body as printed; it is "+
		formatCount(int64(len(wide)))+" bytes as sent"), "the page says the body is cut")
}
