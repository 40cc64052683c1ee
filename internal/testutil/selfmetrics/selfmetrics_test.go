// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package selfmetrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// What the collector's Prometheus exporter serves, abridged, with the traps: a longer metric sharing the
// prefix, label values with spaces and braces, a timestamp, comments.
const exposition = `# HELP otelcol_exporter_sent_log_records_total Number of log record successfully sent to destination.
# TYPE otelcol_exporter_sent_log_records_total counter
otelcol_exporter_sent_log_records_total{exporter="s3",service_name="otelcol-policy"} 1200
otelcol_exporter_sent_log_records_total{exporter="debug",service_name="otelcol-policy"} 34 1763800000000
otelcol_exporter_sent_log_records_bytes_total{exporter="s3"} 999999
otelcol_receiver_accepted_log_records_total{receiver="decision_logs",transport="unix"} 10
otelcol_receiver_accepted_log_records_total{receiver="decision_logs",transport="http"} 20
otelcol_receiver_accepted_log_records_total{receiver="otlp",transport="http",note="a {b} c"} 40
otelcol_exporter_queue_size{exporter="s3"} 7
otelcol_exporter_queue_size{exporter="kafka"} 5
process_uptime 12.5
`

func TestSumMetric(t *testing.T) {
	for _, tc := range []struct {
		name, labels string
		want         float64
		found        bool
	}{
		{"otelcol_exporter_sent_log_records", "", 1234, true},
		{"otelcol_exporter_sent_log_records", `exporter="s3"`, 1200, true},
		{"otelcol_exporter_sent_log_records_total", "", 1234, true},
		{"otelcol_receiver_accepted_log_records", `receiver="decision_logs"`, 30, true},
		{"otelcol_receiver_accepted_log_records", `receiver="decision_logs",transport="unix"`, 10, true},
		{"otelcol_receiver_accepted_log_records", `transport="http"`, 60, true},
		{"otelcol_exporter_queue_size", "", 12, true},
		{"process_uptime", "", 12.5, true},
		{"otelcol_exporter_queue", "", 0, false},
		{"otelcol_exporter_sent_log_records", `exporter="kafka"`, 0, false},
	} {
		got, found := Sum(exposition, tc.name, tc.labels)
		if got != tc.want || found != tc.found {
			t.Errorf("Sum(%s, %q) = %v, %v; want %v, %v", tc.name, tc.labels, got, found, tc.want, tc.found)
		}
	}
}

func TestReadMetric(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(exposition))
	}))
	defer ts.Close()
	v, err := ReadMetric(ts.URL, "otelcol_exporter_queue_size", `exporter="s3"`)
	if err != nil || v != 7 {
		t.Errorf("queue size of s3: %v, %v; want 7", v, err)
	}
	if v, err := ReadMetric(ts.URL, "otelcol_receiver_accepted_log_records", `receiver="decision_logs"`); err != nil || v != 30 {
		t.Errorf("accepted by decision_logs over both transports: %v, %v; want 30", v, err)
	}
	if _, err := ReadMetric(ts.URL, "otelcol_exporter_queue_size", `exporter="absent"`); err == nil {
		t.Error("a metric no series matches is an error, not zero")
	}
	ts.Close()
	if _, err := ReadMetric(ts.URL, "process_uptime", ""); err == nil {
		t.Error("an endpoint that does not answer is an error")
	}
}
