// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

const (
	// differingShown bounds the overview's comparison; the policies page lists them all.
	differingShown = 20
	// tablePage is the rows of one page of the policies and namespaces tables.
	tablePage = 100
	// DefaultResultsPage and MaxResultsPage bound a page of the failing list (parameter size).
	DefaultResultsPage = 50
	MaxResultsPage     = 500
	// DefaultTrendDays and MaxTrendDays bound the trend (parameter days).
	DefaultTrendDays = 30
	MaxTrendDays     = 366
)

var (
	outcomeSeries  = []barSeries{{"pass", "pass"}, {"fail", "fail"}, {"warn", "warn"}, {"error", "error"}, {"skip", "skip"}}
	severitySeries = []barSeries{{"critical", "critical"}, {"high", "high"}, {"medium", "medium"}, {"low", "low"},
		{"info", "info"}, {"none", "no severity"}}
)

type overviewView struct {
	Clusters                    []ClusterSummary
	OutcomeChart, SeverityChart barChart
	ClusterNames                []string
	Differing                   []PolicyAcross
	DifferingTotal              int
	DifferingMore               bool
}

func (s *Server) overviewPage(w http.ResponseWriter, r *http.Request) {
	f, _, err := uiQuery(r.URL.Query())
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	groups, err := s.store.currentGroups(r.Context(), f)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	clusters, policies := clusterSummaries(groups), policiesAcross(groups)
	v := overviewView{Clusters: clusters}
	var byOutcome, bySeverity [][]int64
	for _, c := range clusters {
		v.ClusterNames = append(v.ClusterNames, c.Cluster)
		byOutcome = append(byOutcome, []int64{c.Pass, c.Fail, c.Warn, c.Error, c.Skip})
		bySeverity = append(bySeverity, c.FailingBySeverity[:])
	}
	v.OutcomeChart = newBarChart("outcomes-chart", "Results by outcome per cluster", v.ClusterNames, outcomeSeries, byOutcome)
	v.SeverityChart = newBarChart("severity-chart", "Failing results by severity per cluster", v.ClusterNames, severitySeries, bySeverity)
	for _, p := range policies {
		if p.Differs {
			v.DifferingTotal++
			if len(v.Differing) < differingShown {
				v.Differing = append(v.Differing, p)
			}
		}
	}
	v.DifferingMore = v.DifferingTotal > len(v.Differing)
	s.render(w, r, http.StatusOK, "overview", pageView{Title: "Fleet", Path: "/", Filter: f, Query: f.values(), Data: v})
}

// pager pages a table of total rows by a page parameter.
type pager struct {
	Page, Pages int
	Prev, Next  string
}

// pageOf parses the page parameter and returns the rows of that page.
func pageOf[T any](rows []T, param, path string, q url.Values) ([]T, pager, error) {
	p := pager{Page: 1, Pages: max(1, (len(rows)+tablePage-1)/tablePage)}
	if param != "" {
		n, err := strconv.Atoi(param)
		if err != nil || n < 1 || n > p.Pages {
			return nil, pager{}, fmt.Errorf("parameter page %q: want 1 to %d", param, p.Pages)
		}
		p.Page = n
	}
	if p.Page > 1 {
		p.Prev = link(path, q, "page", strconv.Itoa(p.Page-1))
	}
	if p.Page < p.Pages {
		p.Next = link(path, q, "page", strconv.Itoa(p.Page+1))
	}
	from := (p.Page - 1) * tablePage
	return rows[from:min(len(rows), from+tablePage)], p, nil
}

type policiesView struct {
	Policies     []PolicyAcross
	ClusterNames []string
	Total        int
	DiffersOnly  bool
	Pager        pager
}

func (s *Server) policiesPage(w http.ResponseWriter, r *http.Request) {
	f, params, err := uiQuery(r.URL.Query(), "differs", "page")
	if err == nil && params["differs"] != "" && params["differs"] != "true" {
		err = errors.New("parameter differs: want true or nothing")
	}
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	groups, err := s.store.currentGroups(r.Context(), f)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	all := policiesAcross(groups)
	v := policiesView{DiffersOnly: params["differs"] == "true"}
	clusters := map[string]bool{}
	var shown []PolicyAcross
	for _, p := range all {
		for c := range p.ByCluster {
			clusters[c] = true
		}
		if !v.DiffersOnly || p.Differs {
			shown = append(shown, p)
		}
	}
	for c := range clusters {
		v.ClusterNames = append(v.ClusterNames, c)
	}
	slices.Sort(v.ClusterNames)
	v.Total = len(shown)
	q := f.values()
	keep := map[string]string{}
	pq := f.values()
	if v.DiffersOnly {
		keep["differs"] = "true"
		pq.Set("differs", "true")
	}
	if v.Policies, v.Pager, err = pageOf(shown, params["page"], "/policies", pq); err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	s.render(w, r, http.StatusOK, "policies", pageView{Title: "Policies", Path: "/policies", Filter: f, Query: q, Keep: keep, Data: v})
}

