// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"fmt"

	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// newRequestMetadata checks extra_metadata against the limits and encodes it; reason says why it cannot be
// stored. The checks run on the decoded map, before anything is built from it.
func newRequestMetadata(m map[string]string, l IngestLimits) (*store.Metadata, string) {
	if len(m) > l.MaxMetadataKeys {
		return nil, fmt.Sprintf(reasonMetadataKeys, len(m), l.MaxMetadataKeys)
	}
	size := 0
	for k, v := range m {
		size += len(k) + len(v)
	}
	if size > l.MaxMetadataBytes {
		return nil, fmt.Sprintf(reasonMetadataBytes, size, l.MaxMetadataBytes)
	}
	meta, err := store.NewMetadata(m)
	if err != nil {
		return nil, err.Error()
	}
	return meta, ""
}
