// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension"

import (
	"context"
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

// The spam filter's defaults are the kubelet's (client-go's record package): 25 events per Pod and type, then one
// every five minutes.
const (
	defaultQPS   = 1. / 300.
	defaultBurst = 25
)

// NewFactory creates the factory of the k8s_events extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	return &Config{
		APIConfig:    k8sclient.APIConfig{AuthType: k8sclient.AuthTypeServiceAccount},
		PodName:      os.Getenv(envPodName),
		PodNamespace: os.Getenv(envPodNamespace),
		PodUID:       os.Getenv(envPodUID),
		QPS:          defaultQPS,
		Burst:        defaultBurst,
	}
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newEventsExtension(cfg.(*Config), set), nil
}
