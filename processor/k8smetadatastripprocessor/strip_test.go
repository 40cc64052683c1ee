// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadatatest"
)

// TestStrip runs each testdata/<case>/input.json body through the processor and compares the result with
// expected.json, order included.
func TestStrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  func(*Config)
		// The self-metrics after the one record.
		objects, fields int64
	}{
		// Each default field once, two owner references: 9 fields, and nothing else.
		{name: "all_default_fields", objects: 1, fields: 9},
		// request.uid and userInfo.uid are no object metadata; the event around the objects keeps its order.
		{name: "opa_decision", objects: 2, fields: 10},
		// The List's metadata held only an empty resourceVersion: removed with it.
		{name: "list_items", objects: 3, fields: 8},
		{name: "keep", objects: 1, fields: 3, cfg: func(c *Config) {
			c.Keep = []string{
				"metadata.uid",
				"metadata.ownerReferences[].uid",
				`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`,
			}
		}},
		// The annotations emptied by a configured path go as well.
		{name: "remove_paths", objects: 1, fields: 7, cfg: func(c *Config) {
			c.Remove = []string{
				"spec.containers[].terminationMessagePath",
				`metadata.labels["pod-template-hash"]`,
				`metadata.annotations["example.com/build-id"]`,
				"status",
			}
		}},
		// Annotations emptied by the processor are removed; labels that were empty already stay.
		{name: "annotations_emptied", objects: 1, fields: 2},
		{name: "annotations_other_keys", objects: 1, fields: 1},
		{name: "sort_keys_on", objects: 1, fields: 1},
		{name: "sort_keys_off", objects: 1, fields: 1, cfg: func(c *Config) { c.SortKeys = false }},
		{name: "array_body", objects: 2, fields: 2},
		{name: "string_body"},
		{name: "not_objects"},
		// The object 128 levels down is stripped and sorted, the one below it is left as it is.
		{name: "depth_limit", objects: 1, fields: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			if tt.cfg != nil {
				tt.cfg(cfg)
			}
			tp := newTestProcessor(t, cfg)

			want := logsWithBodies(t, filepath.Join(tt.name, "expected.json"))
			got := tp.process(t, logsWithBodies(t, filepath.Join(tt.name, "input.json")))
			requireSameEncoding(t, want, got)

			if tt.objects == 0 {
				_, err := tp.telemetry.GetMetric("otelcol_processor_k8s_metadata_strip_objects")
				require.Error(t, err, "no object, no count")
				_, err = tp.telemetry.GetMetric("otelcol_processor_k8s_metadata_strip_fields")
				require.Error(t, err, "no object, no count")
			} else {
				metadatatest.AssertEqualProcessorK8sMetadataStripObjects(t, tp.telemetry,
					[]metricdata.DataPoint[int64]{{Value: tt.objects}}, metricdatatest.IgnoreTimestamp())
				metadatatest.AssertEqualProcessorK8sMetadataStripFields(t, tp.telemetry,
					[]metricdata.DataPoint[int64]{{Value: tt.fields}}, metricdatatest.IgnoreTimestamp())
			}

			// Stripping a stripped body changes nothing.
			requireSameEncoding(t, want, tp.process(t, got))
		})
	}
}
