// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

const (
	// differingShown bounds the overview's comparison; the policies page lists them all.
	differingShown = 20
	// tablePage is the rows of one page of the policies and namespaces tables.
	tablePage = 100
	// ClustersShown is the clusters of one page of the overview, the policies' columns and the trend: the
	// clusters with the most failing results first, the others on the next pages (parameter cpage).
	ClustersShown = 20
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

// paramError is a page parameter the page cannot show: a 400.
type paramError struct{ error }

// pageFailed answers a page's error: 400 for a parameter, else as queryFailed.
func (s *Server) pageFailed(w http.ResponseWriter, r *http.Request, err error) {
	if pe, ok := errors.AsType[paramError](err); ok {
		s.renderError(w, r, http.StatusBadRequest, pe.Error())
		return
	}
	s.queryFailed(w, r, err)
}

// pager pages a list of Total rows by a query parameter.
type pager struct {
	Page, Pages int
	Prev, Next  string
	// First and Last are the rows of this page, from 1; More are the rows after it.
	First, Last, Total, More int
}

// newPager reads the value v of the page parameter param of a list of total rows, per a page, and returns the
// pager (its links keep the query q) and the page's window.
func newPager(v string, total, per int, param, path string, q url.Values) (pager, store.Window, error) {
	p := pager{Page: 1, Pages: max(1, (total+per-1)/per), Total: total}
	if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > p.Pages {
			return pager{}, store.Window{}, paramError{fmt.Errorf("parameter %s %q: want 1 to %d", param, v, p.Pages)}
		}
		p.Page = n
	}
	if p.Page > 1 {
		p.Prev = link(path, q, param, strconv.Itoa(p.Page-1))
	}
	if p.Page < p.Pages {
		p.Next = link(path, q, param, strconv.Itoa(p.Page+1))
	}
	win := store.Window{Offset: (p.Page - 1) * per, Limit: per}
	p.First, p.Last = min(total, win.Offset+1), min(total, win.Offset+per)
	p.More = total - p.Last
	return p, win, nil
}

// clusterColumns is the page of clusters a page shows (parameter cpage, its links keeping q), most failing first.
func (s *Server) clusterColumns(r *http.Request, f store.Filter, v, path string, q url.Values) ([]store.ClusterSummary, pager, error) {
	total, err := s.store.CountDistinct(r.Context(), f, "cluster")
	if err != nil {
		return nil, pager{}, err
	}
	p, win, err := newPager(v, total, ClustersShown, "cpage", path, q)
	if err != nil {
		return nil, pager{}, err
	}
	clusters, err := s.store.ClusterPage(r.Context(), f, win)
	return clusters, p, err
}

type overviewView struct {
	Clusters                    []store.ClusterSummary
	ClusterPager                pager
	OutcomeChart, SeverityChart barChart
	ClusterNames                []string
	Differing                   []store.PolicyAcross
	DifferingTotal              int
	DifferingMore               bool
}

func (s *Server) overviewPage(w http.ResponseWriter, r *http.Request) {
	f, params, err := uiQuery(r.URL.Query(), "cpage")
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.overview(w, r, f, params); err != nil {
		s.pageFailed(w, r, err)
	}
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, f store.Filter, params map[string]string) error {
	ctx := r.Context()
	var v overviewView
	var err error
	if v.Clusters, v.ClusterPager, err = s.clusterColumns(r, f, params["cpage"], "/", f.Values()); err != nil {
		return err
	}
	var byOutcome, bySeverity [][]int64
	for _, c := range v.Clusters {
		v.ClusterNames = append(v.ClusterNames, c.Cluster)
		byOutcome = append(byOutcome, []int64{c.Pass, c.Fail, c.Warn, c.Error, c.Skip})
		bySeverity = append(bySeverity, c.FailingBySeverity[:])
	}
	v.OutcomeChart = newBarChart("outcomes-chart", "Results by outcome per cluster", v.ClusterNames, outcomeSeries, byOutcome)
	v.SeverityChart = newBarChart("severity-chart", "Failing results by severity per cluster", v.ClusterNames, severitySeries, bySeverity)
	if v.DifferingTotal, err = s.store.CountPolicies(ctx, f, true); err != nil {
		return err
	}
	if v.Differing, err = s.store.PolicyPage(ctx, f, true, store.Window{Limit: differingShown}); err != nil {
		return err
	}
	if err := s.store.PolicyCells(ctx, f, v.Differing, v.ClusterNames); err != nil {
		return err
	}
	v.DifferingMore = v.DifferingTotal > len(v.Differing)
	s.render(w, r, http.StatusOK, "overview", pageView{Title: "Fleet", Path: "/", Filter: f, Query: f.Values(), Data: v})
	return nil
}

type policiesView struct {
	Policies            []store.PolicyAcross
	ClusterNames        []string
	Total               int
	DiffersOnly         bool
	Pager, ClusterPager pager
}

func (s *Server) policiesPage(w http.ResponseWriter, r *http.Request) {
	f, params, err := uiQuery(r.URL.Query(), "differs", "page", "cpage")
	if err == nil && params["differs"] != "" && params["differs"] != "true" {
		err = errors.New("parameter differs: want true or nothing")
	}
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.policies(w, r, f, params); err != nil {
		s.pageFailed(w, r, err)
	}
}

