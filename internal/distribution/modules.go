// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package distribution ties this module's go.mod to builder-config.yaml. The OCB-generated module replaces
// github.com/otelcol-policy/otelcol-policy with this checkout, so the versions required here take part in its
// version selection: were a component of the distribution missing from go.mod, `go mod tidy` would pick its
// newest release, which the module proxy here may serve without its dependencies (see docs/dependencies.md).
// Importing every upstream component of the distribution keeps them required at the pinned versions;
// modules_test.go checks that the pins and builder-config.yaml agree.
package distribution // import "github.com/otelcol-policy/otelcol-policy/internal/distribution"

import (
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusremotewriteexporter"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/extension/pprofextension"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/processor/attributesprocessor"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbyattrsprocessor"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/processor/resourceprocessor"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/processor/transformprocessor"
	_ "go.opentelemetry.io/collector/confmap/provider/envprovider"
	_ "go.opentelemetry.io/collector/confmap/provider/fileprovider"
	_ "go.opentelemetry.io/collector/confmap/provider/httpprovider"
	_ "go.opentelemetry.io/collector/confmap/provider/httpsprovider"
	_ "go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	_ "go.opentelemetry.io/collector/exporter/debugexporter"
	_ "go.opentelemetry.io/collector/exporter/otlpexporter"
	_ "go.opentelemetry.io/collector/exporter/otlphttpexporter"
	_ "go.opentelemetry.io/collector/extension/zpagesextension"
	_ "go.opentelemetry.io/collector/otelcol"
	_ "go.opentelemetry.io/collector/processor/batchprocessor"
	_ "go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	_ "go.opentelemetry.io/collector/receiver/otlpreceiver"
)
