// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

// The defaults run in a cluster as they are: the pod's service account, every report kind but Kyverno's
// intermediate EphemeralReports, a full first sync.
func TestCreateDefaultConfigIsValid(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.NoError(t, cfg.Validate())
	assert.Equal(t, k8sclient.AuthTypeServiceAccount, cfg.AuthType)
	assert.Equal(t, InitialSyncAll, cfg.InitialSync)
	assert.Equal(t, KindsConfig{
		PolicyReports: true, OpenReports: true,
		ComplianceCheckResults: true, ComplianceRemediations: true, ComplianceScans: true,
		VulnerabilityReports: true, ConfigAuditReports: true, ExposedSecretReports: true,
		RbacAssessmentReports: true, InfraAssessmentReports: true, ClusterComplianceReports: true,
		GatekeeperConstraints: true,
	}, cfg.Kinds, "every kind")
}

// Creating the receiver does not reach for the API server: a collector validates and builds its pipelines
// before any of them starts.
func TestCreateLogs(t *testing.T) {
	f := NewFactory()
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, r.Shutdown(context.Background()), "shutting down what never started")
}

func TestStartNeedsTheLeaderElectorItNames(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	id := component.MustNewID("k8s_leader_elector")
	cfg.K8sLeaderElector = &id
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.EqualError(t, r.Start(context.Background(), componenttest.NewNopHost()),
		"k8s_leader_elector extension k8s_leader_elector is not configured")
	require.NoError(t, r.Shutdown(context.Background()))
}

func TestInvalidConfigIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	storage := component.MustNewID("file_storage")
	cfg.Storage = &storage
	cfg.InitialSync = InitialSyncNone
	assert.ErrorContains(t, cfg.Validate(), "initial_sync: none contradicts storage")
}
