// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

func TestReadTokens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	write := func(content string) {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	}
	write("# collectors\nfirst-secret-0123456789abcdef-0123\n\n  second-secret-0123456789abcdef-012  \n#third\n" +
		"east-secret-0123456789abcdef-01234 write=east\n" +
		"gateway-secret-0123456789abcdef-012\twrite=west,south  write=north read\n" +
		"any-secret-0123456789abcdef-0123456 write=*\n" +
		"prometheus-secret-0123456789abcdef-0 read\n")
	tokens, err := readTokens(path)
	require.NoError(t, err)
	assert.Equal(t, []server.Token{
		{Secret: "first-secret-0123456789abcdef-0123", Read: true, Write: []string{"*"}, Name: path + ":2"},
		{Secret: "second-secret-0123456789abcdef-012", Read: true, Write: []string{"*"}, Name: path + ":4"},
		{Secret: "east-secret-0123456789abcdef-01234", Write: []string{"east"}, Name: path + ":6"},
		{Secret: "gateway-secret-0123456789abcdef-012", Read: true, Write: []string{"west", "south", "north"}, Name: path + ":7"},
		{Secret: "any-secret-0123456789abcdef-0123456", Write: []string{"*"}, Name: path + ":8"},
		{Secret: "prometheus-secret-0123456789abcdef-0", Read: true, Name: path + ":9"},
	}, tokens)

	for _, tt := range []struct{ content, wantErr string }{
		{"# none yet\n\n", path + " has no tokens"},
		{"ok-secret-0123456789abcdef-0123456\nsecret-0123456789abcdef-0123456789 write\n", path + `, line 2: "write": want read or write=CLUSTER[,CLUSTER...] (write=* for every cluster)`},
		{"secret-0123456789abcdef-0123456789 write=\n", path + `, line 1: "write=": want read or write=CLUSTER[,CLUSTER...] (write=* for every cluster)`},
		{"secret-0123456789abcdef-0123456789 write=a,,b\n", path + `, line 1: "write=a,,b" names an empty cluster`},
		{"secret-0123456789abcdef-0123456789 reads\n", path + `, line 1: "reads": want read or write=CLUSTER[,CLUSTER...] (write=* for every cluster)`},
	} {
		write(tt.content)
		_, err = readTokens(path)
		assert.EqualError(t, err, tt.wantErr)
		assert.NotContains(t, err.Error(), "secret", "a token is never in an error")
	}
	_, err = readTokens(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
