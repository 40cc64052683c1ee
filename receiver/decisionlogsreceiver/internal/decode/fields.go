// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"strings"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
)

// stringField reads a field that must be a string; null counts as absent, as in encoding/json.
func stringField(field string, v []byte) (string, error) {
	if s, ok := jsonscan.String(v); ok {
		return s, nil
	}
	if string(v) == "null" {
		return "", nil
	}
	return "", fieldTypeError(field, "a string", v)
}

// nonNullJSON turns a JSON null into no value.
func nonNullJSON(v []byte) []byte {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// joinAPIVersion joins a group and a version as Kubernetes writes apiVersion: the core group has none.
func joinAPIVersion(group, version string) string {
	if group == "" || version == "" || strings.Contains(version, "/") {
		return version
	}
	return group + "/" + version
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// firstPresent is the first value that is neither missing nor null.
func firstPresent(vs ...[]byte) []byte {
	for _, v := range vs {
		if len(v) > 0 && string(v) != "null" {
			return v
		}
	}
	return nil
}
