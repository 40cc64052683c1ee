package arrivals

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Metric reads a metric from the collector's Prometheus endpoint, summed over its series whose labels include
// label (e.g. exporter="s3"): the exporter helper's otelcol_exporter_queue_size, a receiver's
// otelcol_receiver_refused_log_records. It is an error when no series matches.
func Metric(metricsURL, metric, label string) (float64, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(metricsURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	found := false
	for l := range strings.Lines(string(body)) {
		if !strings.HasPrefix(l, metric+"{") || !strings.Contains(l, label) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", l, err)
		}
		sum += v
		found = true
	}
	if !found {
		return 0, fmt.Errorf("no %s{%s} in %s", metric, label, metricsURL)
	}
	return sum, nil
}
