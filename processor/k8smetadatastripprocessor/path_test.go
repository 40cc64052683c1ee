// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePath(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want path
	}{
		{in: "status", want: path{{key: "status"}}},
		{in: "metadata.uid", want: path{{key: "metadata"}, {key: "uid"}}},
		{in: "metadata.ownerReferences[].uid", want: path{{key: "metadata"}, {key: "ownerReferences"}, {each: true}, {key: "uid"}}},
		{
			in:   `metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`,
			want: path{{key: "metadata"}, {key: "annotations"}, {key: "kubectl.kubernetes.io/last-applied-configuration"}},
		},
		{in: `["a.b"].c`, want: path{{key: "a.b"}, {key: "c"}}},
		{in: `spec.matrix[][].cell`, want: path{{key: "spec"}, {key: "matrix"}, {each: true}, {each: true}, {key: "cell"}}},
		{in: `data["x/y"]["z"].w`, want: path{{key: "data"}, {key: "x/y"}, {key: "z"}, {key: "w"}}},
		{in: `items[]["example.com/x"]`, want: path{{key: "items"}, {each: true}, {key: "example.com/x"}}},
		{in: "spec.f-g_h:i", want: path{{key: "spec"}, {key: "f-g_h:i"}}},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parsePath(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParsePathErrors(t *testing.T) {
	for _, tt := range []struct{ in, err string }{
		{in: "", err: "path is empty"},
		{in: ".uid", err: `path ".uid": empty key at offset 0`},
		{in: "metadata..uid", err: `path "metadata..uid": empty key at offset 9`},
		{in: "metadata.", err: `path "metadata.": empty key at offset 9`},
		{in: "metadata.ownerReferences[]", err: `path "metadata.ownerReferences[]": must end with a key, not []`},
		{in: "[].uid", err: `path "[].uid": [] must follow a key, at offset 0`},
		{in: "a.[].b", err: `path "a.[].b": [] must follow a key, at offset 2`},
		{in: `metadata.annotations["example.com/x`, err: `path "metadata.annotations[\"example.com/x": unterminated quote at offset 21`},
		{in: `metadata.annotations["example.com/x"`, err: `path "metadata.annotations[\"example.com/x\"": expected ] after the quoted key at offset 36`},
		{in: `metadata.annotations["example.com/x"]x`, err: `path "metadata.annotations[\"example.com/x\"]x": unexpected 'x' at offset 37`},
		{in: `metadata.annotations.["example.com/x"]`, err: `path "metadata.annotations.[\"example.com/x\"]": a quoted key follows the key before it without a dot, as a["b"], at offset 21`},
		{in: `metadata.annotations[""]`, err: `path "metadata.annotations[\"\"]": empty key at offset 20`},
		{in: "metadata.annotations[0]", err: `path "metadata.annotations[0]": expected [] or ["key"] at offset 20`},
		{in: "metadata.annotations.example.com/x", err: `path "metadata.annotations.example.com/x": a key with a slash must be quoted, as a["b.c/d"], at offset 32`},
		{in: "metadata]", err: `path "metadata]": unexpected ']' at offset 8`},
		{in: `meta"data`, err: `path "meta\"data": unexpected '"' at offset 4`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := parsePath(tt.in)
			require.EqualError(t, err, tt.err)
		})
	}
}
