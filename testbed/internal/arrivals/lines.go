// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package arrivals

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// LineID is the item id of one JSON line (docs/json-lines.md), as the load client named the item: the decision
// id of a decision, the result key of a result.
func LineID(line []byte) (string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return "", err
	}
	for _, attr := range []string{policyresult.AttrDecisionID, policyresult.AttrResultKey} {
		var id string
		if raw, ok := fields[attr]; ok && json.Unmarshal(raw, &id) == nil && id != "" {
			return id, nil
		}
	}
	return "", fmt.Errorf("line without %s or %s: %.200s", policyresult.AttrDecisionID, policyresult.AttrResultKey, line)
}

// readLines returns the item ids of the JSON lines in r; name is where they come from, for errors.
func readLines(name string, r io.Reader) ([]string, error) {
	var ids []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		id, err := LineID(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ids, nil
}