func (s *Server) policies(w http.ResponseWriter, r *http.Request, f store.Filter, params map[string]string) error {
	ctx := r.Context()
	v := policiesView{DiffersOnly: params["differs"] == "true"}
	var err error
	if v.Total, err = s.store.CountPolicies(ctx, f, v.DiffersOnly); err != nil {
		return err
	}
	q := f.Values()
	var win store.Window
	if v.Pager, win, err = newPager(params["page"], v.Total, tablePage, "page", "/policies",
		withParams(q, "differs", params["differs"], "cpage", params["cpage"])); err != nil {
		return err
	}
	var clusters []store.ClusterSummary
	if clusters, v.ClusterPager, err = s.clusterColumns(r, f, params["cpage"], "/policies",
		withParams(q, "differs", params["differs"], "page", params["page"])); err != nil {
		return err
	}
	for _, c := range clusters {
		v.ClusterNames = append(v.ClusterNames, c.Cluster)
	}
	if v.Policies, err = s.store.PolicyPage(ctx, f, v.DiffersOnly, win); err != nil {
		return err
	}
	if err := s.store.PolicyCells(ctx, f, v.Policies, v.ClusterNames); err != nil {
		return err
	}
	keep := map[string]string{}
	if v.DiffersOnly {
		keep["differs"] = "true"
	}
	s.render(w, r, http.StatusOK, "policies", pageView{Title: "Policies", Path: "/policies", Filter: f, Query: q, Keep: keep, Data: v})
	return nil
}

type namespacesView struct {
	Namespaces []store.NamespaceCounts
	Total      int
	Pager      pager
}

func (s *Server) namespacesPage(w http.ResponseWriter, r *http.Request) {
	f, params, err := uiQuery(r.URL.Query(), "page")
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.namespaces(w, r, f, params); err != nil {
		s.pageFailed(w, r, err)
	}
}

func (s *Server) namespaces(w http.ResponseWriter, r *http.Request, f store.Filter, params map[string]string) error {
	var v namespacesView
	var err error
	if v.Total, err = s.store.CountDistinct(r.Context(), f, "cluster, resource_namespace"); err != nil {
		return err
	}
	q := f.Values()
	var win store.Window
	if v.Pager, win, err = newPager(params["page"], v.Total, tablePage, "page", "/namespaces", q); err != nil {
		return err
	}
	if v.Namespaces, err = s.store.NamespacePage(r.Context(), f, win); err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "namespaces", pageView{Title: "Namespaces", Path: "/namespaces", Filter: f, Query: q, Data: v})
	return nil
}

type resultsView struct {
	store.FailingPage
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
	var after *store.Cursor
	if c, ok := params["after"]; ok && err == nil {
		var cur store.Cursor
		cur, err = store.ParseCursor(c)
		after = &cur
	}
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	fp, err := s.store.FailingPage(r.Context(), f, after, size)
	if err != nil {
		s.queryFailed(w, r, err)
		return
	}
	q := f.Values()
	keep := map[string]string{}
	if size != DefaultResultsPage {
		keep["size"] = strconv.Itoa(size)
	}
	v := resultsView{FailingPage: fp, After: after != nil, FirstPage: link("/results", q, "size", keep["size"])}
	if fp.Next != nil {
		v.NextPage = link("/results", q, "size", keep["size"], "after", fp.Next.String())
	}
	s.render(w, r, http.StatusOK, "results", pageView{Title: "Failing results", Path: "/results", Filter: f, Query: q,
		Keep: keep, Data: v})
}

type resultView struct {
	store.ResultDetail
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
	d, err := s.store.Result(r.Context(), key)
	if errors.Is(err, store.ErrNoResult) {
		s.renderError(w, r, http.StatusNotFound, "no result with this key")
		return
	}
	if err != nil {
		s.queryFailed(w, r, err)
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
	Series        []store.TrendSeries
	Chart         lineChart
	// ClusterPager pages the clusters shown when no cluster is asked for.
	ClusterPager pager
}

func (s *Server) trendPage(w http.ResponseWriter, r *http.Request) {
	v := trendView{Days: DefaultTrendDays, MaxDays: MaxTrendDays}
	var cpage string
	for name, values := range r.URL.Query() {
		if len(values) != 1 {
			s.renderError(w, r, http.StatusBadRequest, "parameter "+name+": given more than once")
			return
		}
		switch name {
		case "cluster":
			v.Cluster = values[0]
		case "cpage":
			cpage = values[0]
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
			s.renderError(w, r, http.StatusBadRequest, "unknown parameter "+name+": want cluster, days or cpage")
			return
		}
	}
	if err := s.trend(w, r, v, cpage); err != nil {
		s.pageFailed(w, r, err)
	}
}

// trend shows the asked cluster, or a page of the clusters with the most failing results: the history of a few
// clusters is read, whatever the fleet's size.
func (s *Server) trend(w http.ResponseWriter, r *http.Request, v trendView, cpage string) error {
	clusters := []string{v.Cluster}
	if v.Cluster == "" {
		q := url.Values{}
		if v.Days != DefaultTrendDays {
			q.Set("days", strconv.Itoa(v.Days))
		}
		shown, p, err := s.clusterColumns(r, store.Filter{}, cpage, "/trend", q)
		if err != nil {
			return err
		}
		v.ClusterPager, clusters = p, nil
		for _, c := range shown {
			clusters = append(clusters, c.Cluster)
		}
	}
	var err error
	if v.Series, v.Dates, err = s.store.Trend(r.Context(), clusters, v.Days, s.now()); err != nil {
		return err
	}
	v.Chart = newLineChart("trend-chart", fmt.Sprintf("Failing results per cluster, last %d days", v.Days), v.Dates, v.Series)
	s.render(w, r, http.StatusOK, "trend", pageView{Title: "Trend", Path: "/trend", Data: v})
	return nil
}
