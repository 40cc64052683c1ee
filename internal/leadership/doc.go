// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package leadership is what the components that follow a k8s_leader_elector share: the elector they register
// with, and the one way a replica that starts leading takes over the state the previous leader left in a shared
// storage. The extension (extension/k8sleaderelectorextension) implements Elector; components find it here, so
// that nothing below the components depends on an extension.
package leadership // import "github.com/otelcol-policy/otelcol-policy/internal/leadership"
