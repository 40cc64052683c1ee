// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package gatekeeperexport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseExportName(t *testing.T) {
	run := time.Date(2026, 11, 24, 8, 0, 5, 0, time.UTC)
	for name, want := range map[string]string{
		// As Gatekeeper v3.23.1 names a run, and 3.24 a segment.
		"2026-11-24T08_00_05Z.log":                                            FileKindAudit,
		"admission-20261124T080005.123456789Z-0123456789abcdef.log":           FileKindAdmission,
		"admission-20261124T080005.123456789Z-0123456789abcdef.recovered.log": FileKindAdmission,
		// Not Gatekeeper's.
		"debug.log":                                       "",
		"zz.log":                                          "",
		".log":                                            "",
		"2026-11-24T08:00:05Z.log":                        "",
		"2026-11-24T08_00_05.5Z.log":                      "",
		"2026-11-24T08_00_05+00_00.log":                   "",
		"2026-11-24t08_00_05z.log":                        "",
		"2026-11-24T8_00_05Z.log":                         "",
		"2026-02-30T08_00_05Z.log":                        "",
		"2026-11-24T08_00_05Z.log.log":                    "",
		" 2026-11-24T08_00_05Z.log":                       "",
		"2026-11-24T08_00_05Z.txt":                        "",
		"admission-x.log":                                 "",
		"admission-20261124T080005Z-0123456789abcdef.log": "",
		"admission-20261124T080005.123456789Z-0123456789ABCDEF.log":          "",
		"admission-20261124T080005.123456789Z-0123456789abcde.log":           "",
		"admission-20261124T080005.123456789Z-0123456789abcdef.open":         "",
		"admission-20261124T080005.123456789Z-0123456789abcdef.log.deleting": "",
		"admission-20261124T080005.123456789Z-0123456789abcdef.other.log":    "",
	} {
		kind, at := ParseName(name)
		assert.Equal(t, want, kind, name)
		if want == FileKindAudit {
			assert.Equal(t, run, at, name)
		}
	}
}

func TestAuditRunsCompareAsTimes(t *testing.T) {
	assert.True(t, AuditRunAfter("2026-11-24T08_00_06Z.log", "2026-11-24T08_00_05Z.log"))
	assert.False(t, AuditRunAfter("2026-11-24T08_00_05Z.log", "2026-11-24T08_00_05Z.log"))
	assert.True(t, AuditRunAfter("2026-11-24T08_00_05Z.log", ""), "every run is after none")
	assert.False(t, AuditRunAfter("zz.log", "2026-11-24T08_00_05Z.log"), "a name that is no run is after none")
	assert.Equal(t, "2026-11-24T08:00:05Z", AuditRunID("2026-11-24T08_00_05Z.log"))
}
