// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// fleetInputs are the results of two clusters the fleet tests forward: east carries its cluster on every
// result, west's last result gets it from extra_metadata.
var fleetInputs = []spec{
	{cluster: "east", policy: "require-labels", namespace: "shop", name: "cart", outcome: policyresult.OutcomeFail, severity: policyresult.SeverityHigh, message: "label team missing", observed: 1},
	{cluster: "east", policy: "require-labels", namespace: "shop", name: "web", outcome: policyresult.OutcomePass, observed: 1},
	{cluster: "east", policy: "disallow-latest", namespace: "shop", name: "cart", outcome: policyresult.OutcomeWarn, severity: policyresult.SeverityMedium, observed: 1},
	{cluster: "east", policy: "disallow-latest", namespace: "billing", name: "api", outcome: policyresult.OutcomeError, message: "policy evaluation failed", observed: 1},
	{cluster: "east", policy: "require-labels", namespace: "billing", name: "api", outcome: policyresult.OutcomeFail, state: policyresult.StateResolved, observed: 1},
	{cluster: "west", policy: "require-labels", namespace: "shop", name: "cart", outcome: policyresult.OutcomeSkip, observed: 1},
	{cluster: "west", source: "trivy", policy: "CVE-2026-1234", rule: "openssl", namespace: "shop", name: "cart", outcome: policyresult.OutcomeFail, severity: policyresult.SeverityCritical, message: "openssl 3.0.1 is vulnerable", observed: 1},
	{policy: "require-labels", namespace: "default", name: "db", outcome: policyresult.OutcomeFail, severity: policyresult.SeverityLow, message: "label team missing", observed: 1},
}

func fleetServer(t *testing.T, dsn string) *Server {
	t.Helper()
	s := open(t, dsn)
	s.now = func() time.Time { return t0.Add(time.Minute) }
	var east, west []*pb.Result
	for _, sp := range fleetInputs {
		if sp.cluster == "east" {
			east = append(east, sp.pb())
		} else {
			west = append(west, sp.pb())
		}
	}
	require.Equal(t, uint32(5), forward(t, s, batch(east...)).GetAccepted())
	require.Equal(t, uint32(3), forward(t, s, &pb.ForwardRequest{Results: west,
		ExtraMetadata: map[string]string{policyresult.AttrClusterName: "west"}}).GetAccepted())
	return s
}

