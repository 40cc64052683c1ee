// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sleaderelectorextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension"

import (
	"context"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

// NewFactory creates the factory of the k8s_leader_elector extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	return &Config{
		APIConfig:      k8sclient.APIConfig{AuthType: k8sclient.AuthTypeServiceAccount},
		LeaseNamespace: podNamespace(),
		LeaseDuration:  15 * time.Second,
		RenewDeadline:  10 * time.Second,
		RetryPeriod:    2 * time.Second,
	}
}

// podNamespace is the namespace of the service account the collector runs as, so that in a cluster the lease
// lives next to the collector without configuration.
func podNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newElector(cfg.(*Config), set), nil
}
