// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// hostileAttack is what a testbed/hostile attack writes (hostile-<attack>-<config>-<scale>.json).
type hostileAttack struct {
	Attack         string             `json:"attack"`
	Config         string             `json:"config"`
	Scale          string             `json:"scale"`
	PeakRSSMiB     float64            `json:"peak_rss_mib"`
	BoundMiB       float64            `json:"bound_mib"`
	LegitDelivered int                `json:"legit_delivered"`
	LegitRefusals  int                `json:"legit_refusals"`
	Counted        map[string]float64 `json:"counted"`
}

// splitHostile takes the attacks' files out of a package's result files, which are shown as one table rather
// than a table each.
func splitHostile(files []resultFile) (attacks []hostileAttack, rest []resultFile) {
	for _, f := range files {
		var a hostileAttack
		if strings.HasPrefix(f.Name, "hostile-") && json.Unmarshal(f.Data, &a) == nil && a.Attack != "" {
			attacks = append(attacks, a)
			continue
		}
		rest = append(rest, f)
	}
	// The default config first: it is what `make run` runs and what the bound of 256 MiB is about.
	rank := func(a hostileAttack) string {
		if a.Config == "default" {
			return ""
		}
		return a.Config
	}
	sort.SliceStable(attacks, func(i, j int) bool {
		if rank(attacks[i]) != rank(attacks[j]) {
			return rank(attacks[i]) < rank(attacks[j])
		}
		return attacks[i].Attack < attacks[j].Attack
	})
	return attacks, rest
}

func writeHostile(b *bytes.Buffer, attacks []hostileAttack) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("| attack | config | peak RSS | bound | legitimate decisions delivered (retries) | counted by the collector |\n")
	p("| --- | --- | --- | --- | --- | --- |\n")
	for _, a := range attacks {
		var counted []string
		for _, k := range sortedKeys(a.Counted) {
			counted = append(counted, fmt.Sprintf("%s %s", k, num(a.Counted[k])))
		}
		p("| %s | %s | %s MiB | %s MiB | %d (%d) | %s |\n", a.Attack, a.Config, num(a.PeakRSSMiB), num(a.BoundMiB),
			a.LegitDelivered, a.LegitRefusals, strings.Join(counted, ", "))
	}
	p("\n")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
