// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"database/sql"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// vulnerable is a trivy-shaped result: one vulnerable package of an image, failing.
func vulnerable(name, cve string, score *float64, fixed string) *pb.Result {
	m := spec{cluster: "east", source: "trivy", policy: cve, rule: "", namespace: "shop", name: name,
		kind: "ReplicaSet", outcome: policyresult.OutcomeFail, severity: policyresult.SeverityHigh,
		message: "openssl: " + cve, observed: 1}.model()
	m.Rule = ""
	m.Vulnerability = &policyresult.Vulnerability{ID: cve, Score: score, ScoreVersion: "3.1",
		Reference: "https://avd.aquasec.com/nvd/" + cve, PackageName: "libssl3", PackageVersion: "3.0.11-1",
		PackageFixedVersion: fixed, PackageType: "debian"}
	return resultsapi.FromResult(&m)
}

func ptr[T any](v T) *T { return &v }

// TestFindingFields: a vulnerability's fields and a control's failed checks are stored as columns, shown by the
// fleet view, and filtered on in SQL.
func TestFindingFields(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := open(t, newDSN(t))
		control := spec{cluster: "east", source: "trivy", policy: "cis-1.23", rule: "1.2.1", outcome: policyresult.OutcomeFail,
			severity: policyresult.SeverityMedium, message: "Ensure --anonymous-auth is false (100%_sure)", observed: 1}.model()
		control.Resource = policyresult.Resource{}
		control.FailedChecks = ptr[int64](3)
		resp := forward(t, s, batch(
			vulnerable("web-7d9c", "CVE-2024-0001", ptr(9.8), "3.0.13-1"),
			vulnerable("web-7d9c", "CVE-2024-0002", ptr(7.5), ""),
			vulnerable("api-5f6b", "CVE-2024-0003", ptr(8.1), "3.0.13-1, 3.1.5-1"),
			vulnerable("api-5f6b", "CVE-2024-0004", nil, "3.0.14-1"),
			resultsapi.FromResult(&control),
			spec{cluster: "east", policy: "require-labels", namespace: "shop", name: "cart",
				outcome: policyresult.OutcomeFail, message: "label team missing", observed: 1}.pb(),
		))
		require.Equal(t, uint32(6), resp.GetAccepted(), "%v", resp.GetRejected())

		failing := func(f store.Filter) []string {
			t.Helper()
			v, err := s.Fleet(context.Background(), f)
			require.NoError(t, err)
			var out []string
			for _, r := range v.Failing {
				out = append(out, r.Policy)
			}
			slices.Sort(out)
			return out
		}
		all := failing(store.Filter{})
		require.Len(t, all, 6)
		assert.Equal(t, []string{"CVE-2024-0001", "CVE-2024-0003"}, failing(store.Filter{MinScore: ptr(8.0)}))
		assert.Equal(t, []string{"CVE-2024-0001"}, failing(store.Filter{MinScore: ptr(9.8)}), "the bound is inclusive")
		assert.Equal(t, []string{"CVE-2024-0001", "CVE-2024-0003", "CVE-2024-0004"}, failing(store.Filter{Fixable: true}))
		assert.Equal(t, []string{"CVE-2024-0001", "CVE-2024-0003"}, failing(store.Filter{MinScore: ptr(8.0), Fixable: true}),
			"every CVSS >= 8 finding that has a fix")
		assert.Equal(t, []string{"CVE-2024-0002"}, failing(store.Filter{Vulnerability: "CVE-2024-0002"}))
		assert.Equal(t, []string{"CVE-2024-0001", "CVE-2024-0002", "CVE-2024-0003", "CVE-2024-0004"}, failing(store.Filter{Kind: "ReplicaSet"}))
		assert.Equal(t, []string{"cis-1.23"}, failing(store.Filter{Rule: "1.2.1"}))
		assert.Equal(t, []string{"cis-1.23"}, failing(store.Filter{ClusterWide: true}), "the control has no subject resource")
		assert.Equal(t, []string{"CVE-2024-0003", "CVE-2024-0004"}, failing(store.Filter{Text: "API-5F"}), "subject name, any case")
		assert.Equal(t, []string{"CVE-2024-0001", "CVE-2024-0002", "CVE-2024-0003", "CVE-2024-0004"}, failing(store.Filter{Text: "libSSL"}), "package name")
		assert.Equal(t, []string{"cis-1.23"}, failing(store.Filter{Text: "100%_s"}), "% and _ are matched as they are")
		assert.Empty(t, failing(store.Filter{Text: "100%s"}), "not as wildcards")

		v, err := s.Fleet(context.Background(), store.Filter{Vulnerability: "CVE-2024-0003"})
		require.NoError(t, err)
		require.Len(t, v.Failing, 1)
		assert.Equal(t, &store.Vulnerability{ID: "CVE-2024-0003", Score: ptr(8.1), ScoreVersion: "3.1",
			Reference: "https://avd.aquasec.com/nvd/CVE-2024-0003", PackageName: "libssl3", PackageVersion: "3.0.11-1",
			PackageFixedVersion: "3.0.13-1, 3.1.5-1", PackageType: "debian"}, v.Failing[0].Vulnerability)
		assert.Nil(t, v.Failing[0].FailedChecks)
		v, err = s.Fleet(context.Background(), store.Filter{Policy: "cis-1.23"})
		require.NoError(t, err)
		require.Len(t, v.Failing, 1)
		assert.Equal(t, ptr[int64](3), v.Failing[0].FailedChecks)
		assert.Nil(t, v.Failing[0].Vulnerability)

		// The history keeps them too.
		var score sql.NullFloat64
		require.NoError(t, s.store.DB().QueryRow(`SELECT vulnerability_score FROM result_history WHERE vulnerability_id = $1`,
			"CVE-2024-0001").Scan(&score))
		assert.Equal(t, sql.NullFloat64{Float64: 9.8, Valid: true}, score)
	})
}

func TestFindingScoreMustBeFinite(t *testing.T) {
	s := open(t, "sqlite://"+t.TempDir()+"/results.db")
	bad := vulnerable("web", "CVE-2024-0001", ptr(0.0), "")
	for _, score := range []float64{math.NaN(), math.Inf(1)} {
		bad.Vulnerability.Score = &score
		resp := forward(t, s, batch(bad))
		require.Len(t, resp.GetRejected(), 1)
		assert.Equal(t, ReasonBadScore, resp.GetRejected()[0].GetReason())
	}
}

func TestFilterValidate(t *testing.T) {
	for _, f := range []store.Filter{{MinScore: ptr(-1.0)}, {MinScore: ptr(10.5)}, {MinScore: ptr(math.NaN())},
		{Namespace: "shop", ClusterWide: true},
		{Text: string(make([]byte, store.MaxFilterText+1))}, {Severity: "urgent"}} {
		assert.Error(t, f.Validate(), "%+v", f)
	}
	assert.NoError(t, store.Filter{MinScore: ptr(0.0), Text: "x", Fixable: true}.Validate())
}
