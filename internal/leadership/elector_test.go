// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package leadership

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
)

type host struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

type elector struct{ component.Component }

func (elector) SetCallBackFuncs(func(context.Context), func()) {}

func TestFind(t *testing.T) {
	id, other := component.MustNewID("k8s_leader_elector"), component.MustNewID("file_storage")
	h := host{exts: map[component.ID]component.Component{id: elector{}, other: struct{ component.Component }{}}}
	el, err := Find(h, id)
	require.NoError(t, err)
	assert.Equal(t, elector{}, el)

	_, err = Find(h, other)
	assert.EqualError(t, err, "extension file_storage is not a k8s_leader_elector")
	_, err = Find(h, component.MustNewIDWithName("k8s_leader_elector", "missing"))
	assert.EqualError(t, err, "k8s_leader_elector extension k8s_leader_elector/missing is not configured")
}
