// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package storageclient opens the storage client of a component that names a storage extension in its
// configuration (`storage: file_storage`), with errors that say which extension is wrong.
package storageclient // import "github.com/otelcol-policy/otelcol-policy/internal/storageclient"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Find returns the storage extension id of host; components that open their client later (when leading) call
// it at start, so that a configuration error fails the start.
func Find(host component.Host, id component.ID) (storage.Extension, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("storage extension %s is not configured", id)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("extension %s is not a storage extension", id)
	}
	return se, nil
}

// Open opens the client of the component kind/self in the storage extension id.
func Open(ctx context.Context, host component.Host, id component.ID, kind component.Kind, self component.ID) (storage.Client, error) {
	se, err := Find(host, id)
	if err != nil {
		return nil, err
	}
	client, err := se.GetClient(ctx, kind, self, "")
	if err != nil {
		return nil, fmt.Errorf("storage client: %w", err)
	}
	return client, nil
}
