// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Config is the policy_metrics connector configuration.
type Config struct {
	// Interval is how often the metrics are emitted.
	Interval  time.Duration   `mapstructure:"interval"`
	Results   ResultsConfig   `mapstructure:"results"`
	Decisions DecisionsConfig `mapstructure:"decisions"`
	// MaxKeys bounds the result keys kept; beyond it the least recently updated are evicted.
	MaxKeys int `mapstructure:"max_keys"`
	// Storage names a storage extension that keeps the latest outcome per result and the decision sums across
	// restarts.
	Storage *component.ID `mapstructure:"storage"`
	// K8sLeaderElector names a k8s_leader_elector extension: only the replica that leads counts and emits, with
	// the state it loads from Storage when it starts leading.
	K8sLeaderElector *component.ID `mapstructure:"k8s_leader_elector"`

	_ struct{}
}

// ResultsConfig configures the policy.results gauge.
type ResultsConfig struct {
	// Labels are the attributes of each series besides policy.result, which every series has.
	Labels []string `mapstructure:"labels"`
}

// DecisionsConfig configures the policy.decisions sum.
type DecisionsConfig struct {
	Labels []string `mapstructure:"labels"`
	// MaxSeries bounds the series; decisions beyond it are counted in one overflow series.
	MaxSeries int `mapstructure:"max_series"`
}

var _ component.Config = (*Config)(nil)

// perResult are attributes with a value per result or decision: as a label they would make one series each.
var perResult = []string{
	policyresult.AttrResultKey, policyresult.AttrResultID, policyresult.AttrDecisionID, policyresult.AttrMessage,
	policyresult.AttrDecisionMessages, policyresult.AttrResourceUID,
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval must be positive, got %s", c.Interval))
	}
	if c.MaxKeys <= 0 {
		errs = append(errs, fmt.Errorf("max_keys must be positive, got %d", c.MaxKeys))
	}
	if c.Decisions.MaxSeries <= 0 {
		errs = append(errs, fmt.Errorf("decisions::max_series must be positive, got %d", c.Decisions.MaxSeries))
	}
	errs = append(errs, validateLabels("results::labels", c.Results.Labels, policyresult.AttrResult)...)
	errs = append(errs, validateLabels("decisions::labels", c.Decisions.Labels, "")...)
	if err := resultstate.ValidateLeaderElector(c.K8sLeaderElector, c.Storage); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateLabels(key string, labels []string, implicit string) []error {
	var errs []error
	for i, name := range labels {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("%s[%d] is empty", key, i))
		case slices.Index(labels, name) != i:
			errs = append(errs, fmt.Errorf("%s names %q twice", key, name))
		case name == implicit:
			errs = append(errs, fmt.Errorf("%s: %q is always a label", key, name))
		case slices.Contains(perResult, name):
			errs = append(errs, fmt.Errorf("%s: %q has a value per result and would make one series each", key, name))
		}
	}
	return errs
}
