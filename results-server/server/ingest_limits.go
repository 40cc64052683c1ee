// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import "time"

// Defaults of IngestLimits. A results_grpc exporter on its defaults sends a few keys of extra_metadata, and
// bodies of some KiB (a report's result, a vulnerability) nested a dozen levels at most (an admission request's
// object inside a decision).
const (
	DefaultMaxMetadataKeys  = 64
	DefaultMaxMetadataBytes = 16 << 10
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxBodyDepth     = 64
	// Kubernetes names are at most 253 bytes, and policies', rules' and packages' names shorter still; a
	// message is a sentence or a list of the fields that failed.
	DefaultMaxFieldBytes   = 1 << 10
	DefaultMaxMessageBytes = 16 << 10
	DefaultMaxClockSkew    = 5 * time.Minute
	// A collector forwards one cluster, a gateway in front of several collectors some tens: 100 clusters per
	// token keeps one token from filling every page with clusters of one result each.
	DefaultMaxClustersPerToken = 100
	// The largest clusters hold some hundreds of thousands of results (one per vulnerable package of every
	// image).
	DefaultMaxKeysPerToken = 1_000_000
)

// IngestLimits bound what the results of one request, and one token over time, can make the database hold and
// the fleet view show. A zero field takes its default. A result over a limit is rejected with a reason (the
// others of its request are stored) and counted in results_server_results_rejected_total.
type IngestLimits struct {
	// MaxMetadataKeys and MaxMetadataBytes (its keys and values together) bound a request's extra_metadata; the
	// results of a request over either are all rejected.
	MaxMetadataKeys, MaxMetadataBytes int
	// MaxBodyBytes and MaxBodyDepth bound a result's body_json, in bytes and in nesting of arrays and objects.
	MaxBodyBytes, MaxBodyDepth int
	// MaxMessageBytes bounds a result's message, MaxFieldBytes each of its other text fields (names, cluster,
	// vulnerability and package fields): every list page shows them, so they, not the body, make its size.
	MaxMessageBytes, MaxFieldBytes int
	// MaxClockSkew is how far ahead of this server's clock a result's time may be and still order the result's
	// outcomes; a later time orders it as if it were received now (see toRow).
	MaxClockSkew time.Duration
	// MaxClustersPerToken is the most clusters one token may write results of; MaxKeysPerToken the most
	// results (keys) those clusters may hold. Without tokens there is no quota.
	MaxClustersPerToken int
	MaxKeysPerToken     int64
}

func (l IngestLimits) withDefaults() IngestLimits {
	l.MaxMetadataKeys = orDefault(l.MaxMetadataKeys, DefaultMaxMetadataKeys)
	l.MaxMetadataBytes = orDefault(l.MaxMetadataBytes, DefaultMaxMetadataBytes)
	l.MaxBodyBytes = orDefault(l.MaxBodyBytes, DefaultMaxBodyBytes)
	l.MaxBodyDepth = orDefault(l.MaxBodyDepth, DefaultMaxBodyDepth)
	l.MaxMessageBytes = orDefault(l.MaxMessageBytes, DefaultMaxMessageBytes)
	l.MaxFieldBytes = orDefault(l.MaxFieldBytes, DefaultMaxFieldBytes)
	l.MaxClockSkew = orDefault(l.MaxClockSkew, DefaultMaxClockSkew)
	l.MaxClustersPerToken = orDefault(l.MaxClustersPerToken, DefaultMaxClustersPerToken)
	l.MaxKeysPerToken = orDefault(l.MaxKeysPerToken, DefaultMaxKeysPerToken)
	return l
}

// Validate refuses negative limits.
func (l IngestLimits) Validate() error {
	return notNegative(
		namedValue{"max metadata keys", int64(l.MaxMetadataKeys)}, namedValue{"max metadata bytes", int64(l.MaxMetadataBytes)},
		namedValue{"max body bytes", int64(l.MaxBodyBytes)}, namedValue{"max body depth", int64(l.MaxBodyDepth)},
		namedValue{"max message bytes", int64(l.MaxMessageBytes)}, namedValue{"max field bytes", int64(l.MaxFieldBytes)},
		namedValue{"max clock skew", int64(l.MaxClockSkew)},
		namedValue{"max clusters per token", int64(l.MaxClustersPerToken)},
		namedValue{"max keys per token", l.MaxKeysPerToken})
}
