// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The fleet's counts by cluster, by policy and by namespace, each a page at a time: the database groups, sorts
// and cuts, so that what leaves it, and what a page holds, is a page whatever the number of clusters, policies
// or namespaces (a fleet of 100,000 clusters made every page hold all of them). Names sort by their bytes in
// both databases (dialect.byteOrder), so that pages cut at the same place.

// SeverityOrder are the severities of ClusterSummary.FailingBySeverity, most severe first; "" is a result
// without one (or with one this server does not know).
var SeverityOrder = []string{"critical", "high", "medium", "low", "info", ""}

// countsSQL sums a group's results by outcome, in the order of scanCounts; failingSQL is the failing ones'.
var (
	countsSQL = func() string {
		var sums []string
		for _, o := range []string{"pass", "fail", "warn", "error", "skip"} {
			sums = append(sums, "SUM(CASE WHEN outcome = '"+o+"' THEN 1 ELSE 0 END)")
		}
		return strings.Join(append(sums, "COUNT(*)"), ", ")
	}()
	failingSQL = "SUM(CASE WHEN " + failingCond + " THEN 1 ELSE 0 END)"
	// severitySQL sums a group's failing results by severity, in SeverityOrder.
	severitySQL = func() string {
		var sums, known []string
		for _, s := range SeverityOrder[:len(SeverityOrder)-1] {
			sums = append(sums, "SUM(CASE WHEN "+failingCond+" AND severity = '"+s+"' THEN 1 ELSE 0 END)")
			known = append(known, "'"+s+"'")
		}
		return strings.Join(append(sums, "SUM(CASE WHEN "+failingCond+" AND severity NOT IN ("+
			strings.Join(known, ", ")+") THEN 1 ELSE 0 END)"), ", ")
	}()
)

// countsDest are the scan destinations of countsSQL.
func (c *Counts) countsDest() []any {
	return []any{&c.Pass, &c.Fail, &c.Warn, &c.Error, &c.Skip, &c.Total}
}

// ClusterSummary is one cluster of the overview: results by outcome, failing results by severity.
type ClusterSummary struct {
	Cluster string
	Counts
	// FailingBySeverity follows SeverityOrder.
	FailingBySeverity [6]int64
}

// Failing is the number of results that need attention (outcome fail or error).
func (c Counts) Failing() int64 { return c.Fail + c.Error }

// Window is a page of a sorted list: Limit rows from Offset.
type Window struct{ Offset, Limit int }

func (p Window) sql() string { return fmt.Sprintf(" LIMIT %d OFFSET %d", p.Limit, p.Offset) }

