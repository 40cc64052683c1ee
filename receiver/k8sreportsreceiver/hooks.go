// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import "k8s.io/apimachinery/pkg/runtime/schema"

// hooks tell tests what the receiver has done, so that they wait for it instead of sleeping; both are nil
// outside tests. A test that knows the resource version of a change, and sees the watcher progress past it
// and then the emitter idle, knows that every record the change causes has been delivered.
type hooks struct {
	// progressed is called by a watcher each time it has handed the tracker everything of gvr up to resource
	// version rv: after a complete list and after each watch event.
	progressed func(gvr schema.GroupVersionResource, rv string)
	// idle is called, with the tracker locked, each time the emitter waits with nothing to do.
	idle func()
}