func TestFleet(t *testing.T) {
	// name identifies a failing result by cluster/namespace/name/policy.
	name := func(r store.FailingResult) string {
		return r.Cluster + "/" + r.Resource.Namespace + "/" + r.Resource.Name + "/" + r.Policy
	}
	tests := []struct {
		filter    store.Filter
		clusters  []store.ClusterCounts
		policies  []store.PolicyCounts
		failing   []string
		truncated bool
	}{{
		filter: store.Filter{},
		clusters: []store.ClusterCounts{
			{Cluster: "east", Counts: store.Counts{Pass: 1, Fail: 1, Warn: 1, Error: 1, Total: 4}},
			{Cluster: "west", Counts: store.Counts{Fail: 2, Skip: 1, Total: 3}},
		},
		policies: []store.PolicyCounts{
			{Cluster: "east", Source: "kyverno", Policy: "disallow-latest", Counts: store.Counts{Warn: 1, Error: 1, Total: 2}},
			{Cluster: "east", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Pass: 1, Fail: 1, Total: 2}},
			{Cluster: "west", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Fail: 1, Skip: 1, Total: 2}},
			{Cluster: "west", Source: "trivy", Policy: "CVE-2026-1234", Counts: store.Counts{Fail: 1, Total: 1}},
		},
		failing: []string{"east/billing/api/disallow-latest", "east/shop/cart/require-labels",
			"west/default/db/require-labels", "west/shop/cart/CVE-2026-1234"},
	}, {
		filter:   store.Filter{Cluster: "west", Namespace: "shop"},
		clusters: []store.ClusterCounts{{Cluster: "west", Counts: store.Counts{Fail: 1, Skip: 1, Total: 2}}},
		policies: []store.PolicyCounts{
			{Cluster: "west", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Skip: 1, Total: 1}},
			{Cluster: "west", Source: "trivy", Policy: "CVE-2026-1234", Counts: store.Counts{Fail: 1, Total: 1}},
		},
		failing: []string{"west/shop/cart/CVE-2026-1234"},
	}, {
		filter: store.Filter{Policy: "require-labels", Source: "kyverno"},
		clusters: []store.ClusterCounts{
			{Cluster: "east", Counts: store.Counts{Pass: 1, Fail: 1, Total: 2}},
			{Cluster: "west", Counts: store.Counts{Fail: 1, Skip: 1, Total: 2}},
		},
		policies: []store.PolicyCounts{
			{Cluster: "east", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Pass: 1, Fail: 1, Total: 2}},
			{Cluster: "west", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Fail: 1, Skip: 1, Total: 2}},
		},
		failing: []string{"east/shop/cart/require-labels", "west/default/db/require-labels"},
	}, {
		filter:   store.Filter{Severity: "critical"},
		clusters: []store.ClusterCounts{{Cluster: "west", Counts: store.Counts{Fail: 1, Total: 1}}},
		policies: []store.PolicyCounts{{Cluster: "west", Source: "trivy", Policy: "CVE-2026-1234", Counts: store.Counts{Fail: 1, Total: 1}}},
		failing:  []string{"west/shop/cart/CVE-2026-1234"},
	}, {
		filter:   store.Filter{Cluster: "north"},
		clusters: []store.ClusterCounts{},
		policies: []store.PolicyCounts{},
		failing:  []string{},
	}, {
		filter: store.Filter{Limit: 2},
		clusters: []store.ClusterCounts{
			{Cluster: "east", Counts: store.Counts{Pass: 1, Fail: 1, Warn: 1, Error: 1, Total: 4}},
			{Cluster: "west", Counts: store.Counts{Fail: 2, Skip: 1, Total: 3}},
		},
		policies: []store.PolicyCounts{
			{Cluster: "east", Source: "kyverno", Policy: "disallow-latest", Counts: store.Counts{Warn: 1, Error: 1, Total: 2}},
			{Cluster: "east", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Pass: 1, Fail: 1, Total: 2}},
			{Cluster: "west", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Fail: 1, Skip: 1, Total: 2}},
			{Cluster: "west", Source: "trivy", Policy: "CVE-2026-1234", Counts: store.Counts{Fail: 1, Total: 1}},
		},
		failing:   []string{"east/billing/api/disallow-latest", "east/shop/cart/require-labels"},
		truncated: true,
	}}
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := fleetServer(t, newDSN(t))
		for _, tt := range tests {
			v, err := s.Fleet(context.Background(), tt.filter)
			require.NoError(t, err)
			assert.Equal(t, tt.clusters, v.Clusters, "%+v", tt.filter)
			assert.Equal(t, tt.policies, v.Policies, "%+v", tt.filter)
			got := []string{}
			for _, r := range v.Failing {
				got = append(got, name(r))
			}
			assert.Equal(t, tt.failing, got, "%+v", tt.filter)
			assert.Equal(t, tt.truncated, v.Truncated, "%+v", tt.filter)
		}
		_, err := s.Fleet(context.Background(), store.Filter{Severity: "urgent"})
		assert.EqualError(t, err, `severity "urgent": want one of critical, high, medium, low, info`)
	})
}

