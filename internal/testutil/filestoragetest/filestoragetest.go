// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package filestoragetest runs the contrib file_storage extension in tests, as the collector would, so that
// components are tested against the storage they use in production.
package filestoragetest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
)

// ID is the extension's ID in Host.
var ID = component.MustNewID("file_storage")

// Start starts a file_storage extension on dir; the caller shuts it down.
func Start(t testing.TB, dir string) extension.Extension {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	return ext
}

// NewReplicaHost starts a file_storage extension on dir, shut down when the test ends, and returns a host with
// it under ID and the extensions ext: one replica of several that share dir, each a process of its own that
// locks the file of a component while it has it open.
func NewReplicaHost(t testing.TB, dir string, ext map[component.ID]component.Component) *statustest.Host {
	t.Helper()
	storage := Start(t, dir)
	t.Cleanup(func() { require.NoError(t, storage.Shutdown(context.Background())) })
	h := statustest.NewHost(ext)
	h.Extensions[ID] = storage
	return h
}

// Host is a host whose only extension is ext, under ID.
type Host struct {
	component.Host
	Ext extension.Extension
}

// NewHost starts a file_storage extension on dir and returns a host holding it.
func NewHost(t testing.TB, dir string) Host {
	return Host{Host: componenttest.NewNopHost(), Ext: Start(t, dir)}
}

// GetExtensions returns the file_storage extension under ID.
func (h Host) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{ID: h.Ext}
}
