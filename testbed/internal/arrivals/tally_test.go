// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package arrivals

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	accepted := []string{"a", "b", "c", "d"}
	perID := map[string]int{"a": 1, "b": 3, "d": 1, "x": 2}
	got := Count(accepted, perID)
	assert.Equal(t, Tally{
		Accepted: 4, StoredLines: 7, Distinct: 4, Duplicates: 3, DuplicatedIDs: 2, DuplicateRate: 0.75,
		Lost: []string{"c"}, Foreign: []string{"x"},
	}, got)
	assert.Equal(t, 1, Missing(accepted, perID))
	assert.Equal(t, Tally{Accepted: 0}, Count(nil, map[string]int{}), "nothing accepted, nothing stored")
}

func TestLineID(t *testing.T) {
	for _, tc := range []struct {
		name, line, want, err string
	}{
		{name: "decision", line: `{"event.name":"policy.decision","policy.decision.id":"d-1"}`, want: "d-1"},
		{name: "result", line: `{"event.name":"policy.result","policy.result.key":"k-1","policy.result.id":"i-1"}`, want: "k-1"},
		{name: "decision id wins", line: `{"policy.decision.id":"d-2","policy.result.key":"k-2"}`, want: "d-2"},
		{name: "empty id falls through", line: `{"policy.decision.id":"","policy.result.key":"k-3"}`, want: "k-3"},
		{name: "no id", line: `{"event.name":"policy.summary"}`, err: "line without policy.decision.id or policy.result.key"},
		{name: "not JSON", line: `{"policy.decision.id":`, err: "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LineID([]byte(tc.line))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadLinesNamesTheSource(t *testing.T) {
	ids, err := readLines("obj-1", strings.NewReader("{\"policy.decision.id\":\"a\"}\n{\"policy.decision.id\":\"b\"}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, ids)
	_, err = readLines("obj-2", strings.NewReader("{\"policy.decision.id\":\"a\"}\n{}\n"))
	require.ErrorContains(t, err, "obj-2: line without")
}
