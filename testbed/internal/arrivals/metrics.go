package arrivals

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ExporterGauge reads one of the exporter helper's gauges (otelcol_exporter_queue_size,
// otelcol_exporter_queue_capacity) of the named exporter from the collector's Prometheus endpoint.
func ExporterGauge(metricsURL, metric, exporter string) (float64, error) {
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
	label := fmt.Sprintf("exporter=%q", exporter)
	for l := range strings.Lines(string(body)) {
		if !strings.HasPrefix(l, metric+"{") || !strings.Contains(l, label) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", l, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no %s of the %s exporter in %s", metric, exporter, metricsURL)
}
