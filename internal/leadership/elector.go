// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package leadership // import "github.com/otelcol-policy/otelcol-policy/internal/leadership"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
)

// Elector is what components use of a k8s_leader_elector: register callbacks run when this replica starts
// leading (with a context cancelled when it stops) and when it stops leading. Callbacks registered while leading
// start at once.
//
// The callbacks run one at a time: the start callbacks in the order of registration, the stop callbacks in the
// reverse order, once every start callback of the leadership returned. The collector starts its components
// downstream first (exporters, then processors, then receivers), so a receiver starts to lead only after the
// components it feeds lead, and stops before them: no record reaches a component that does not lead.
type Elector interface {
	SetCallBackFuncs(onStartLeading func(context.Context), onStopLeading func())
}

// Find returns the leader elector id of host, for a component's Start.
func Find(host component.Host, id component.ID) (Elector, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("k8s_leader_elector extension %s is not configured", id)
	}
	le, ok := ext.(Elector)
	if !ok {
		return nil, fmt.Errorf("extension %s is not a k8s_leader_elector", id)
	}
	return le, nil
}
