// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSummaryRow(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       deliveryRow
	}{
		{
			name: "crash-full",
			json: `{"accepted":120000,"distinct_ids":120000,"duplicate_lines":2,"kills":6,"restart_s":[0.11,0.2],
				"drain_s":8.7,"peak_rss_mb":70.6,"client":{"status_503":0}}`,
			want: deliveryRow{Run: "crash-full", Accepted: "120,000", Arrived: "120,000", Lost: "0", Duplicates: "2",
				PeakRSS: "70.6 MB", Figures: "6 SIGKILLs, healthy again within 0.2 s; all stored 8.70 s after the stream"},
		},
		{
			name: "outage-results_grpc-full",
			json: `{"accepted":82500,"distinct_ids":82499,"lost":["x"],"duplicate_lines":0,"duplicates_visible":false,
				"outage_s":120,"queue_full_after_s":36,"first_push_back_s":39.9,"client":{"status_503":169},
				"peak_queue_bytes":16740481,"queue_capacity_bytes":16777216,"peak_storage_disk_mb":17.9,
				"caught_up_after_s":-1,"all_arrived_after_s":31.7}`,
			want: deliveryRow{Run: "outage-results_grpc-full", Accepted: "82,500", Arrived: "82,499", Lost: "1",
				Duplicates: "not visible (one row per key)", PeakRSS: "–",
				Figures: "120 s outage; queue full 36 s into it; first 503 at 39.9 s; 169 uploads refused with 503 and retried; " +
					"queue peak 99.8 % of its 16 MiB bound; storage on disk ≤ 17.9 MB; all arrived 31.7 s after it"},
		},
		{
			name: "outage-opa-full",
			json: `{"accepted":78025,"distinct_ids":78025,"duplicate_lines":0,"outage_s":120,"receiver_refused_records":4218}`,
			want: deliveryRow{Run: "outage-opa-full", Accepted: "78,025", Arrived: "78,025", Lost: "0", Duplicates: "0",
				PeakRSS: "–", Figures: "120 s outage; 4,218 decisions refused with 503 and uploaded again by OPA"},
		},
		{
			name: "restart-1000-reports",
			json: `{"expected":300,"records_after_restart":301,"unexpected":1,"expected_after_s":1.31}`,
			want: deliveryRow{Run: "restart-1000-reports", Accepted: "300 expected", Arrived: "301", Lost: "0",
				Duplicates: "1 unexpected", PeakRSS: "–", Figures: "all expected records 1.31 s after the start"},
		},
		{
			name: "handover-full",
			json: `{"scale":"full","reports":10000,"results":190000,"distinct_results":190000,"missing":0,"duplicates":1003,
				"duplicates_reemitted":1003,"duplicates_replayed":[0,0],"duplicates_reemitted_bound":1018,
				"duplicates_replayed_bound":19990,"a_exported_at_kill":57000,"b_leads_s":6.2,"b_first_export_s":7.05,
				"all_exported_s":21.4,"summaries_match_uninterrupted":true,"gauges_match_uninterrupted":false,"peak_rss_mb":201.3}`,
			want: deliveryRow{Run: "handover-full", Accepted: "190,000 results", Arrived: "190,000", Lost: "0",
				Duplicates: "1,003 re-emitted (≤ 1,018), 0 replayed (≤ 19,990)", PeakRSS: "201 MB",
				Figures: "leader SIGKILLed with 30 % exported; the other leads 6.20 s after the kill; exports 7.05 s after it; " +
					"every result exported 21.4 s after it; summaries equal to, gauges **differ** from an uninterrupted run's"},
		},
		{
			name: "handover-small",
			json: `{"results":19000,"distinct_results":18999,"missing":1,"duplicates_reemitted":0,"duplicates_replayed":[1000,0],
				"duplicates_reemitted_bound":1018,"duplicates_replayed_bound":19990,"summaries_match_uninterrupted":true,
				"gauges_match_uninterrupted":true}`,
			want: deliveryRow{Run: "handover-small", Accepted: "19,000 results", Arrived: "18,999", Lost: "1",
				Duplicates: "0 re-emitted (≤ 1,018), 1,000 replayed (≤ 19,990)", PeakRSS: "–",
				Figures: "summaries and gauges equal to an uninterrupted run's"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(tc.json), &m); err != nil {
				t.Fatal(err)
			}
			if got := summaryRow(tc.name, m); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDeliverySummaryTable(t *testing.T) {
	ds := []deliveryResult{{Package: "crash", Present: true, Passed: true, Files: []resultFile{
		{Name: "crash-full.json", Data: json.RawMessage(`{"accepted":3,"distinct_ids":3,"duplicate_lines":0}`)},
		{Name: "broken.json", Data: json.RawMessage(`[1,2]`)},
	}}}
	var b bytes.Buffer
	writeDeliverySummary(&b, ds)
	md := b.String()
	for _, want := range []string{
		"| run | accepted | arrived | lost | duplicates | peak RSS | how it went |",
		"| crash-full | 3 | 3 | 0 | 0 | – |  |",
		"| broken |  |  |  |  |  | unreadable: ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}

func TestSummaryLeavesOutAttacks(t *testing.T) {
	rows := summaryRows([]deliveryResult{{Package: "hostile", Present: true, Passed: true, Files: []resultFile{
		{Name: "hostile-gzip_bomb-default-full.json", Data: json.RawMessage(`{"attack":"gzip_bomb","config":"default","peak_rss_mib":81.5,"bound_mib":256}`)},
	}}})
	if len(rows) != 0 {
		t.Errorf("an attack in the delivery summary: %+v", rows)
	}
}
