// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package loadclient

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"time"
)

// OPADecisions uploads decision events as OPA's decision_logs plugin does: a gzip JSON array per upload, each
// event an AdmissionReview denial with a unique decision_id (the item's id).
var OPADecisions = Encoding{
	Name:    "opa",
	Headers: map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"},
	Build: func(runID string, first, n int, ts time.Time) Chunk {
		c := Chunk{IDs: make([]string, 0, n)}
		events := make([]string, 0, n)
		for i := first; i < first+n; i++ {
			id := fmt.Sprintf("%s-%08d", runID, i)
			c.IDs = append(c.IDs, id)
			events = append(events, opaEvent(id, i, ts))
		}
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		_, _ = w.Write([]byte("[" + strings.Join(events, ",") + "]"))
		_ = w.Close()
		c.Body = gz.Bytes()
		return c
	},
}

func opaEvent(id string, seq int, ts time.Time) string {
	return fmt.Sprintf(`{"decision_id":%q,"path":"kubernetes/admission","result":{"allowed":false},`+
		`"input":{"kind":"AdmissionReview","request":{"uid":"u-%d","operation":"CREATE","kind":{"group":"","version":"v1","kind":"Namespace"},`+
		`"name":"ns-%d","userInfo":{"username":"system:serviceaccount:ci:deployer"}}},`+
		`"timestamp":%q,"labels":{"id":"opa-testbed","version":"1.22.2"},"requested_by":"10.0.0.1:4242"}`,
		id, seq, seq, ts.UTC().Format(time.RFC3339Nano))
}
