// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package freeport

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPortsAreDistinctAndBindable: the ports differ from each other and from earlier calls, lie outside the
// ephemeral range, and can be bound.
func TestPortsAreDistinctAndBindable(t *testing.T) {
	a, err := Ports(20)
	require.NoError(t, err)
	b, err := Ports(20)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range append(a, b...) {
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		assert.True(t, p >= first && p < last, "port %d outside %d-%d", p, first, last)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
}

// TestPortsAreClaimedAcrossProcesses: a second process is never given a port this one holds.
func TestPortsAreClaimedAcrossProcesses(t *testing.T) {
	if os.Getenv("FREEPORT_CHILD") != "" {
		ports, err := Ports(2000)
		require.NoError(t, err)
		var s []string
		for _, p := range ports {
			s = append(s, strconv.Itoa(p))
		}
		_, _ = os.Stdout.WriteString("PORTS " + strings.Join(s, ",") + "\n")
		return
	}
	mine, err := Ports(2000)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPortsAreClaimedAcrossProcesses$")
	cmd.Env = append(os.Environ(), "FREEPORT_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	_, list, ok := strings.Cut(string(out), "PORTS ")
	require.True(t, ok, string(out))
	held := map[int]bool{}
	for _, p := range mine {
		held[p] = true
	}
	theirs := strings.Split(strings.Fields(list)[0], ",")
	require.Len(t, theirs, 2000)
	for _, s := range theirs {
		p, err := strconv.Atoi(s)
		require.NoError(t, err)
		assert.False(t, held[p], "port %d given to both processes", p)
	}
}
