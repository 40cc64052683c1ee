// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked")

// flock is not available: the live-listener probe alone keeps a second collector off a served path.
func flock(*os.File) error { return nil }
