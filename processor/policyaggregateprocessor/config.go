// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor"

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// ResultsMode says what happens to the per-result records once they are counted.
type ResultsMode string

const (
	ResultsForward ResultsMode = "forward"
	ResultsDrop    ResultsMode = "drop"
)

// Config is the policy_aggregate processor configuration.
type Config struct {
	// Interval is how often summaries of the groups that changed are emitted.
	Interval time.Duration `mapstructure:"interval"`
	// GroupBy are the attributes (record attributes, or resource attributes such as k8s.cluster.name) whose
	// values form a group.
	GroupBy []string `mapstructure:"group_by"`
	// Results is forward (per-result records continue after being counted) or drop (only summaries continue).
	Results ResultsMode `mapstructure:"results"`
	// MaxKeys bounds the result keys kept; beyond it the least recently updated are evicted.
	MaxKeys int `mapstructure:"max_keys"`
	// Storage names a storage extension that keeps the state across restarts.
	Storage *component.ID `mapstructure:"storage"`
	// K8sLeaderElector names a k8s_leader_elector extension: only the replica that leads counts and emits, with
	// the state it loads from Storage when it starts leading.
	K8sLeaderElector *component.ID `mapstructure:"k8s_leader_elector"`

	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval must be positive, got %s", c.Interval))
	}
	if len(c.GroupBy) == 0 {
		errs = append(errs, errors.New("group_by must name at least one attribute"))
	}
	for i, name := range c.GroupBy {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("group_by[%d] is empty", i))
		case slices.Index(c.GroupBy, name) != i:
			errs = append(errs, fmt.Errorf("group_by names %q twice", name))
		case policyresult.IsSummaryAttribute(name):
			errs = append(errs, fmt.Errorf("group_by[%d]: %q is written by the processor itself", i, name))
		}
	}
	if c.Results != ResultsForward && c.Results != ResultsDrop {
		errs = append(errs, fmt.Errorf("results must be %q or %q, got %q", ResultsForward, ResultsDrop, c.Results))
	}
	if c.MaxKeys <= 0 {
		errs = append(errs, fmt.Errorf("max_keys must be positive, got %d", c.MaxKeys))
	}
	if err := resultstate.ValidateLeaderElector(c.K8sLeaderElector, c.Storage); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
