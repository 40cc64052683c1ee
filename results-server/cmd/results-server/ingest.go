// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"

	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// ingestOptions are serve's bounds on what results and tokens may store (server.IngestLimits).
type ingestOptions struct {
	limits server.IngestLimits
}

func (o *ingestOptions) register(fs *flag.FlagSet) {
	l := &o.limits
	fs.IntVar(&l.MaxMetadataKeys, "max-metadata-keys", server.DefaultMaxMetadataKeys,
		"most keys of a request's extra_metadata; the results of a request with more are rejected")
	fs.IntVar(&l.MaxMetadataBytes, "max-metadata-bytes", server.DefaultMaxMetadataBytes,
		"most bytes of a request's extra_metadata keys and values; the results of a request with more are rejected")
	fs.IntVar(&l.MaxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes,
		"largest body_json of a result; a larger one is rejected")
	fs.IntVar(&l.MaxBodyDepth, "max-body-depth", server.DefaultMaxBodyDepth,
		"deepest nesting of arrays and objects in a result's body_json; a deeper one is rejected")
	fs.IntVar(&l.MaxMessageBytes, "max-message-bytes", server.DefaultMaxMessageBytes,
		"largest message of a result; a larger one is rejected")
	fs.IntVar(&l.MaxFieldBytes, "max-field-bytes", server.DefaultMaxFieldBytes,
		"largest other text field of a result (names, cluster, package fields); a larger one is rejected")
	fs.DurationVar(&l.MaxClockSkew, "max-clock-skew", server.DefaultMaxClockSkew,
		"a result whose time is further ahead of the server's clock is ordered by when it arrived")
	fs.IntVar(&l.MaxClustersPerToken, "max-clusters-per-token", server.DefaultMaxClustersPerToken,
		"most clusters one token may write results of")
	fs.Int64Var(&l.MaxKeysPerToken, "max-keys-per-token", server.DefaultMaxKeysPerToken,
		"most results (keys) the clusters one token wrote may hold")
}

// validate refuses limits that are not positive: zero would not mean "no limit".
func (o *ingestOptions) validate() error {
	l := o.limits
	return errors.Join(positive([]flagValue{
		{"max-metadata-keys", int64(l.MaxMetadataKeys)}, {"max-metadata-bytes", int64(l.MaxMetadataBytes)},
		{"max-body-bytes", int64(l.MaxBodyBytes)}, {"max-body-depth", int64(l.MaxBodyDepth)},
		{"max-message-bytes", int64(l.MaxMessageBytes)}, {"max-field-bytes", int64(l.MaxFieldBytes)},
		{"max-clock-skew", int64(l.MaxClockSkew)}, {"max-clusters-per-token", int64(l.MaxClustersPerToken)},
		{"max-keys-per-token", l.MaxKeysPerToken},
	})...)
}
