// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sleaderelectorextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension"

import (
	"errors"
	"fmt"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

// Config of the k8s_leader_elector extension; the keys are those of contrib's extension.
type Config struct {
	k8sclient.APIConfig `mapstructure:",squash"`
	// LeaseName and LeaseNamespace name the Lease the replicas compete for.
	LeaseName      string `mapstructure:"lease_name"`
	LeaseNamespace string `mapstructure:"lease_namespace"`
	// LeaseDuration is how long followers wait before taking over from a leader that stopped renewing.
	LeaseDuration time.Duration `mapstructure:"lease_duration"`
	// RenewDeadline is how long the leader keeps trying to renew before it steps down.
	RenewDeadline time.Duration `mapstructure:"renew_deadline"`
	// RetryPeriod is the interval between attempts to acquire or renew.
	RetryPeriod time.Duration `mapstructure:"retry_period"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration; the durations must satisfy client-go's leader election rules.
func (c *Config) Validate() error {
	errs := []error{c.APIConfig.Validate()}
	if c.LeaseName == "" {
		errs = append(errs, errors.New("lease_name must be set"))
	}
	if c.LeaseNamespace == "" {
		errs = append(errs, errors.New("lease_namespace must be set"))
	}
	if c.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("retry_period must be positive; got %s", c.RetryPeriod))
	}
	if c.RenewDeadline <= c.RetryPeriod {
		errs = append(errs, fmt.Errorf("renew_deadline (%s) must be longer than retry_period (%s)", c.RenewDeadline, c.RetryPeriod))
	}
	if c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("lease_duration (%s) must be longer than renew_deadline (%s)", c.LeaseDuration, c.RenewDeadline))
	}
	return errors.Join(errs...)
}
