// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Filter selects the results of a fleet view. Empty fields select everything.
type Filter struct {
	Cluster string `json:"cluster,omitempty"`
	// Namespace is the subject resource's namespace; cluster-wide results have none.
	Namespace string `json:"namespace,omitempty"`
	Policy    string `json:"policy,omitempty"`
	Rule      string `json:"rule,omitempty"`
	// Severity is one of critical, high, medium, low, info.
	Severity string `json:"severity,omitempty"`
	Source   string `json:"source,omitempty"`
	// ClusterWide keeps the results about resources outside namespaces (and about the cluster itself).
	ClusterWide bool `json:"cluster_wide,omitempty"`
	// Kind is the subject resource's kind (Pod, Deployment, Namespace, …).
	Kind string `json:"kind,omitempty"`
	// Vulnerability is a vulnerability.id (CVE-2024-3094).
	Vulnerability string `json:"vulnerability,omitempty"`
	// MinScore keeps the vulnerabilities whose base score is at least this; results without a score are left out.
	MinScore *float64 `json:"min_score,omitempty"`
	// Fixable keeps the vulnerabilities that have a fixed version.
	Fixable bool `json:"fixable,omitempty"`
	// Text keeps the results whose message, subject name, policy, rule, vulnerability id or package name contains
	// it, ignoring ASCII case.
	Text string `json:"text,omitempty"`
	// Limit caps the failing results returned; 0 returns all of them.
	Limit int `json:"limit,omitempty"`
}

// MaxFilterText bounds Filter.Text: a substring search reads every candidate row, and a long pattern makes each
// comparison longer.
const MaxFilterText = 200

// Validate reports a filter the fleet view cannot answer.
func (f Filter) Validate() error {
	if f.Severity != "" {
		switch policyresult.Severity(f.Severity) {
		case policyresult.SeverityCritical, policyresult.SeverityHigh, policyresult.SeverityMedium,
			policyresult.SeverityLow, policyresult.SeverityInfo:
		default:
			return fmt.Errorf("severity %q: want one of critical, high, medium, low, info", f.Severity)
		}
	}
	if f.ClusterWide && f.Namespace != "" {
		return fmt.Errorf("namespace %q and cluster_wide: a result is about a namespaced resource or not", f.Namespace)
	}
	if f.MinScore != nil && (math.IsNaN(*f.MinScore) || *f.MinScore < 0 || *f.MinScore > 10) {
		return fmt.Errorf("min_score %v: want a score from 0 to 10", *f.MinScore)
	}
	if len(f.Text) > MaxFilterText {
		return fmt.Errorf("text: %d bytes, want at most %d", len(f.Text), MaxFilterText)
	}
	if f.Limit < 0 {
		return fmt.Errorf("limit %d: want 0 (no limit) or more", f.Limit)
	}
	return nil
}

// FilterParams are the query parameters of a Filter, in the order errors list them.
var FilterParams = []string{"cluster", "namespace", "cluster_wide", "policy", "rule", "severity", "source", "kind",
	"vulnerability", "min_score", "fixable", "q"}

// textFields are the filter's string fields by query parameter.
func (f *Filter) textFields() map[string]*string {
	return map[string]*string{"cluster": &f.Cluster, "namespace": &f.Namespace, "policy": &f.Policy,
		"rule": &f.Rule, "severity": &f.Severity, "source": &f.Source, "kind": &f.Kind,
		"vulnerability": &f.Vulnerability, "q": &f.Text}
}

// Values is the filter as query parameters, the inverse of Set (without the limit).
func (f Filter) Values() url.Values {
	v := url.Values{}
	for name, val := range f.textFields() {
		if *val != "" {
			v.Set(name, *val)
		}
	}
	if f.MinScore != nil {
		v.Set("min_score", strconv.FormatFloat(*f.MinScore, 'f', -1, 64))
	}
	if f.Fixable {
		v.Set("fixable", "true")
	}
	if f.ClusterWide {
		v.Set("cluster_wide", "true")
	}
	return v
}

