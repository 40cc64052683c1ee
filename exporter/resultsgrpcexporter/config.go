// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config of the results_grpc exporter.
type Config struct {
	// ClientConfig is the gRPC client: endpoint, tls, auth (an authenticator extension such as
	// bearertokenauth), headers (for example a static "authorization: Bearer …"), compression, keepalive.
	ClientConfig configgrpc.ClientConfig `mapstructure:",squash"`

	// ExtraMetadata is sent with every request (ForwardRequest.extra_metadata); the reference server stores it
	// with each result, for example the environment or region of the cluster.
	ExtraMetadata map[string]string `mapstructure:"extra_metadata"`

	// MaxResultsPerRequest splits larger batches into several Forward calls, so that one request stays small
	// enough for the server to store in one transaction and a retry resends little.
	MaxResultsPerRequest int `mapstructure:"max_results_per_request"`

	// MaxRequestBytes also ends a request before its results reach this encoded size. gRPC servers refuse
	// messages over 4 MiB by default, with RESOURCE_EXHAUSTED, which would be retried in vain: the default
	// stays under it. A single result larger than this is dropped as invalid.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`

	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
}

// Validate checks the configuration before the collector starts. The embedded gRPC client, TLS, queue and
// retry settings are validated by their own Validate methods.
func (c *Config) Validate() error {
	var errs []error
	if c.ClientConfig.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must be set"))
	}
	if c.MaxResultsPerRequest <= 0 {
		errs = append(errs, fmt.Errorf("max_results_per_request must be positive, got %d", c.MaxResultsPerRequest))
	}
	if c.MaxRequestBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_request_bytes must be positive, got %d", c.MaxRequestBytes))
	}
	return errors.Join(errs...)
}
