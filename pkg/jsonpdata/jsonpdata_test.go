package jsonpdata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestSetValue(t *testing.T) {
	v := pcommon.NewValueEmpty()
	require.NoError(t, SetValue([]byte(`{"a":1,"b":1.5,"c":"x","d":[true,null,{"e":-7}],"f":12345678901234,"g":1e400}`), v))
	assert.Equal(t, map[string]any{
		"a": int64(1), "b": 1.5, "c": "x", "d": []any{true, nil, map[string]any{"e": int64(-7)}},
		"f": int64(12345678901234), "g": "1e400",
	}, v.Map().AsRaw())
}

func TestSetValueErrors(t *testing.T) {
	for _, bad := range []string{`{"a":`, `{} {}`, ``} {
		assert.Error(t, SetValue([]byte(bad), pcommon.NewValueEmpty()), bad)
	}
}
