// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

// TestSameObjectFromTwoClusters is what the processor is for: one Deployment as two clusters hold it (another
// uid, resourceVersion, generation, creation time, managedFields and owner uid; applied with kubectl apply in
// one, created with kubectl create in the other; serialized in another key order) encodes to the same bytes.
func TestSameObjectFromTwoClusters(t *testing.T) {
	tp := newTestProcessor(t, createDefaultConfig().(*Config))
	var m plog.ProtoMarshaler
	encode := func(ld plog.Logs) []byte {
		b, err := m.MarshalLogs(ld)
		require.NoError(t, err)
		return b
	}

	a := logsWithBodies(t, "cross_cluster/cluster_a.json")
	b := logsWithBodies(t, "cross_cluster/cluster_b.json")
	require.NotEqual(t, encode(a), encode(b), "the copies differ before")

	strippedA := encode(tp.process(t, a))
	strippedB := encode(tp.process(t, b))
	if !assert.Equal(t, strippedA, strippedB, "the copies encode identically after") {
		t.Logf("cluster a:\n%s\ncluster b:\n%s", bodiesJSON(a), bodiesJSON(b))
	}
}

// TestTwoClustersNeedSortedKeys: without sort_keys, the key order the two clusters' serializers chose remains.
func TestTwoClustersNeedSortedKeys(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.SortKeys = false
	tp := newTestProcessor(t, cfg)
	var m plog.ProtoMarshaler
	a, err := m.MarshalLogs(tp.process(t, logsWithBodies(t, "cross_cluster/cluster_a.json")))
	require.NoError(t, err)
	b, err := m.MarshalLogs(tp.process(t, logsWithBodies(t, "cross_cluster/cluster_b.json")))
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
}
