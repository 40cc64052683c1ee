// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleResult() Result {
	scored := true
	return Result{
		Cluster:  "prod-eu-1",
		Source:   "kyverno",
		Policy:   "require-labels",
		Rule:     "check-team",
		Category: "Best Practices",
		Severity: SeverityMedium,
		Outcome:  OutcomeFail,
		Scored:   &scored,
		Message:  "label 'team' is required",
		Resource: Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-7d9f", UID: "0b7f7c1e-6a52-4c1e-9f35-1d2a4b6c8e01"},
		Report:   Report{Kind: "PolicyReport", Namespace: "shop", Name: "0b7f7c1e-6a52-4c1e-9f35-1d2a4b6c8e01"},
		State:    StateNew,
	}
}

// The golden values pin the hash function: they must never change, or every stored key downstream would stop
// matching. A deliberate change of identity bumps hashVersion and these values together. They were also
// computed outside Go (Python hashlib over the same length-prefixed fields), so they pin the specification in
// docs/semantic-conventions.md, not just this implementation.
const (
	goldenKey = "6298076245ccfe514c9c4948c4ff7ed4"
	goldenID  = "cc711279cf3e90737a93425d8a870779"
)

func TestHashesAreGolden(t *testing.T) {
	r := sampleResult()
	assert.Equal(t, goldenKey, r.Key())
	assert.Equal(t, goldenID, r.ID())
	assert.Len(t, r.Key(), 32)
}

// TestHashesStableAcrossProcesses re-runs this test binary and compares what the child computes.
func TestHashesAreKeyAndID(t *testing.T) {
	r := sampleResult()
	h := r.Hashes()
	assert.Equal(t, goldenKey, h.Key.String())
	assert.Equal(t, goldenID, h.ID.String())
	text, err := h.Key.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, goldenKey, string(text))
	var back Hash
	require.NoError(t, back.UnmarshalText(text))
	assert.Equal(t, h.Key, back)
	assert.Error(t, back.UnmarshalText([]byte("zz")))
}

func TestParseHash(t *testing.T) {
	k, ok := ParseHash("6298076245ccfe514c9c4948c4ff7ed4")
	require.True(t, ok)
	assert.Equal(t, Hash{0x62, 0x98, 0x07, 0x62, 0x45, 0xcc, 0xfe, 0x51, 0x4c, 0x9c, 0x49, 0x48, 0xc4, 0xff, 0x7e, 0xd4}, k)
	for _, bad := range []string{"", "6298", "6298076245ccfe514c9c4948c4ff7ed4aa", "zz98076245ccfe514c9c4948c4ff7ed4"} {
		_, ok := ParseHash(bad)
		assert.False(t, ok, bad)
	}
}

// The decision ID of engines without one is pinned like the result hashes: the decision_logs receiver's IDs
// must not change across versions, or deduplication downstream would see every redelivered decision as new.
func TestContentDecisionIDIsGolden(t *testing.T) {
	assert.Equal(t, "239b74afe9f88de14fceb9659a65618f", ContentDecisionID("a", "b"))
	assert.NotEqual(t, ContentDecisionID("ab", "c"), ContentDecisionID("a", "bc"))
}

func TestHashesStableAcrossProcesses(t *testing.T) {
	if os.Getenv("POLICYRESULT_HASH_CHILD") == "1" {
		r := sampleResult()
		os.Stdout.WriteString("HASHES " + r.Key() + " " + r.ID() + "\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHashesStableAcrossProcesses$")
	cmd.Env = append(os.Environ(), "POLICYRESULT_HASH_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	r := sampleResult()
	assert.Contains(t, string(out), "HASHES "+r.Key()+" "+r.ID()+"\n")
}

func TestKeyIgnoresOutcomeIDDoesNot(t *testing.T) {
	base := sampleResult()
	for name, change := range map[string]func(*Result){
		"outcome":   func(r *Result) { r.Outcome = OutcomePass },
		"message":   func(r *Result) { r.Message = "ok" },
		"severity":  func(r *Result) { r.Severity = SeverityHigh },
		"category":  func(r *Result) { r.Category = "Security" },
		"scored":    func(r *Result) { r.Scored = nil },
		"state":     func(r *Result) { r.State = StateChanged },
		"report":    func(r *Result) { r.Report.Name = "other" },
		"timestamp": func(r *Result) { r.Timestamp = r.Timestamp.Add(1) },
	} {
		t.Run(name, func(t *testing.T) {
			r := base
			change(&r)
			assert.Equal(t, base.Key(), r.Key(), "key must not depend on %s", name)
		})
	}
	for name, change := range map[string]func(*Result){
		"outcome": func(r *Result) { r.Outcome = OutcomePass },
		"message": func(r *Result) { r.Message = "ok" },
	} {
		t.Run("id/"+name, func(t *testing.T) {
			r := base
			change(&r)
			assert.NotEqual(t, base.ID(), r.ID(), "id must depend on %s", name)
		})
	}
}

func TestKeyDependsOnEveryIdentityField(t *testing.T) {
	base := sampleResult()
	seen := map[string]string{base.Key(): "base"}
	for name, change := range map[string]func(*Result){
		"cluster":     func(r *Result) { r.Cluster = "prod-us-1" },
		"source":      func(r *Result) { r.Source = "kubewarden" },
		"policy":      func(r *Result) { r.Policy = "other" },
		"rule":        func(r *Result) { r.Rule = "other" },
		"api_version": func(r *Result) { r.Resource.APIVersion = "apps/v1" },
		"kind":        func(r *Result) { r.Resource.Kind = "Deployment" },
		"namespace":   func(r *Result) { r.Resource.Namespace = "other" },
		"name":        func(r *Result) { r.Resource.Name = "other" },
		"uid":         func(r *Result) { r.Resource.UID = "other" },
		// Field boundaries matter: moving a character between policy and rule is another identity.
		"boundary": func(r *Result) { r.Policy, r.Rule = "require-labelsc", "heck-team" },
	} {
		r := base
		change(&r)
		k := r.Key()
		if prev, dup := seen[k]; dup {
			t.Errorf("changing %s gives the same key as %s", name, prev)
		}
		seen[k] = name
	}
}

func TestKeyWithoutSubjectUsesReport(t *testing.T) {
	r := sampleResult()
	r.Resource = Resource{}
	other := r
	other.Report.Name = "another-report"
	assert.NotEqual(t, r.Key(), other.Key())
	// ...and a subject resource that happens to spell the report's fields is not the same identity.
	asSubject := r
	asSubject.Resource = Resource{Kind: r.Report.Kind, Namespace: r.Report.Namespace, Name: r.Report.Name}
	asSubject.Report = Report{}
	assert.NotEqual(t, r.Key(), asSubject.Key())
	assert.False(t, strings.Contains(r.Key(), r.Report.Name))
}

func BenchmarkKeyAndID(b *testing.B) {
	r := sampleResult()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Key()
		_ = r.ID()
	}
}

func BenchmarkHashes(b *testing.B) {
	r := sampleResult()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Hashes()
	}
}
