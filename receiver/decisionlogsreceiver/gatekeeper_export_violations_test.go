// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

// gkViolationsOf builds the violations of the run from Gatekeeper's lines.
func gkViolationsOf(t testing.TB, run string, lines ...[]byte) *gkViolations {
	t.Helper()
	b := newViolationsBuilder(run)
	for _, line := range lines {
		ev, err := decode.Gatekeeper(bytes.Clone(line))
		require.NoError(t, err)
		b.add(ev.Decision.ViolationHashes().Key, &ev.Decision)
	}
	return b.build()
}

// A violation kept is what its resolved record is written from: the record decodes to the decision of its last
// event, less the time and ID of that event.
func TestKeptViolationsDecodeAsTheirEvents(t *testing.T) {
	fixtures := []string{"gatekeeper_audit.json", "gatekeeper_scoped.json", "gatekeeper_log_audit.json"}
	var lines [][]byte
	for _, f := range fixtures {
		lines = append(lines, fixture(t, f))
	}
	lines = append(lines, []byte(auditViolation(runAt(0), "c1", "", "cluster-wide", "")))
	v := gkViolationsOf(t, runAt(0), lines...)
	require.Equal(t, len(lines)-1, v.len(), "the audit log line and the export message of one violation are one")
	stored, err := unmarshalViolations(v.marshal())
	require.NoError(t, err)
	assert.Equal(t, v, stored, "the stored form reads back")

	for _, line := range lines {
		ev, err := decode.Gatekeeper(bytes.Clone(line))
		require.NoError(t, err)
		key := ev.Decision.ViolationHashes().Key
		i, ok := stored.find(key)
		require.True(t, ok, "%s", line)
		a := &auditChanges{prev: stored, runID: runAt(1), complete: true}
		got, err := a.resolvedEvent(i)
		require.NoError(t, err, "%s", line)
		want := ev.Decision
		want.Timestamp, want.ID = got.Decision.Timestamp, got.Decision.ID
		assert.Equal(t, want, got.Decision, "%s", line)
		assert.Equal(t, policyresult.StateResolved, got.State)
		var body map[string]any
		require.NoError(t, json.Unmarshal(got.Body, &body))
		assert.Equal(t, runAt(0), body["id"], "the run that reported it last")
	}
}

func TestKeptViolationsOfOneKeyAreTheLastOnes(t *testing.T) {
	r := runAt(0)
	v := gkViolationsOf(t, r, []byte(auditViolation(r, "c1", "shop", "a", "deny")),
		[]byte(auditViolation(r, "c1", "shop", "b", "deny")), []byte(auditViolation(r, "c1", "shop", "a", "warn")))
	require.Equal(t, 2, v.len())
	ev, err := decode.Gatekeeper([]byte(auditViolation(r, "c1", "shop", "a", "deny")))
	require.NoError(t, err)
	i, ok := v.find(ev.Decision.ViolationHashes().Key)
	require.True(t, ok)
	assert.Equal(t, policyresult.ActionWarn, v.action(i))
}

// Damaged stored violations are an error, whatever the damage: never a panic, nor an allocation the bytes do
// not hold.
func TestDamagedViolationsAreErrors(t *testing.T) {
	r := runAt(0)
	good := gkViolationsOf(t, r, []byte(auditViolation(r, "c1", "shop", "a", "deny")),
		[]byte(auditViolation(r, "c1", "shop", "b", "deny"))).marshal()
	for i := range len(good) {
		_, err := unmarshalViolations(good[:i])
		assert.ErrorIs(t, err, errDamaged, "cut at %d", i)
	}
	for i := range len(good) {
		damaged := bytes.Clone(good)
		damaged[i] ^= 0x20
		_, err := unmarshalViolations(damaged)
		assert.ErrorIs(t, err, errDamaged, "byte %d changed", i)
	}
	withCRC := func(s string) []byte {
		return binary.BigEndian.AppendUint32([]byte(s), crc32.Checksum([]byte(s), crcTable))
	}
	_, err := unmarshalViolations(withCRC(violationsFormat + "\x14" + r + "\xff\xff\xff\xff\x0f"))
	assert.ErrorIs(t, err, errDamaged, "a count larger than the bytes left")
	_, err = unmarshalViolations(withCRC(violationsFormat + "\x14" + r + "\x01\x00\x01" + string(make([]byte, 16)) + "\x05\x00\x00\x00\x00\x00\x00\x00\x00"))
	assert.ErrorIs(t, err, errDamaged, "an index past the strings")
	_, err = unmarshalViolations([]byte(`{"00112233445566778899aabbccddeeff":{}}`))
	assert.ErrorIs(t, err, errDamaged, "the former JSON form")
}

// FuzzUnmarshalViolations checksums what it is given, so that the reading is exercised past the checksum.
func FuzzUnmarshalViolations(f *testing.F) {
	r := runAt(0)
	good := gkViolationsOf(f, r, []byte(auditViolation(r, "c1", "shop", "a", "deny")),
		[]byte(auditViolation(r, "c1", "shop", "b", "warn"))).marshal()
	f.Add(good[:len(good)-crc32.Size])
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, crcTable))
		v, err := unmarshalViolations(b)
		if err != nil {
			return
		}
		a := &auditChanges{prev: v, runID: runAt(1), complete: true}
		for i := range v.len() {
			_, _ = a.resolvedEvent(i)
		}
		again, err := unmarshalViolations(v.marshal())
		require.NoError(t, err)
		assert.Equal(t, v, again, "what reads back writes what reads back the same")
	})
}