// ClusterPage is a page of the clusters the filter selects, most failing results first.
func (s *Store) ClusterPage(ctx context.Context, f Filter, p Window) ([]ClusterSummary, error) {
	where, args := f.where(s.d)
	q := `SELECT cluster, ` + countsSQL + `, ` + severitySQL + `, ` + failingSQL + ` AS failing FROM results` + where +
		` GROUP BY cluster ORDER BY failing DESC, cluster` + s.d.byteOrder + p.sql()
	var out []ClusterSummary
	err := s.scanRows(ctx, q, args, func(rows *sql.Rows) error {
		var c ClusterSummary
		var failing int64
		dest := append([]any{&c.Cluster}, c.countsDest()...)
		for i := range c.FailingBySeverity {
			dest = append(dest, &c.FailingBySeverity[i])
		}
		if err := rows.Scan(append(dest, &failing)...); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// CountDistinct counts the distinct values of cols among the results the filter selects.
func (s *Store) CountDistinct(ctx context.Context, f Filter, cols string) (int, error) {
	where, args := f.where(s.d)
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM results`+where+` GROUP BY `+cols+`) AS g`,
		args...).Scan(&n)
	return n, err
}

// scanRows runs a query and scans each row with scan.
func (s *Store) scanRows(ctx context.Context, q string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// PolicyAcross is one policy in every cluster that has results of it: the multi-cluster comparison.
type PolicyAcross struct {
	Source, Policy string
	// ByCluster holds the policy's results in the clusters shown that have some, by cluster name.
	ByCluster map[string]Counts
	// Failing sums the failing results over every cluster.
	Failing int64
	// Differs says that the policy fails in one cluster and holds in another: some cluster has failing
	// results of it, another has results of it and none failing.
	Differs bool
}

// AcrossCell is a policy's results in one cluster of a comparison; Counts is nil when the cluster has none.
type AcrossCell struct {
	Cluster string
	Counts  *Counts
}

// Cells are the policy's results in each of clusters, in their order.
func (p PolicyAcross) Cells(clusters []string) []AcrossCell {
	out := make([]AcrossCell, len(clusters))
	for i, c := range clusters {
		out[i].Cluster = c
		if counts, ok := p.ByCluster[c]; ok {
			out[i].Counts = &counts
		}
	}
	return out
}

// policiesSQL groups the results the filter selects by policy, over clusters: failing is the policy's failing
// results, differs is 1 when some cluster has failing results of it and another has results of it and none
// failing. With differsOnly, only those.
func (s *Store) policiesSQL(f Filter, differsOnly bool) (string, []any) {
	where, args := f.where(s.d)
	q := `SELECT source, policy, CAST(SUM(f) AS BIGINT) AS failing,
		MAX(CASE WHEN f > 0 THEN 1 ELSE 0 END) * (1 - MIN(CASE WHEN f > 0 THEN 1 ELSE 0 END)) AS differs
		FROM (SELECT source, policy, cluster, ` + failingSQL + ` AS f FROM results` + where + `
			GROUP BY source, policy, cluster) AS pc GROUP BY source, policy`
	if differsOnly {
		q += ` HAVING MAX(CASE WHEN f > 0 THEN 1 ELSE 0 END) = 1 AND MIN(CASE WHEN f > 0 THEN 1 ELSE 0 END) = 0`
	}
	return q, args
}

// PolicyPage is a page of the policies the filter selects, most failing first, without their cells (see
// PolicyCells).
func (s *Store) PolicyPage(ctx context.Context, f Filter, differsOnly bool, p Window) ([]PolicyAcross, error) {
	q, args := s.policiesSQL(f, differsOnly)
	q += ` ORDER BY failing DESC, source` + s.d.byteOrder + `, policy` + s.d.byteOrder + p.sql()
	var out []PolicyAcross
	err := s.scanRows(ctx, q, args, func(rows *sql.Rows) error {
		pa := PolicyAcross{ByCluster: map[string]Counts{}}
		var differs int64
		if err := rows.Scan(&pa.Source, &pa.Policy, &pa.Failing, &differs); err != nil {
			return err
		}
		pa.Differs = differs == 1
		out = append(out, pa)
		return nil
	})
	return out, err
}

// CountPolicies counts the policies PolicyPage pages through.
func (s *Store) CountPolicies(ctx context.Context, f Filter, differsOnly bool) (int, error) {
	q, args := s.policiesSQL(f, differsOnly)
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+q+`) AS p`, args...).Scan(&n)
	return n, err
}

// PolicyCells fills the policies' counts in each of clusters: at most len(policies) × len(clusters) cells.
func (s *Store) PolicyCells(ctx context.Context, f Filter, policies []PolicyAcross, clusters []string) error {
	if len(policies) == 0 || len(clusters) == 0 {
		return nil
	}
	where, args := f.where(s.d)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var pairs, names []string
	byKey := map[[2]string]*PolicyAcross{}
	for i := range policies {
		p := &policies[i]
		pairs = append(pairs, "("+arg(p.Source)+", "+arg(p.Policy)+")")
		byKey[[2]string{p.Source, p.Policy}] = p
	}
	for _, c := range clusters {
		names = append(names, arg(c))
	}
	q := `SELECT source, policy, cluster, ` + countsSQL + ` FROM results` + where +
		` AND cluster IN (` + strings.Join(names, ", ") + `) AND (source, policy) IN (VALUES ` + strings.Join(pairs, ", ") +
		`) GROUP BY source, policy, cluster`
	return s.scanRows(ctx, q, args, func(rows *sql.Rows) error {
		var source, policy, cluster string
		var c Counts
		if err := rows.Scan(append([]any{&source, &policy, &cluster}, c.countsDest()...)...); err != nil {
			return err
		}
		if p := byKey[[2]string{source, policy}]; p != nil {
			p.ByCluster[cluster] = c
		}
		return nil
	})
}

// NamespaceCounts are the results about resources in one namespace of one cluster; Namespace "" holds the
// cluster-wide results.
type NamespaceCounts struct {
	Cluster, Namespace string
	Counts
}

// NamespacePage is a page of the (cluster, namespace) pairs the filter selects, most failing first.
func (s *Store) NamespacePage(ctx context.Context, f Filter, p Window) ([]NamespaceCounts, error) {
	where, args := f.where(s.d)
	q := `SELECT cluster, resource_namespace, ` + countsSQL + `, ` + failingSQL + ` AS failing FROM results` + where +
		` GROUP BY cluster, resource_namespace ORDER BY failing DESC, cluster` + s.d.byteOrder +
		`, resource_namespace` + s.d.byteOrder + p.sql()
	var out []NamespaceCounts
	err := s.scanRows(ctx, q, args, func(rows *sql.Rows) error {
		var n NamespaceCounts
		var failing int64
		if err := rows.Scan(append(append([]any{&n.Cluster, &n.Namespace}, n.countsDest()...), &failing)...); err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	return out, err
}
