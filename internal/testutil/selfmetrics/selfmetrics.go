// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package selfmetrics reads the Prometheus text exposition of a collector's self-metrics: one reader for the tests
// and the testbed, which wait on and measure the collector through its metrics endpoint.
package selfmetrics // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Scrape fetches the Prometheus text exposition at url.
func Scrape(client *http.Client, url string) (string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Sum adds up every series of the metric name whose line contains each of the comma-separated
// substrings of labels (e.g. `receiver="decision_logs",transport="unix"`; "" takes every series). A counter
// may be exposed with the `_total` suffix the Prometheus exporter adds, so name matches both. found is false
// when no series matched, which tells "not exposed yet" apart from zero.
func Sum(text, name, labels string) (sum float64, found bool) {
	var filters []string
	if labels != "" {
		filters = strings.Split(labels, ",")
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		metric, rest := splitName(line)
		if metric != name && metric != name+"_total" {
			continue
		}
		if !containsAll(rest, filters) {
			continue
		}
		v, ok := value(rest)
		if !ok {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// splitName splits a sample line into the metric name and the rest (labels, value, optional timestamp).
func splitName(line string) (name, rest string) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return line, ""
	}
	return line[:i], line[i:]
}

// value is the sample value: the first field after the label set (a timestamp may follow it).
func value(rest string) (float64, bool) {
	if strings.HasPrefix(rest, "{") {
		// Label values may contain spaces and braces inside quotes; the label set ends at the last '}'.
		end := strings.LastIndexByte(rest, '}')
		if end < 0 {
			return 0, false
		}
		rest = rest[end+1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// ReadMetric reads a metric from a collector's Prometheus endpoint once, summed over its series whose labels
// contain each comma-separated substring of labels (e.g. `exporter="s3"`). It is an error when no series
// matches, so that a metric not exposed yet is not read as zero.
func ReadMetric(metricsURL, name, labels string) (float64, error) {
	text, err := Scrape(&http.Client{Timeout: 5 * time.Second}, metricsURL)
	if err != nil {
		return 0, err
	}
	v, found := Sum(text, name, labels)
	if !found {
		return 0, fmt.Errorf("no %s{%s} in %s", name, labels, metricsURL)
	}
	return v, nil
}

// ReadCounter is ReadMetric for a counter, which the collector exposes only from its first count: a counter no
// series of which is exposed yet reads 0.
func ReadCounter(metricsURL, name, labels string) (float64, error) {
	text, err := Scrape(&http.Client{Timeout: 5 * time.Second}, metricsURL)
	if err != nil {
		return 0, err
	}
	v, _ := Sum(text, name, labels)
	return v, nil
}
