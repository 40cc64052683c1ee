// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package k8sclient is the Kubernetes client configuration shared by this repository's components, with the
// keys and meaning of contrib's Kubernetes components: auth_type serviceAccount, kubeConfig or none.
package k8sclient // import "github.com/otelcol-policy/otelcol-policy/internal/k8sclient"

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// AuthType says how a component authenticates to the API server.
type AuthType string

const (
	AuthTypeNone           AuthType = "none"
	AuthTypeServiceAccount AuthType = "serviceAccount"
	AuthTypeKubeConfig     AuthType = "kubeConfig"
)

// APIConfig selects the cluster and credentials.
type APIConfig struct {
	// AuthType: serviceAccount (in cluster), kubeConfig ($KUBECONFIG or ~/.kube/config) or none.
	AuthType AuthType `mapstructure:"auth_type"`
	// Context selects a kubeconfig context other than the current one (kubeConfig only).
	Context string `mapstructure:"context"`
}

// Validate checks the auth settings.
func (c APIConfig) Validate() error {
	var errs []error
	switch c.AuthType {
	case AuthTypeNone, AuthTypeServiceAccount, AuthTypeKubeConfig:
	default:
		errs = append(errs, fmt.Errorf("auth_type must be one of serviceAccount, kubeConfig, none; got %q", c.AuthType))
	}
	if c.Context != "" && c.AuthType != AuthTypeKubeConfig {
		errs = append(errs, errors.New("context applies to auth_type kubeConfig only"))
	}
	return errors.Join(errs...)
}

// RestConfig builds the client configuration: in-cluster service account, a kubeconfig ($KUBECONFIG, else
// ~/.kube/config, with its current context or Context), or the in-cluster address without credentials.
func (c APIConfig) RestConfig(userAgent string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch c.AuthType {
	case AuthTypeServiceAccount:
		cfg, err = rest.InClusterConfig()
	case AuthTypeKubeConfig:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	case AuthTypeNone:
		cfg, err = rest.InClusterConfig()
		if err == nil {
			cfg = &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: cfg.CAFile}}
		}
	default:
		err = fmt.Errorf("unknown auth_type %q", c.AuthType)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration (auth_type %s): %w", c.AuthType, err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}