// Set sets the field of query parameter name (one of FilterParams); an empty value leaves it unset, as an
// empty form field does.
func (f *Filter) Set(name, v string) error {
	field := f.textFields()
	switch {
	case field[name] != nil:
		*field[name] = v
	case name == "min_score":
		if v == "" {
			return nil
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("parameter min_score %q: want a number from 0 to 10", v)
		}
		f.MinScore = &n
	case name == "fixable" || name == "cluster_wide":
		b, err := strconv.ParseBool(cmp.Or(v, "false"))
		if err != nil {
			return fmt.Errorf("parameter %s %q: want true or false", name, v)
		}
		*map[string]*bool{"fixable": &f.Fixable, "cluster_wide": &f.ClusterWide}[name] = b
	default:
		return fmt.Errorf("unknown parameter %s: want %s", name, strings.Join(FilterParams, ", "))
	}
	return nil
}

// Counts counts current results by outcome. Total also counts results without an outcome, so it can exceed
// the sum of the others.
type Counts struct {
	Pass  int64 `json:"pass"`
	Fail  int64 `json:"fail"`
	Warn  int64 `json:"warn"`
	Error int64 `json:"error"`
	Skip  int64 `json:"skip"`
	Total int64 `json:"total"`
}

// Add counts n results of outcome (a result vocabulary value; Total counts any).
func (c *Counts) Add(outcome string, n int64) {
	switch policyresult.Outcome(outcome) {
	case policyresult.OutcomePass:
		c.Pass += n
	case policyresult.OutcomeFail:
		c.Fail += n
	case policyresult.OutcomeWarn:
		c.Warn += n
	case policyresult.OutcomeError:
		c.Error += n
	case policyresult.OutcomeSkip:
		c.Skip += n
	}
	c.Total += n
}

// ClusterCounts are the current results of one cluster.
type ClusterCounts struct {
	Cluster string `json:"cluster"`
	Counts
}

// PolicyCounts are the current results of one policy in one cluster. The source is part of the group because
// two engines may have policies of the same name.
type PolicyCounts struct {
	Cluster string `json:"cluster"`
	Source  string `json:"source"`
	Policy  string `json:"policy"`
	Counts
}

