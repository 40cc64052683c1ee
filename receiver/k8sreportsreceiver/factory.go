// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
)

// NewFactory creates the factory of the k8s_reports receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig,
		receiver.WithLogs(createLogs, metadata.LogsStability))
}

func createDefaultConfig() component.Config {
	return &Config{
		APIConfig:   k8sclient.APIConfig{AuthType: k8sclient.AuthTypeServiceAccount},
		InitialSync: InitialSyncAll,
		Kinds: KindsConfig{
			PolicyReports: true, OpenReports: true,
			ComplianceCheckResults: true, ComplianceRemediations: true, ComplianceScans: true,
			VulnerabilityReports: true, ConfigAuditReports: true, ExposedSecretReports: true,
			RbacAssessmentReports: true, InfraAssessmentReports: true, ClusterComplianceReports: true,
			GatekeeperConstraints: true,
		},
		EmitResolved:      true,
		DiscoveryInterval: 30 * time.Second,
		PageSize:          500,
		MaxBatchRecords:   1000,
		MaxBatchBytes:     4 << 20,
		MaxReportRecords:  50_000,
		MaxReportBytes:    32 << 20,
		QPS:               50,
		Burst:             100,
	}
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newReceiver(cfg.(*Config), set, next)
}
