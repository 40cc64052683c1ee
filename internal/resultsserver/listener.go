// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"net"

	"github.com/otelcol-policy/otelcol-policy/internal/connlimit"
)

// LimitListener serves at most max connections of l at once; one more is closed as it comes and counted in
// results_server_connections_refused_total{listener=name}.
func (s *Server) LimitListener(l net.Listener, max int, name Listener) net.Listener {
	return connlimit.Listener(l, max, func() { s.metrics.connectionsRefused[name].Add(1) })
}