// Resource is a failing result's subject.
type Resource struct {
	APIVersion string `json:"api_version,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

// Report is the report custom resource a failing result was read from.
type Report struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// FailingResult is a current result that needs attention. Lists of them leave out what the result's page
// shows (ResultDetail): the request's extra_metadata and the body, which may be kilobytes per result.
type FailingResult struct {
	Key      string `json:"key"`
	ID       string `json:"id"`
	Cluster  string `json:"cluster"`
	Source   string `json:"source"`
	Policy   string `json:"policy"`
	Rule     string `json:"rule,omitempty"`
	Category string `json:"category,omitempty"`
	Severity string `json:"severity,omitempty"`
	Outcome  string `json:"outcome"`
	Scored   *bool  `json:"scored,omitempty"`
	Message  string `json:"message,omitempty"`
	// Resource is unset for a cluster-wide check.
	Resource          Resource  `json:"resource,omitzero"`
	Report            Report    `json:"report,omitzero"`
	State             string    `json:"state,omitempty"`
	Timestamp         time.Time `json:"timestamp,omitzero"`
	ObservedTimestamp time.Time `json:"observed_timestamp,omitzero"`
	// Vulnerability is set on results that are one vulnerable package each.
	Vulnerability *Vulnerability `json:"vulnerability,omitempty"`
	// FailedChecks counts the failing checks behind a result that aggregates checks (a compliance control).
	FailedChecks *int64 `json:"failed_checks,omitempty"`
	// UpdatedAt is when this server last changed the result's current row.
	UpdatedAt time.Time `json:"updated_at"`
}

// Vulnerability is a scanner's finding about one package (the vulnerability.* and package.* attributes of the
// model).
type Vulnerability struct {
	ID                  string   `json:"id,omitempty"`
	Score               *float64 `json:"score,omitempty"`
	ScoreVersion        string   `json:"score_version,omitempty"`
	Reference           string   `json:"reference,omitempty"`
	PackageName         string   `json:"package_name,omitempty"`
	PackageVersion      string   `json:"package_version,omitempty"`
	PackageFixedVersion string   `json:"package_fixed_version,omitempty"`
	PackagePath         string   `json:"package_path,omitempty"`
	PackageType         string   `json:"package_type,omitempty"`
}

// FleetView is the current state of the results a filter selects: resolved results are left out everywhere.
type FleetView struct {
	// Clusters are sorted by name, Policies by cluster, source and policy (names by their bytes).
	Clusters []ClusterCounts `json:"clusters"`
	Policies []PolicyCounts  `json:"policies"`
	// Failing are the results with outcome fail or error (an error is a policy that could not be evaluated,
	// which needs attention as much as a failure), sorted by cluster, namespace, source, policy, rule, kind, name.
	Failing []FailingResult `json:"failing"`
	// Truncated says that Filter.Limit left failing results out.
	Truncated bool `json:"truncated,omitempty"`
}

// ErrNoResult is Result's error for a key the database does not hold.
var ErrNoResult = errors.New("no result with this key")

// where builds the filter's condition on current, unresolved results.
func (f Filter) where(d dialect) (string, []any) {
	conds := []string{"resolved = 0"}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	for _, c := range []struct{ col, val string }{
		{"cluster", f.Cluster}, {"resource_namespace", f.Namespace}, {"policy", f.Policy}, {"rule", f.Rule},
		{"severity", f.Severity}, {"source", f.Source}, {"resource_kind", f.Kind}, {"vulnerability_id", f.Vulnerability},
	} {
		if c.val != "" {
			conds = append(conds, c.col+" = "+arg(c.val))
		}
	}
	if f.MinScore != nil {
		conds = append(conds, "vulnerability_score >= "+arg(*f.MinScore))
	}
	if f.Fixable {
		conds = append(conds, "package_fixed_version <> ''")
	}
	if f.ClusterWide {
		conds = append(conds, "resource_namespace = ''")
	}
	if f.Text != "" {
		// The pattern's own % and _ are escaped, so the text is matched as it is.
		p := arg("%" + likeEscaper.Replace(f.Text) + "%")
		var ors []string
		for _, col := range []string{"message", "resource_name", "policy", "rule", "vulnerability_id", "package_name"} {
			ors = append(ors, col+" "+d.like+" "+p+` ESCAPE '\'`)
		}
		conds = append(conds, "("+strings.Join(ors, " OR ")+")")
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Fleet counts the filter's results per cluster and per cluster, source and policy, sorted by name (by their
// bytes, in both databases), at most limit of each (0: all); truncated says that limit left some out. It lists
// no failing results (see Failing).
func (s *Store) Fleet(ctx context.Context, f Filter, limit int) (v FleetView, truncated bool, err error) {
	where, args := f.where(s.d)
	var cut string
	if limit > 0 {
		cut = fmt.Sprintf(" LIMIT %d", limit+1)
	}
	v = FleetView{Clusters: []ClusterCounts{}, Policies: []PolicyCounts{}}
	if err := s.scanRows(ctx, `SELECT cluster, `+countsSQL+` FROM results`+where+` GROUP BY cluster ORDER BY cluster`+
		s.d.byteOrder+cut, args, func(rows *sql.Rows) error {
		v.Clusters = append(v.Clusters, ClusterCounts{})
		last := &v.Clusters[len(v.Clusters)-1]
		return rows.Scan(append([]any{&last.Cluster}, last.countsDest()...)...)
	}); err != nil {
		return FleetView{}, false, err
	}
	if err := s.scanRows(ctx, `SELECT cluster, source, policy, `+countsSQL+` FROM results`+where+
		` GROUP BY cluster, source, policy ORDER BY cluster`+s.d.byteOrder+`, source`+s.d.byteOrder+`, policy`+
		s.d.byteOrder+cut, args, func(rows *sql.Rows) error {
		v.Policies = append(v.Policies, PolicyCounts{})
		last := &v.Policies[len(v.Policies)-1]
		return rows.Scan(append([]any{&last.Cluster, &last.Source, &last.Policy}, last.countsDest()...)...)
	}); err != nil {
		return FleetView{}, false, err
	}
	if limit > 0 && len(v.Clusters) > limit {
		v.Clusters, truncated = v.Clusters[:limit], true
	}
	if limit > 0 && len(v.Policies) > limit {
		v.Policies, truncated = v.Policies[:limit], true
	}
	return v, truncated, nil
}

// Failing lists the failing results. The database orders them, so that a limit cuts at the same place as the
// full list would; with PostgreSQL, the order of names follows the database's collation. The list also stops
// once its text passes MaxListBytes; the bool says whether it was cut.
func (s *Store) Failing(ctx context.Context, f Filter) ([]FailingResult, bool, error) {
	where, args := f.where(s.d)
	q := `SELECT ` + currentColumns + ` FROM results` + where + ` AND outcome IN ('fail', 'error')
		ORDER BY cluster, resource_namespace, source, policy, rule, resource_kind, resource_name, key`
	if f.Limit > 0 {
		// One more than asked tells whether the list was cut.
		q += fmt.Sprintf(" LIMIT %d", f.Limit+1)
	}
	out, cut, err := s.queryCurrent(ctx, MaxListBytes, q, args...)
	if err != nil {
		return nil, false, err
	}
	if f.Limit > 0 && len(out) > f.Limit {
		return out[:f.Limit], true, nil
	}
	return out, cut, nil
}

