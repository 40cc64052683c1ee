// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

// MaxReconnectDelay is maxReconnectDelay for the tests of package resultsgrpcexporter_test, which start the
// exporter with resultsgrpctest (a package that imports this one).
const MaxReconnectDelay = maxReconnectDelay
