// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package dashboards reads the Grafana dashboards the Helm chart ships (files/dashboards/*.json) and runs every
// panel query against a Prometheus, as Grafana would after filling in the template variables: the tests and
// `make demo` check that each query parses and answers.
package dashboards // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/dashboards"

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"
)

// Dir is the chart's dashboard directory, relative to the repository root.
const Dir = "distributions/otelcol-policy/helm/otelcol-policy/files/dashboards"

// Dashboard is one dashboard file: its template variables and its panel queries.
type Dashboard struct {
	File      string
	Title     string
	Variables []Variable
	Queries   []Query
}

// Variable is a query variable of the dashboard (label_values(selector, label)).
type Variable struct {
	Name  string
	Query string
}

// Query is one target of one panel.
type Query struct {
	Panel string
	RefID string
	Expr  string
}

func (q Query) String() string { return q.Panel + "/" + q.RefID }

// Load reads every *.json dashboard of dir, in name order.
func Load(dir string) ([]Dashboard, error) {
	fsys := os.DirFS(dir)
	files, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]Dashboard, 0, len(files))
	for _, f := range files {
		raw, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		var model struct {
			Title      string `json:"title"`
			Templating struct {
				List []struct {
					Name  string          `json:"name"`
					Type  string          `json:"type"`
					Query json.RawMessage `json:"query"`
				} `json:"list"`
			} `json:"templating"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					RefID string `json:"refId"`
					Expr  string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &model); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		d := Dashboard{File: filepath.Base(f), Title: model.Title}
		for _, v := range model.Templating.List {
			if v.Type != "query" {
				continue
			}
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				return nil, fmt.Errorf("%s: variable %s: %w", f, v.Name, err)
			}
			d.Variables = append(d.Variables, Variable{Name: v.Name, Query: q.Query})
		}
		for _, p := range model.Panels {
			for _, t := range p.Targets {
				d.Queries = append(d.Queries, Query{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
			}
		}
		out = append(out, d)
	}
	return out, nil
}

var (
	variableRef = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)
	labelValues = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)
)

// Expand fills in a query as Grafana does: each $name or ${name} from values (a regex such as ".*" for All),
// and the built-in intervals $__rate_interval, $__interval and $__range with window (e.g. "5m").
func Expand(expr string, values map[string]string, window string) (string, error) {
	var missing []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		name := strings.Trim(ref, "${}")
		if strings.HasPrefix(name, "__") {
			return window
		}
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %v in %s", missing, expr)
	}
	return out, nil
}

// LabelValues is the PromQL that answers a label_values(selector, label) variable query, and the label.
func LabelValues(query string) (promql, label string, err error) {
	m := labelValues.FindStringSubmatch(strings.TrimSpace(query))
	if m == nil {
		return "", "", fmt.Errorf("variable query %q is not label_values(selector, label)", query)
	}
	return fmt.Sprintf("count by (%s) (%s)", m[2], m[1]), m[2], nil
}

// Values answers every variable of d in order, each with the values chosen for the ones before it (a variable's
// query may use them), and returns the values found per variable.
func (d Dashboard) Values(prom *promtest.Server, chosen map[string]string) (map[string][]string, error) {
	found := map[string][]string{}
	for _, v := range d.Variables {
		q, label, err := LabelValues(v.Query)
		if err != nil {
			return nil, err
		}
		if q, err = Expand(q, chosen, "5m"); err != nil {
			return nil, err
		}
		samples, err := prom.Query(q)
		if err != nil {
			return nil, fmt.Errorf("%s variable %s: %w", d.File, v.Name, err)
		}
		for _, s := range samples {
			if val := s.Labels[label]; val != "" {
				found[v.Name] = append(found[v.Name], val)
			}
		}
		sort.Strings(found[v.Name])
	}
	return found, nil
}

// Answer is what one query returned.
type Answer struct {
	Dashboard string
	Query     Query
	Expr      string // as run, the variables filled in
	Samples   []promtest.Sample
	Err       error
}

// Answered is true when the query parsed and returned at least one sample that is a number.
func (a Answer) Answered() bool {
	if a.Err != nil {
		return false
	}
	for _, s := range a.Samples {
		if !math.IsNaN(s.Value) {
			return true
		}
	}
	return false
}

func (a Answer) String() string {
	switch {
	case a.Err != nil:
		return fmt.Sprintf("%s %s: %v", a.Dashboard, a.Query, a.Err)
	case !a.Answered():
		return fmt.Sprintf("%s %s: no data (%d samples) for %s", a.Dashboard, a.Query, len(a.Samples), a.Expr)
	default:
		return fmt.Sprintf("%s %s: %d series", a.Dashboard, a.Query, len(a.Samples))
	}
}

// Run runs every panel query of d against prom with the variables set to values and the intervals to window.
func (d Dashboard) Run(prom *promtest.Server, values map[string]string, window string) []Answer {
	out := make([]Answer, 0, len(d.Queries))
	for _, q := range d.Queries {
		a := Answer{Dashboard: d.File, Query: q}
		a.Expr, a.Err = Expand(q.Expr, values, window)
		if a.Err == nil {
			a.Samples, a.Err = prom.Query(a.Expr)
		}
		out = append(out, a)
	}
	return out
}

// All is the value of every variable of d when "All" is selected (the dashboards' allValue).
func (d Dashboard) All() map[string]string {
	values := map[string]string{}
	for _, v := range d.Variables {
		values[v.Name] = ".*"
	}
	return values
}