func TestFleetHTTP(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		hs := httptest.NewServer(fleetServer(t, newDSN(t)).HTTPHandler())
		t.Cleanup(hs.Close)
		get := func(method, path string) (int, string) {
			req, err := http.NewRequest(method, hs.URL+path, nil)
			require.NoError(t, err)
			resp, err := hs.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			if resp.StatusCode < 300 {
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			}
			return resp.StatusCode, string(body)
		}

		code, body := get(http.MethodGet, "/v1/fleet?cluster=west")
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{
		  "clusters": [{"cluster": "west", "pass": 0, "fail": 2, "warn": 0, "error": 0, "skip": 1, "total": 3}],
		  "policies": [
		    {"cluster": "west", "source": "kyverno", "policy": "require-labels", "pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 1, "total": 2},
		    {"cluster": "west", "source": "trivy", "policy": "CVE-2026-1234", "pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 0, "total": 1}
		  ],
		  "truncated": false
		}`, body)

		code, body = get(http.MethodGet, "/v1/fleet?limit=1")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, 1, strings.Count(body, `"source"`), "one policy row")
		assert.Contains(t, body, `"truncated": true`)

		trivy := fleetInputs[6].model()
		code, body = get(http.MethodGet, "/v1/fleet/failing?cluster=west&namespace=shop&severity=critical&source=trivy&policy=CVE-2026-1234")
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{
		  "failing": [{
		    "key": "`+trivy.Key()+`",
		    "id": "`+trivy.ID()+`",
		    "cluster": "west",
		    "source": "trivy",
		    "policy": "CVE-2026-1234",
		    "rule": "openssl",
		    "category": "Best Practices",
		    "severity": "critical",
		    "outcome": "fail",
		    "message": "openssl 3.0.1 is vulnerable",
		    "resource": {"api_version": "v1", "kind": "Pod", "namespace": "shop", "name": "cart", "uid": "uid-cart"},
		    "state": "new",
		    "timestamp": "2026-11-22T08:00:00Z",
		    "observed_timestamp": "2026-11-22T08:00:01Z",
		    "updated_at": "2026-11-22T08:01:00Z"
		  }],
		  "truncated": false
		}`, body)

		code, body = get(http.MethodGet, "/v1/fleet/failing?limit=1")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, 1, strings.Count(body, `"key"`))
		assert.Contains(t, body, `"truncated": true`)

		for _, tt := range []struct {
			method, path string
			code         int
			body         string
		}{
			{"GET", "/v1/fleet?colour=red", 400, `{"error":"unknown parameter colour: want cluster, namespace, cluster_wide, policy, rule, severity, source, kind, vulnerability, min_score, fixable, q"}`},
			{"GET", "/v1/fleet?severity=urgent", 400, `{"error":"severity \"urgent\": want one of critical, high, medium, low, info"}`},
			{"GET", "/v1/fleet/failing?cluster=a&cluster=b", 400, `{"error":"parameter cluster: given 2 times, want once"}`},
			{"GET", "/v1/fleet?limit=10001", 400, `{"error":"parameter limit \"10001\": want 1 to 10000"}`},
			{"GET", "/v1/fleet/failing?limit=0", 400, `{"error":"parameter limit \"0\": want 1 to 10000"}`},
			{"GET", "/v1/fleet/failing?limit=many", 400, `{"error":"parameter limit \"many\": want 1 to 10000"}`},
			{"POST", "/v1/fleet", 405, ""},
			{"GET", "/v1/other", 404, ""},
		} {
			code, body := get(tt.method, tt.path)
			assert.Equal(t, tt.code, code, tt.path)
			if tt.body != "" {
				assert.JSONEq(t, tt.body, body, tt.path)
			}
		}
	})
}

func TestFleetHTTPTokens(t *testing.T) {
	hs := httptest.NewServer(sqliteServer(t, readerToken).HTTPHandler())
	t.Cleanup(hs.Close)
	for _, tt := range []struct {
		authorization string
		code          int
	}{{"", 401}, {"Bearer wrong", 401}, {"Basic " + readerToken, 401}, {"Bearer " + readerToken, 200}} {
		req, err := http.NewRequest(http.MethodGet, hs.URL+"/v1/fleet", nil)
		require.NoError(t, err)
		if tt.authorization != "" {
			req.Header.Set("Authorization", tt.authorization)
		}
		resp, err := hs.Client().Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, tt.code, resp.StatusCode, tt.authorization)
		if tt.code == 401 {
			assert.JSONEq(t, `{"error":"missing or invalid bearer token"}`, string(body))
		} else {
			assert.JSONEq(t, `{"clusters":[],"policies":[],"truncated":false}`, string(body))
		}
	}
}
