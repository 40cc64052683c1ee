// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package crash

import (
	"os"
	"strconv"
	"strings"
)

// processGone reports whether pid has exited (its /proc entry is gone, or it is a zombie not yet reaped).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses, which may itself contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
