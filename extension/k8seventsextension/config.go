// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension"

import (
	"errors"
	"fmt"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

// The environment variables the defaults of pod_name, pod_namespace and pod_uid come from; the Pod sets them from
// the downward API (metadata.name, metadata.namespace, metadata.uid).
const (
	envPodName      = "K8S_POD_NAME"
	envPodNamespace = "K8S_POD_NAMESPACE"
	envPodUID       = "K8S_POD_UID"
)

// Config of the k8s_events extension.
type Config struct {
	k8sclient.APIConfig `mapstructure:",squash"`
	// PodName, PodNamespace and PodUID name the collector's own Pod, the object the Events are about. The UID is
	// part of the reference: `kubectl describe pod` shows only the Events of the Pod with that UID.
	PodName      string `mapstructure:"pod_name"`
	PodNamespace string `mapstructure:"pod_namespace"`
	PodUID       string `mapstructure:"pod_uid"`
	// QPS and Burst are the token bucket of client-go's spam filter, per Pod and event type: after Burst events,
	// one more every 1/QPS seconds; the others are dropped. The kubelet's defaults.
	QPS   float32 `mapstructure:"qps"`
	Burst int     `mapstructure:"burst"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	errs := []error{c.APIConfig.Validate()}
	for _, f := range []struct{ key, value, env, field string }{
		{"pod_name", c.PodName, envPodName, "metadata.name"},
		{"pod_namespace", c.PodNamespace, envPodNamespace, "metadata.namespace"},
		{"pod_uid", c.PodUID, envPodUID, "metadata.uid"},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s must be set (by default from $%s: set it from the downward API field %s)", f.key, f.env, f.field))
		}
	}
	if c.QPS <= 0 {
		errs = append(errs, fmt.Errorf("qps must be positive; got %g", c.QPS))
	}
	if c.Burst < 1 {
		errs = append(errs, fmt.Errorf("burst must be at least 1; got %d", c.Burst))
	}
	return errors.Join(errs...)
}
