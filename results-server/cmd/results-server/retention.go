// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// retentionOptions are serve's retention flags. Both retentions default to 0, keeping everything: deleting data
// is the operator's decision, and how long an audit trail must be kept differs between organisations.
type retentionOptions struct {
	history, resolved days
	interval          time.Duration
}

func (o *retentionOptions) register(fs *flag.FlagSet) {
	fs.Var(&o.history, "history-retention",
		"how long result_history keeps an outcome after it was received, e.g. 90d or 2160h (0: forever)")
	fs.Var(&o.resolved, "resolved-retention",
		"how long a result whose latest state is resolved stays in the current results, e.g. 30d (0: forever)")
	fs.DurationVar(&o.interval, "retention-interval", server.DefaultRetentionInterval,
		"time between two prunes of the retention")
}

func (o *retentionOptions) validate() error {
	if o.interval <= 0 {
		return errors.New("--retention-interval must be positive")
	}
	return nil
}

func (o *retentionOptions) config() server.Retention {
	return server.Retention{History: time.Duration(o.history), Resolved: time.Duration(o.resolved),
		Interval: o.interval}
}

// days is a flag.Value of a non-negative duration: a Go duration (720h, 90m) or a whole number of days (90d).
type days time.Duration

func (d *days) String() string {
	if d == nil || *d == 0 {
		return "0"
	}
	if time.Duration(*d)%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(time.Duration(*d)/(24*time.Hour)), 10) + "d"
	}
	return time.Duration(*d).String()
}

func (d *days) Set(s string) error {
	v, err := parseDays(s)
	if err != nil {
		return err
	}
	*d = days(v)
	return nil
}

func parseDays(s string) (time.Duration, error) {
	var v time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		count, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: want a whole number of days (90d) or a Go duration (720h)", s)
		}
		if count > int64(math.MaxInt64/(24*time.Hour)) || count < -int64(math.MaxInt64/(24*time.Hour)) {
			return 0, fmt.Errorf("%q: too long", s)
		}
		v = time.Duration(count) * 24 * time.Hour
	} else {
		var err error
		if v, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q: want a whole number of days (90d) or a Go duration (720h)", s)
		}
	}
	if v < 0 {
		return 0, fmt.Errorf("%q: must not be negative", s)
	}
	return v, nil
}
