// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	custom := createDefaultConfig().(*Config)
	custom.Remove = []string{
		"status",
		"spec.containers[].terminationMessagePath",
		`metadata.annotations["deployment.kubernetes.io/revision"]`,
	}
	custom.Keep = []string{"metadata.uid", "metadata.ownerReferences[].uid"}
	custom.SortKeys = false

	for _, tt := range []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: &Config{SortKeys: true}},
		{id: component.NewIDWithName(metadata.Type, "custom"), want: custom},
		{id: component.NewIDWithName(metadata.Type, "bad_paths"), wantErr: `keep: path "metadata.ownerReferences[]": must end with a key, not []` + "\n" +
			`remove: path "metadata..uid": empty key at offset 9` + "\n" +
			`remove: path "metadata.annotations[\"example.com/x": unterminated quote at offset 21`},
		{id: component.NewIDWithName(metadata.Type, "keep_not_default"), wantErr: `keep: "metadata.name" is not removed by default; ` +
			`the defaults are metadata.managedFields, metadata.uid, metadata.resourceVersion, metadata.generation, ` +
			`metadata.creationTimestamp, metadata.selfLink, metadata.ownerReferences[].uid, ` +
			`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`},
		{id: component.NewIDWithName(metadata.Type, "keep_and_remove"),
			wantErr: `"metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]" is in both keep and remove`},
	} {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestRemovalPaths(t *testing.T) {
	cfg := &Config{
		Keep:   []string{"metadata.generation", `metadata["selfLink"]`},
		Remove: []string{"status", "metadata.managedFields"},
	}
	got, err := cfg.removalPaths()
	require.NoError(t, err)
	// A kept default is matched whatever its spelling; a default named again in remove is harmless.
	var want []path
	for _, s := range []string{
		"metadata.managedFields",
		"metadata.uid",
		"metadata.resourceVersion",
		"metadata.creationTimestamp",
		"metadata.ownerReferences[].uid",
		`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`,
		"status",
		"metadata.managedFields",
	} {
		p, err := parsePath(s)
		require.NoError(t, err)
		want = append(want, p)
	}
	assert.Equal(t, want, got)
}