type namespacesView struct {
	Namespaces []NamespaceCounts
	Total      int
	Pager      pager
}

func (s *Server) namespacesPage(w http.ResponseWriter, r *http.Request) {
	f, params, err := uiQuery(r.URL.Query(), "page")
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	all, err := s.store.namespaceCounts(r.Context(), f)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	v := namespacesView{Total: len(all)}
	q := f.values()
	if v.Namespaces, v.Pager, err = pageOf(all, params["page"], "/namespaces", q); err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	s.render(w, r, http.StatusOK, "namespaces", pageView{Title: "Namespaces", Path: "/namespaces", Filter: f, Query: q, Data: v})
}

type resultsView struct {
	FailingPage
	After               bool
	FirstPage, NextPage string
}

func (s *Server) resultsPage(w http.ResponseWriter, r *http.Request) {
	f, params, err := uiQuery(r.URL.Query(), "after", "size")
	size := DefaultResultsPage
	if n, ok := params["size"]; ok && err == nil {
		if size, err = strconv.Atoi(n); err != nil || size < 1 || size > MaxResultsPage {
			err = fmt.Errorf("parameter size %q: want 1 to %d", n, MaxResultsPage)
		}
	}
	var after *Cursor
	if c, ok := params["after"]; ok && err == nil {
		var cur Cursor
		cur, err = ParseCursor(c)
		after = &cur
	}
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	page, err := s.store.failingPage(r.Context(), f, after, size)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	q := f.values()
	keep := map[string]string{}
	if size != DefaultResultsPage {
		keep["size"] = strconv.Itoa(size)
	}
	v := resultsView{FailingPage: page, After: after != nil, FirstPage: link("/results", q, "size", keep["size"])}
	if page.Next != nil {
		v.NextPage = link("/results", q, "size", keep["size"], "after", page.Next.String())
	}
	s.render(w, r, http.StatusOK, "results", pageView{Title: "Failing results", Path: "/results", Filter: f, Query: q,
		Keep: keep, Data: v})
}

type resultView struct {
	ResultDetail
	PrettyBody string
	// BodyCut says that PrettyBody is the beginning of the body only, which is BodyBytes long.
	BodyCut   bool
	BodyBytes int
}

// MaxShown is how much of a body the page prints.
func (resultView) MaxShown() int { return MaxBodyShown }

func (s *Server) resultPage(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if len(key) > 128 {
		s.renderError(w, r, http.StatusBadRequest, "a result key is at most 128 characters")
		return
	}
	d, err := s.store.resultDetail(r.Context(), key)
	if errors.Is(err, ErrNoResult) {
		s.renderError(w, r, http.StatusNotFound, "no result with this key")
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	v := resultView{ResultDetail: d, BodyBytes: len(d.BodyJSON)}
	v.PrettyBody, v.BodyCut = prettyBody(d.BodyJSON, MaxBodyShown)
	v.BodyJSON = "" // not rendered: the page holds the body once
	title := d.Policy
	if d.Rule != "" {
		title += " / " + d.Rule
	}
	s.render(w, r, http.StatusOK, "result", pageView{Title: title, Data: v})
}

type trendView struct {
	Cluster       string
	Days, MaxDays int
	Dates         []time.Time
	Series        []TrendSeries
	Chart         lineChart
}

func (s *Server) trendPage(w http.ResponseWriter, r *http.Request) {
	v := trendView{Days: DefaultTrendDays, MaxDays: MaxTrendDays}
	for name, values := range r.URL.Query() {
		if len(values) != 1 {
			s.renderError(w, r, http.StatusBadRequest, "parameter "+name+": given more than once")
			return
		}
		switch name {
		case "cluster":
			v.Cluster = values[0]
		case "days":
			if values[0] == "" {
				continue
			}
			n, err := strconv.Atoi(values[0])
			if err != nil || n < 1 || n > MaxTrendDays {
				s.renderError(w, r, http.StatusBadRequest, fmt.Sprintf("parameter days %q: want 1 to %d", values[0], MaxTrendDays))
				return
			}
			v.Days = n
		default:
			s.renderError(w, r, http.StatusBadRequest, "unknown parameter "+name+": want cluster or days")
			return
		}
	}
	var err error
	if v.Series, v.Dates, err = s.store.trend(r.Context(), v.Cluster, v.Days, s.now()); err != nil {
		s.pageError(w, r, err)
		return
	}
	v.Chart = newLineChart("trend-chart", fmt.Sprintf("Failing results per cluster, last %d days", v.Days), v.Dates, v.Series)
	s.render(w, r, http.StatusOK, "trend", pageView{Title: "Trend", Path: "/trend", Data: v})
}
