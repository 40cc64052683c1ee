// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package gatekeeperexport // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"

import "errors"

// ErrNotRegular is a file of the export directory that is no regular file when opened.
var ErrNotRegular = errors.New("not a regular file")
