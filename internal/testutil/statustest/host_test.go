// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package statustest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
)

func TestHostRecordsStatuses(t *testing.T) {
	id := component.MustNewID("file_storage")
	ext := map[component.ID]component.Component{id: nil}
	h := NewHost(ext)
	assert.Equal(t, ext, h.GetExtensions())
	assert.Nil(t, h.Last())

	// Reported from another goroutine, as components do: Next waits for each in order.
	fault := errors.New("directory unreadable")
	go func() {
		componentstatus.ReportStatus(h, componentstatus.NewEvent(componentstatus.StatusStarting))
		componentstatus.ReportStatus(h, componentstatus.NewRecoverableErrorEvent(fault))
		componentstatus.ReportStatus(h, componentstatus.NewEvent(componentstatus.StatusOK))
	}()
	assert.Equal(t, componentstatus.StatusStarting, h.Next(t).Status())
	ev := h.Next(t)
	assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
	require.ErrorIs(t, ev.Err(), fault)
	assert.Equal(t, componentstatus.StatusOK, h.Next(t).Status())
	assert.Equal(t, componentstatus.StatusOK, h.Last().Status())
}

func TestNewHostWithoutExtensions(t *testing.T) {
	assert.Empty(t, NewHost(nil).GetExtensions())
	assert.NotNil(t, NewHost(nil).GetExtensions(), "a test may add extensions")
}
