// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// InitialSync says what a receiver without storage emits for the reports it finds when it starts.
type InitialSync string

const (
	// InitialSyncAll emits every existing result as new.
	InitialSyncAll InitialSync = "all"
	// InitialSyncNone emits nothing for existing results, only later changes.
	InitialSyncNone InitialSync = "none"
)

// minBodyLimit is the least max_batch_bytes and max_report_bytes may be: one ordinary result's body.
const minBodyLimit = 4096

// Config of the k8s_reports receiver.
type Config struct {
	k8sclient.APIConfig `mapstructure:",squash"`
	// ClusterName becomes the resource attribute k8s.cluster.name, and part of every result's key.
	ClusterName string `mapstructure:"cluster_name"`

	// Kinds switches each family of report kinds on or off.
	Kinds KindsConfig `mapstructure:"kinds"`
	// Namespaces limits namespaced reports to these namespaces (all when empty) minus the excluded ones.
	Namespaces NamespacesConfig `mapstructure:"namespaces"`
	// LabelSelector limits the reports watched, evaluated by the API server.
	LabelSelector string `mapstructure:"label_selector"`

	// Storage is the id of a storage extension (file_storage) that keeps what was emitted, so that after a
	// restart exactly the changes made while the receiver was down are emitted.
	Storage *component.ID `mapstructure:"storage"`
	// InitialSync applies without storage: "all" emits existing results at start, "none" only later changes.
	InitialSync InitialSync `mapstructure:"initial_sync"`
	// EmitResolved emits a `resolved` record when a result, its report or its report kind goes away.
	EmitResolved bool `mapstructure:"emit_resolved"`

	// DiscoveryInterval is how often the receiver looks for report kinds being installed or removed.
	DiscoveryInterval time.Duration `mapstructure:"discovery_interval"`
	// PageSize is the number of objects per list request.
	PageSize int64 `mapstructure:"page_size"`
	// MaxBatchRecords bounds the records of one ConsumeLogs call; a report with more is split across calls.
	MaxBatchRecords int `mapstructure:"max_batch_records"`
	// MaxBatchBytes bounds the record bodies (as JSON) of one ConsumeLogs call; a record larger than it is sent
	// alone.
	MaxBatchBytes int `mapstructure:"max_batch_bytes"`
	// MaxReportRecords bounds the records one report may fan out to (results × subject resources); a larger
	// report is skipped as too large.
	MaxReportRecords int `mapstructure:"max_report_records"`
	// MaxReportBytes bounds the record bodies (as JSON) one report may fan out to; a larger report is skipped
	// as too large.
	MaxReportBytes int64 `mapstructure:"max_report_bytes"`
	// QPS and Burst limit the requests to the API server.
	QPS   float32 `mapstructure:"qps"`
	Burst int     `mapstructure:"burst"`

	// K8sLeaderElector names a k8s_leader_elector extension: with it, the receiver watches only while this
	// replica leads, and opens its storage only then, so replicas can share the storage volume.
	K8sLeaderElector *component.ID `mapstructure:"k8s_leader_elector"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// KindsConfig switches report kinds on or off.
type KindsConfig struct {
	// PolicyReports: wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport.
	PolicyReports bool `mapstructure:"policy_reports"`
	// OpenReports: openreports.io/v1alpha1 Report and ClusterReport.
	OpenReports bool `mapstructure:"open_reports"`
	// EphemeralReports: reports.kyverno.io/v1 EphemeralReport and ClusterEphemeralReport.
	EphemeralReports bool `mapstructure:"ephemeral_reports"`
	// ComplianceCheckResults: compliance.openshift.io/v1alpha1 ComplianceCheckResult.
	ComplianceCheckResults bool `mapstructure:"compliance_check_results"`
	// ComplianceRemediations: compliance.openshift.io/v1alpha1 ComplianceRemediation.
	ComplianceRemediations bool `mapstructure:"compliance_remediations"`
	// ComplianceScans: compliance.openshift.io/v1alpha1 ComplianceScan and ComplianceSuite, one policy.scan
	// record per completed run.
	ComplianceScans bool `mapstructure:"compliance_scans"`
	// VulnerabilityReports: aquasecurity.github.io/v1alpha1 VulnerabilityReport and ClusterVulnerabilityReport.
	VulnerabilityReports bool `mapstructure:"vulnerability_reports"`
	// ConfigAuditReports: aquasecurity.github.io/v1alpha1 ConfigAuditReport and ClusterConfigAuditReport.
	ConfigAuditReports bool `mapstructure:"config_audit_reports"`
	// ExposedSecretReports: aquasecurity.github.io/v1alpha1 ExposedSecretReport.
	ExposedSecretReports bool `mapstructure:"exposed_secret_reports"`
	// RbacAssessmentReports: aquasecurity.github.io/v1alpha1 RbacAssessmentReport and ClusterRbacAssessmentReport.
	RbacAssessmentReports bool `mapstructure:"rbac_assessment_reports"`
	// InfraAssessmentReports: aquasecurity.github.io/v1alpha1 InfraAssessmentReport and
	// ClusterInfraAssessmentReport.
	InfraAssessmentReports bool `mapstructure:"infra_assessment_reports"`
	// ClusterComplianceReports: aquasecurity.github.io/v1alpha1 ClusterComplianceReport.
	ClusterComplianceReports bool `mapstructure:"cluster_compliance_reports"`
	// GatekeeperConstraints: every kind of constraints.gatekeeper.sh/v1beta1, found through discovery.
	GatekeeperConstraints bool `mapstructure:"gatekeeper_constraints"`
}

// NamespacesConfig filters namespaced reports.
type NamespacesConfig struct {
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
}

// Validate checks the configuration before the collector starts.
func (c *Config) Validate() error {
	var errs []error
	if err := c.APIConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.InitialSync {
	case InitialSyncAll, InitialSyncNone:
	default:
		errs = append(errs, fmt.Errorf("initial_sync must be all or none; got %q", c.InitialSync))
	}
	if c.Storage != nil && c.InitialSync == InitialSyncNone {
		errs = append(errs, errors.New("initial_sync: none contradicts storage, which emits exactly what changed since the last run"))
	}
	if _, err := labels.Parse(c.LabelSelector); err != nil {
		errs = append(errs, fmt.Errorf("label_selector: %w", err))
	}
	for _, ns := range c.Namespaces.Include {
		for _, ex := range c.Namespaces.Exclude {
			if ns == ex {
				errs = append(errs, fmt.Errorf("namespace %q is both included and excluded", ns))
			}
		}
	}
	if len(enabledKinds(c.Kinds)) == 0 {
		errs = append(errs, errors.New("kinds: every report kind is disabled"))
	}
	if c.DiscoveryInterval < time.Second {
		errs = append(errs, fmt.Errorf("discovery_interval must be at least 1s; got %s", c.DiscoveryInterval))
	}
	if c.PageSize <= 0 {
		errs = append(errs, fmt.Errorf("page_size must be positive; got %d", c.PageSize))
	}
	if c.MaxBatchRecords <= 0 {
		errs = append(errs, fmt.Errorf("max_batch_records must be positive; got %d", c.MaxBatchRecords))
	}
	if c.MaxBatchBytes < minBodyLimit {
		errs = append(errs, fmt.Errorf("max_batch_bytes must be at least %d; got %d", minBodyLimit, c.MaxBatchBytes))
	}
	if c.MaxReportRecords <= 0 {
		errs = append(errs, fmt.Errorf("max_report_records must be positive; got %d", c.MaxReportRecords))
	}
	if c.MaxReportBytes < minBodyLimit {
		errs = append(errs, fmt.Errorf("max_report_bytes must be at least %d; got %d", minBodyLimit, c.MaxReportBytes))
	}
	if c.QPS <= 0 || c.Burst <= 0 {
		errs = append(errs, fmt.Errorf("qps and burst must be positive; got %g and %d", c.QPS, c.Burst))
	}
	return errors.Join(errs...)
}

func (c *Config) budget() parse.Budget {
	return parse.Budget{Records: c.MaxReportRecords, Bytes: c.MaxReportBytes}
}

func (c *Config) namespaceAllowed(ns string) bool {
	if ns == "" {
		return true // cluster-scoped reports are not filtered by namespace
	}
	for _, ex := range c.Namespaces.Exclude {
		if ns == ex {
			return false
		}
	}
	if len(c.Namespaces.Include) == 0 {
		return true
	}
	for _, in := range c.Namespaces.Include {
		if ns == in {
			return true
		}
	}
	return false
}
