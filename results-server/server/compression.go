// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server // import "github.com/otelcol-policy/otelcol-policy/results-server/server"

// The collector's gRPC client settings offer gzip, zstd and snappy compression; a server that cannot decompress
// one answers UNIMPLEMENTED, which the results_grpc exporter must treat as permanent, dropping results. configgrpc
// registers the decompressors of all three with grpc-go, the same ones the exporter compresses with.
import _ "go.opentelemetry.io/collector/config/configgrpc"