// currentColumns are the columns of a current result that scanCurrent reads, in its order.
const currentColumns = `key, id, cluster, source, policy, rule, category, severity, outcome, scored, message,
	resource_api_version, resource_kind, resource_namespace, resource_name, resource_uid,
	report_kind, report_namespace, report_name, state, timestamp_unix_nano, observed_unix_nano, updated_unix_nano, vulnerability_id, vulnerability_score, vulnerability_score_version,
	vulnerability_reference, package_name, package_version, package_fixed_version, package_path, package_type,
	failed_checks`

// MaxListBytes bounds the text of a failing list a query reads (messages, names), whatever the number
// of rows: a limit of 10,000 rows of messages as long as a request allows would be gigabytes. The list stops at
// the row that passes it.
const MaxListBytes = 4 << 20

// queryCurrent runs a query selecting currentColumns, reading rows until their text passes maxBytes (0: all);
// cut says that rows were left.
func (s *Store) queryCurrent(ctx context.Context, maxBytes int, q string, args ...any) (out []FailingResult, cut bool, err error) {
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	out = []FailingResult{}
	size := 0
	for rows.Next() {
		if maxBytes > 0 && size > maxBytes {
			return out, true, nil
		}
		r, err := scanCurrent(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, r)
		size += r.textSize()
	}
	return out, false, rows.Err()
}

// textSize is about what a result's text takes, the measure of MaxListBytes.
func (r *FailingResult) textSize() int {
	n := len(r.Key) + len(r.ID) + len(r.Cluster) + len(r.Source) + len(r.Policy) + len(r.Rule) + len(r.Category) +
		len(r.Severity) + len(r.Outcome) + len(r.Message) + len(r.State) +
		len(r.Resource.APIVersion) + len(r.Resource.Kind) + len(r.Resource.Namespace) + len(r.Resource.Name) +
		len(r.Resource.UID) + len(r.Report.Kind) + len(r.Report.Namespace) + len(r.Report.Name)
	if v := r.Vulnerability; v != nil {
		n += len(v.ID) + len(v.ScoreVersion) + len(v.Reference) + len(v.PackageName) + len(v.PackageVersion) +
			len(v.PackageFixedVersion) + len(v.PackagePath) + len(v.PackageType)
	}
	return n
}

func scanCurrent(rows *sql.Rows) (FailingResult, error) {
	var r FailingResult
	var scored, ts, observed, failedChecks sql.NullInt64
	var score sql.NullFloat64
	var updated int64
	var v Vulnerability
	if err := rows.Scan(&r.Key, &r.ID, &r.Cluster, &r.Source, &r.Policy, &r.Rule, &r.Category, &r.Severity,
		&r.Outcome, &scored, &r.Message,
		&r.Resource.APIVersion, &r.Resource.Kind, &r.Resource.Namespace, &r.Resource.Name, &r.Resource.UID,
		&r.Report.Kind, &r.Report.Namespace, &r.Report.Name, &r.State, &ts, &observed, &updated,
		&v.ID, &score, &v.ScoreVersion, &v.Reference, &v.PackageName, &v.PackageVersion, &v.PackageFixedVersion,
		&v.PackagePath, &v.PackageType, &failedChecks); err != nil {
		return FailingResult{}, err
	}
	if scored.Valid {
		b := scored.Int64 != 0
		r.Scored = &b
	}
	if ts.Valid {
		r.Timestamp = time.Unix(0, ts.Int64).UTC()
	}
	if observed.Valid {
		r.ObservedTimestamp = time.Unix(0, observed.Int64).UTC()
	}
	r.UpdatedAt = time.Unix(0, updated).UTC()
	if score.Valid {
		v.Score = &score.Float64
	}
	if v != (Vulnerability{}) {
		r.Vulnerability = &v
	}
	if failedChecks.Valid {
		r.FailedChecks = &failedChecks.Int64
	}
	return r, nil
}
