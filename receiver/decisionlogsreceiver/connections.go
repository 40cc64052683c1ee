// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
)

// connectionLimits are a listener's bounds on its connections (pkg/connlimit): a connection is silent
// until it proved a producer (the OPA endpoint: a request through its auth; a stream: a complete line), and
// silent connections give way to new ones.
type connectionLimits struct {
	max, maxSilentPerSource int
	firstTimeout            time.Duration
	// timeoutReason counts a connection closed at firstTimeout: first_request_timeout or first_line_timeout.
	timeoutReason string
}

// limitConnections wraps ln in lim, counting what it closes in otelcol_receiver_decision_logs_rejected with
// reason too_many_connections (none silent to give way), evicted or lim.timeoutReason.
func (r *decisionsReceiver) limitConnections(ln net.Listener, listener string, lim *logLimiter, c connectionLimits) net.Listener {
	return connlimit.New(ln, connlimit.Config{Max: c.max, MaxSilentPerSource: c.maxSilentPerSource,
		SilentTimeout: c.firstTimeout, Closed: func(reason connlimit.Reason) {
			switch reason {
			case connlimit.Refused:
				r.rejected(lim, listener, "too_many_connections", 1, zap.Int("max_connections", c.max))
			case connlimit.Evicted:
				r.rejected(lim, listener, "evicted", 1, zap.Int("max_connections", c.max),
					zap.Int("max_silent_connections_per_source", c.maxSilentPerSource))
			case connlimit.TimedOut:
				r.rejected(lim, listener, c.timeoutReason, 1, zap.Duration(c.timeoutReason, c.firstTimeout))
			}
		}})
}
