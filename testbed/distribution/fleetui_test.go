// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"fmt"
	"image/png"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/chromiumtest"
)

const (
	clusterEast, clusterWest = "prod-east", "prod-west"

	// Markup where the model takes any text: a policy message, a resource name, a namespace. The UI must show
	// each as the text it is.
	hostileMessage   = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	hostileName      = `web-"><img src=x onerror=alert(3)>`
	hostileNamespace = `dev-<svg onload=alert(4)>`
)

// fleetRounds is what the two clusters' collectors forward: per cluster, one OTLP request per round, each round
// days later than the one before, times relative to now. Kyverno and Gatekeeper results of several policies and
// namespaces with every outcome and severity, trivy vulnerabilities (9.8 with a fix, 5.3 without), a cluster-wide
// result, a result that goes from pass to a failure with a hostile message, one that is resolved, and policies
// that fail in one cluster and hold in the other (disallow-privileged, require-probes, and require-labels once it
// is fixed in prod-west).
func fleetRounds(now time.Time) map[string][][]policyresult.Result {
	at := func(daysAgo int) time.Time {
		return now.Add(-time.Duration(daysAgo) * 24 * time.Hour).Truncate(time.Second)
	}
	subject := func(kind, ns, name string) policyresult.Resource {
		api := "v1"
		if kind != "Pod" && kind != "Namespace" {
			api = "apps/v1"
		}
		return policyresult.Resource{APIVersion: api, Kind: kind, Namespace: ns, Name: name}
	}
	kyverno := func(cluster, policy string, outcome policyresult.Outcome, sev policyresult.Severity,
		res policyresult.Resource, daysAgo int,
	) policyresult.Result {
		msg := "validation rule '" + policy + "' passed"
		if outcome != policyresult.OutcomePass {
			msg = fmt.Sprintf("validation rule '%s': %s", policy, outcome)
		}
		return policyresult.Result{Cluster: cluster, Source: "kyverno", Policy: policy, Rule: policy + "-rule",
			Category: "Best Practices", Severity: sev, Outcome: outcome, Message: msg, State: policyresult.StateNew,
			Resource: res, Report: policyresult.Report{Kind: "PolicyReport", Namespace: res.Namespace, Name: "pol-" + res.Name},
			Timestamp: at(daysAgo)}
	}
	later := func(r policyresult.Result, state policyresult.State, outcome policyresult.Outcome, msg string, daysAgo int) policyresult.Result {
		r.State, r.Outcome, r.Message, r.Timestamp = state, outcome, msg, at(daysAgo)
		return r
	}
	vuln := func(cluster, cve string, sev policyresult.Severity, score float64, pkg, installed, fixed, title string,
		daysAgo int,
	) policyresult.Result {
		res := subject("ReplicaSet", "shop", "web-6d4f9")
		return policyresult.Result{Cluster: cluster, Source: "trivy-operator", Policy: cve, Rule: "nginx/" + pkg,
			Category: "vulnerability", Severity: sev, Outcome: policyresult.OutcomeFail, Message: title,
			State: policyresult.StateNew, Resource: res,
			Report:    policyresult.Report{Kind: "VulnerabilityReport", Namespace: "shop", Name: "replicaset-web-6d4f9-nginx"},
			Timestamp: at(daysAgo),
			Vulnerability: &policyresult.Vulnerability{ID: cve, Score: &score, ScoreVersion: "3",
				Reference: "https://avd.aquasec.com/nvd/" + strings.ToLower(cve), PackageName: pkg, PackageVersion: installed,
				PackageFixedVersion: fixed, PackageType: "debian"}}
	}
	const (
		pass, fail, warn = policyresult.OutcomePass, policyresult.OutcomeFail, policyresult.OutcomeWarn
		errored, skip    = policyresult.OutcomeError, policyresult.OutcomeSkip
		critical, high   = policyresult.SeverityCritical, policyresult.SeverityHigh
		medium, low      = policyresult.SeverityMedium, policyresult.SeverityLow
		info             = policyresult.SeverityInfo
	)
	registries := kyverno(clusterEast, "restrict-image-registries", pass, low, subject("Pod", hostileNamespace, hostileName), 5)
	latestTag := kyverno(clusterEast, "disallow-latest-tag", fail, medium, subject("Pod", "shop", "old-1"), 5)
	ownerLabel := kyverno(clusterEast, "k8srequiredlabels", errored, "", subject("Namespace", "", "payments"), 5)
	ownerLabel.Source, ownerLabel.Rule = "gatekeeper", "all-must-have-owner"
	benchmark := kyverno(clusterEast, "cis-1.2.1", skip, info, policyresult.Resource{}, 5)
	benchmark.Source, benchmark.Report = "kube-bench", policyresult.Report{Kind: "ClusterPolicyReport", Name: "cis"}
	westLabels := kyverno(clusterWest, "require-labels", fail, medium, subject("Deployment", "shop", "web"), 4)
	return map[string][][]policyresult.Result{
		clusterEast: {{
			kyverno(clusterEast, "disallow-privileged", fail, high, subject("Pod", "shop", "web-1"), 5),
			kyverno(clusterEast, "disallow-privileged", fail, high, subject("Pod", "shop", "web-2"), 5),
			kyverno(clusterEast, "require-labels", pass, medium, subject("Deployment", "shop", "web"), 5),
			kyverno(clusterEast, "require-labels", fail, medium, subject("Deployment", "billing", "api"), 5),
			kyverno(clusterEast, "require-probes", fail, low, subject("Deployment", "billing", "api"), 5),
			registries, latestTag, ownerLabel, benchmark,
			vuln(clusterEast, "CVE-2026-0001", critical, 9.8, "openssl", "3.0.7", "3.0.8", "openssl: buffer overflow in X.509 checks", 5),
			vuln(clusterEast, "CVE-2026-0002", medium, 5.3, "zlib", "1.2.13", "", "zlib: excessive memory use in inflate", 5),
		}, {
			later(registries, policyresult.StateChanged, fail, hostileMessage, 2),
			later(latestTag, policyresult.StateResolved, fail, latestTag.Message, 2),
		}},
		clusterWest: {{
			kyverno(clusterWest, "disallow-privileged", pass, high, subject("Pod", "shop", "web-1"), 4),
			kyverno(clusterWest, "disallow-privileged", pass, high, subject("Pod", "shop", "web-2"), 4),
			westLabels,
			kyverno(clusterWest, "require-probes", skip, low, subject("Deployment", "billing", "api"), 4),
			kyverno(clusterWest, "verify-image-signatures", errored, high, subject("Pod", "payments", "checkout-1"), 4),
			kyverno(clusterWest, "require-requests-limits", warn, medium, subject("Pod", "payments", "checkout-1"), 4),
			vuln(clusterWest, "CVE-2026-0001", critical, 9.8, "openssl", "3.0.7", "3.0.8", "openssl: buffer overflow in X.509 checks", 4),
		}, {
			later(westLabels, policyresult.StateChanged, pass, "validation rule 'require-labels' passed", 1),
		}},
	}
}

// TestFleetUIInChromium forwards two clusters' results through two collectors to bin/results-server, on SQLite and
// on PostgreSQL, signs in through the login form of a real headless Chromium, and checks that every page shows
// what the database holds (read with SQL of its own), that the filter form narrows the failing list as SQL does,
// and that markup in a message, a resource name or a namespace is shown as text and never runs.
//
// With RESULTS_UI_SCREENSHOTS set to a directory, the SQLite run writes its screenshots there (docs/images).
func TestFleetUIInChromium(t *testing.T) {
	browser := chromiumtest.Start(t)
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "results.db")
		testFleetUI(t, browser, dir, "sqlite://"+path, "sqlite", path+"?_pragma=busy_timeout(10000)",
			os.Getenv("RESULTS_UI_SCREENSHOTS"))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.Start(t).CreateDB("fleet_ui")
		testFleetUI(t, browser, t.TempDir(), dsn, "pgx", dsn, "")
	})
}

func testFleetUI(t *testing.T, browser *chromiumtest.Browser, dir, dsn, driver, driverDSN, shots string) {
	server := startResultsServer(t, dir, dsn)
	db, err := sql.Open(driver, driverDSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	forwardFleet(t, dir, server, fleetDB{t: t, db: db})
	ui := &fleetUI{t: t, p: browser.Page(t), db: fleetDB{t: t, db: db}, base: server.URL(), shots: cmp.Or(shots, t.TempDir())}
	ui.signIn(browser)
	ui.overview()
	ui.policies()
	ui.namespaces()
	ui.failingList()
	ui.paging()
	ui.trend()
}

// forwardFleet runs one collector per cluster, each forwarding to server, sends each its cluster's rounds over
// OTLP, and waits until the database holds every outcome.
func forwardFleet(t *testing.T, dir string, server resultsServer, db fleetDB) {
	rounds := fleetRounds(time.Now())
	records, keys := 0, map[string]bool{}
	for _, cluster := range slices.Sorted(maps.Keys(rounds)) {
		cdir := filepath.Join(dir, cluster)
		require.NoError(t, os.Mkdir(cdir, 0o750))
		_, p := start(t, cdir, server.collectorOverlay(map[string]string{"environment": "test", "collector": cluster}),
			"KUBECONFIG="+filepath.Join(cdir, "no-kubeconfig"), "OTELCOL_POLICY_CLUSTER_NAME="+cluster)
		for _, round := range rounds[cluster] {
			sendOTLP(t, p.HTTP, round...)
			records += len(round)
			for i := range round {
				keys[round[i].Key()] = true
			}
		}
	}
	collectortest.Eventually(t, 30*time.Second, func() error {
		var history, current int
		if err := db.db.QueryRow(`SELECT (SELECT COUNT(*) FROM result_history), (SELECT COUNT(*) FROM results)`).
			Scan(&history, &current); err != nil {
			return err
		}
		if history != records || current != len(keys) {
			return fmt.Errorf("the database holds %d of %d outcomes, %d of %d results", history, records, current, len(keys))
		}
		return nil
	})
}

// fleetDB reads the results server's database with SQL of the test's own, the same on SQLite and PostgreSQL.
type fleetDB struct {
	t  *testing.T
	db *sql.DB
}

// rows runs q and returns its rows, every column as text ("" for NULL), as a page shows them.
func (d fleetDB) rows(q string, args ...any) [][]string {
	d.t.Helper()
	rows, err := d.db.Query(q, args...)
	require.NoError(d.t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(d.t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(d.t, rows.Scan(ptrs...))
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	require.NoError(d.t, rows.Err())
	return out
}

// counts runs q, whose rows end with a count, and returns the counts by the columns before it, joined by "/".
func (d fleetDB) counts(q string, args ...any) map[string]string {
	d.t.Helper()
	out := map[string]string{}
	for _, r := range d.rows(q, args...) {
		out[strings.Join(r[:len(r)-1], "/")] = r[len(r)-1]
	}
	return out
}

// or0 is a count of a map from counts, "0" when absent.
func or0(counts map[string]string, key string) string {
	if n, ok := counts[key]; ok {
		return n
	}
	return "0"
}

// column is the i-th column of rows.
func column(rows [][]string, i int) []string {
	out := make([]string, len(rows))
	for j, r := range rows {
		out[j] = r[i]
	}
	return out
}

// css quotes s as a CSS string, for attribute selectors.
func css(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\a `).Replace(s) + `"`
}

const currentSQL = ` FROM results WHERE resolved = 0`

// failingSQL selects the columns of the failing list, in its order, with the condition where.
const failingSQL = `SELECT key, cluster, resource_namespace, resource_kind, resource_name, source, policy, rule, severity,
	outcome, message, vulnerability_id, vulnerability_score, package_name, package_version, package_fixed_version` +
	currentSQL + ` AND outcome IN ('fail', 'error')%s ORDER BY updated_unix_nano DESC, key DESC`

// fleetUI is the browser on one results server, and the database behind it.
type fleetUI struct {
	t     *testing.T
	p     *chromiumtest.Page
	db    fleetDB
	base  string
	shots string
}

// open loads path and requires it to answer 200 OK.
func (u *fleetUI) open(path string) {
	u.t.Helper()
	require.Equal(u.t, 200, u.p.Navigate(u.base+path), path)
	u.assertInert()
}

// assertInert checks that nothing on the page ran or was refused: no dialog (an injected script), no console
// error (a script or style the Content-Security-Policy refused, a failed load), no element made of a value.
func (u *fleetUI) assertInert() {
	u.t.Helper()
	where := u.p.URL()
	assert.Empty(u.t, u.p.Dialogs(), where)
	assert.Empty(u.t, u.p.ConsoleErrors(), where)
	for _, sel := range []string{"script", "img[src=x]", "[onerror]", "[onload]"} {
		assert.Zero(u.t, u.p.Count(sel), "%s on %s", sel, where)
	}
}

// screenshot writes a PNG of the page as name.png in the screenshot directory and checks that it is one.
func (u *fleetUI) screenshot(name string) {
	u.t.Helper()
	path := filepath.Join(u.shots, name+".png")
	u.p.Screenshot(path)
	f, err := os.Open(path)
	require.NoError(u.t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(u.t, err, path)
	assert.Equal(u.t, chromiumtest.Width, img.Bounds().Dx(), path)
	assert.GreaterOrEqual(u.t, img.Bounds().Dy(), chromiumtest.Height, path)
}

// signIn is refused a wrong token in a tab of its own, then opens a page without a token in the tab of the
// test, is sent to the login form, and lands back on that page after signing in.
func (u *fleetUI) signIn(browser *chromiumtest.Browser) {
	t, p := u.t, u.p
	asked := "/results?cluster=" + clusterEast
	refused := browser.Page(t)
	require.Equal(t, 200, refused.Navigate(u.base+"/"))
	refused.SetValue("input#token", "not-"+resultsToken)
	refused.Submit("form.login")
	assert.Equal(t, 401, refused.Status())
	assert.Equal(t, "That token is not accepted.", refused.Text("p#login-error"))
	assert.Zero(t, refused.Count("form.logout"))
	assert.Empty(t, refused.Dialogs())
	// A browser logs every document answered with an error status: the one error this tab may show.
	assert.Equal(t, []string{"Failed to load resource: the server responded with a status of 401 (Unauthorized)"},
		refused.ConsoleErrors())

	u.open(asked)
	login, err := url.Parse(p.URL())
	require.NoError(t, err)
	assert.Equal(t, "/login", login.Path)
	assert.Equal(t, asked, login.Query().Get("next"))
	assert.Zero(t, p.Count("table#failing"))
	p.SetValue("input#token", resultsToken)
	p.Submit("form.login")
	assert.Equal(t, 200, p.Status())
	assert.Equal(t, u.base+asked, p.URL())
	assert.Zero(t, p.Count("p#login-error"))
	assert.Equal(t, 1, p.Count("form.logout"), "signed in")
	assert.Equal(t, clusterEast, p.Attr("form.filters input[name=cluster]", "value"))
	u.assertInert()
}

// overview checks the per-cluster counts, the charts and the comparison of the fleet overview.
func (u *fleetUI) overview() {
	t, p, db := u.t, u.p, u.db
	u.open("/")
	totals := db.rows(`SELECT cluster, COUNT(*)` + currentSQL + ` GROUP BY cluster ORDER BY cluster`)
	clusters := column(totals, 0)
	require.Equal(t, []string{clusterEast, clusterWest}, clusters)
	byOutcome := db.counts(`SELECT cluster, outcome, COUNT(*)` + currentSQL + ` GROUP BY cluster, outcome`)
	bySeverity := db.counts(`SELECT cluster, severity, COUNT(*)` + currentSQL +
		` AND outcome IN ('fail', 'error') GROUP BY cluster, severity`)
	failing := db.counts(`SELECT cluster, COUNT(*)` + currentSQL + ` AND outcome IN ('fail', 'error') GROUP BY cluster`)

	assert.Equal(t, len(clusters), p.Count("table#clusters tbody tr[data-cluster]"))
	for _, c := range totals {
		row := "table#clusters tr[data-cluster=" + css(c[0]) + "] "
		for _, o := range []string{"pass", "fail", "warn", "error", "skip"} {
			assert.Equal(t, or0(byOutcome, c[0]+"/"+o), p.Text(row+"td.n-"+o), "%s %s", c[0], o)
		}
		assert.Equal(t, c[1], p.Text(row+"td.n-total"), c[0])
		for _, s := range []string{"critical", "high", "medium", "low", "info", "none"} {
			sev := strings.TrimSuffix(s, "none")
			assert.Equal(t, or0(bySeverity, c[0]+"/"+sev), p.Text(row+"td.sev-"+s), "%s failing %s", c[0], s)
		}
	}
	assert.Equal(t, clusters, p.Texts("svg#outcomes-chart text.label"))
	assert.Equal(t, column(totals, 1), p.Texts("svg#outcomes-chart text.total"))
	assert.Equal(t, clusters, p.Texts("svg#severity-chart text.label"))
	assert.Equal(t, []string{or0(failing, clusterEast), or0(failing, clusterWest)}, p.Texts("svg#severity-chart text.total"))

	// The comparison: every policy failing in one cluster and holding in another, and only those.
	across := u.policiesAcross()
	var differing, shown []string
	for _, name := range slices.Sorted(maps.Keys(across)) {
		if across[name].differs {
			differing = append(differing, name)
		}
	}
	require.Equal(t, []string{"disallow-privileged", "require-labels", "require-probes"}, differing)
	rows := p.Count("table#compare tbody tr")
	assert.Equal(t, rows, p.Count("table#compare tbody tr.differs"))
	for i := 1; i <= rows; i++ {
		row := fmt.Sprintf("table#compare tbody tr:nth-child(%d) ", i)
		name := p.Text(row + "th")
		shown = append(shown, name)
		for _, c := range clusters {
			assert.Equal(t, across[name].cells[c], p.Text(row+"td[data-cluster="+css(c)+"]"), "%s in %s", name, c)
		}
	}
	slices.Sort(shown)
	assert.Equal(t, differing, shown)
	u.screenshot("fleet-overview")
}

// policyAcross is one policy's "failing / total" in each cluster that has results of it ("–" in the others).
type policyAcross struct {
	failing int
	cells   map[string]string
	differs bool
}

func (u *fleetUI) policiesAcross() map[string]policyAcross {
	rows := u.db.rows(`SELECT policy, cluster, SUM(CASE WHEN outcome IN ('fail', 'error') THEN 1 ELSE 0 END), COUNT(*)` +
		currentSQL + ` GROUP BY source, policy, cluster`)
	out := map[string]policyAcross{}
	failingIn, holdingIn := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		p, ok := out[r[0]]
		if !ok {
			p = policyAcross{cells: map[string]string{clusterEast: "–", clusterWest: "–"}}
		}
		p.cells[r[1]] = r[2] + " / " + r[3]
		var n int
		_, err := fmt.Sscan(r[2], &n)
		require.NoError(u.t, err)
		p.failing += n
		failingIn[r[0]] = failingIn[r[0]] || n > 0
		holdingIn[r[0]] = holdingIn[r[0]] || n == 0
		out[r[0]] = p
	}
	for name, p := range out {
		p.differs = failingIn[name] && holdingIn[name]
		out[name] = p
	}
	return out
}

// policies checks the policies page, all of them and those that differ between clusters.
func (u *fleetUI) policies() {
	t, p := u.t, u.p
	u.open("/policies")
	across := u.policiesAcross()
	assert.Equal(t, fmt.Sprintf("%d policies", len(across)), p.Text("p#count"))
	assert.Equal(t, len(across), p.Count("table#policies tbody tr[data-policy]"))
	differing := 0
	for name, want := range across {
		row := "table#policies tr[data-policy=" + css(name) + "]"
		assert.Equal(t, fmt.Sprint(want.failing), p.Text(row+" td.n-failing"), name)
		for c, cell := range want.cells {
			assert.Equal(t, cell, p.Text(row+" td[data-cluster="+css(c)+"]"), "%s in %s", name, c)
		}
		isDiffering := p.Count(row+".differs") == 1
		assert.Equal(t, want.differs, isDiffering, name)
		if want.differs {
			differing++
		}
	}
	u.screenshot("fleet-policies")

	p.Click("p.toggle a")
	u.assertInert()
	assert.Equal(t, "true", mustQuery(t, p.URL()).Get("differs"))
	assert.Equal(t, fmt.Sprintf("%d policies", differing), p.Text("p#count"))
	assert.Equal(t, differing, p.Count("table#policies tbody tr.differs"))
	assert.Equal(t, differing, p.Count("table#policies tbody tr"))
}

func mustQuery(t *testing.T, rawURL string) url.Values {
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Query()
}

// namespaces checks the counts per cluster and namespace.
func (u *fleetUI) namespaces() {
	t, p := u.t, u.p
	u.open("/namespaces")
	byOutcome := u.db.counts(`SELECT cluster, resource_namespace, outcome, COUNT(*)` + currentSQL +
		` GROUP BY cluster, resource_namespace, outcome`)
	totals := u.db.rows(`SELECT cluster, resource_namespace, COUNT(*)` + currentSQL + ` GROUP BY cluster, resource_namespace`)
	assert.Equal(t, fmt.Sprintf("%d namespaces", len(totals)), p.Text("p#count"))
	assert.Equal(t, len(totals), p.Count("table#namespaces tbody tr"))
	assert.Contains(t, column(totals, 1), hostileNamespace)
	for _, ns := range totals {
		row := "table#namespaces tr[data-cluster=" + css(ns[0]) + "][data-namespace=" + css(ns[1]) + "] "
		name := ns[1]
		if name == "" {
			name = "(cluster-wide)"
		}
		assert.Equal(t, name, p.Text(row+"th"))
		for _, o := range []string{"pass", "fail", "warn", "error", "skip"} {
			assert.Equal(t, or0(byOutcome, ns[0]+"/"+ns[1]+"/"+o), p.Text(row+"td.n-"+o), "%s/%s %s", ns[0], ns[1], o)
		}
		assert.Equal(t, ns[2], p.Text(row+"td.n-total"), "%s/%s", ns[0], ns[1])
	}
	u.screenshot("fleet-namespaces")

	// A namespace's link opens the failing list of that namespace, the markup in its name a value like any other.
	p.Click("table#namespaces tr[data-cluster=" + css(clusterEast) + "][data-namespace=" + css(hostileNamespace) + "] th a")
	u.assertInert()
	assert.Equal(t, hostileNamespace, mustQuery(t, p.URL()).Get("namespace"))
	assert.Equal(t, hostileNamespace, p.Attr("form.filters input[name=namespace]", "value"))
	assert.Len(t, u.assertFailing(" AND cluster = $1 AND resource_namespace = $2", clusterEast, hostileNamespace), 1)

	// The cluster-wide row's link opens the failing results about no namespaced resource.
	u.open("/namespaces")
	p.Click("table#namespaces tr[data-cluster=" + css(clusterEast) + "][data-namespace=\"\"] th a")
	u.assertInert()
	assert.Equal(t, "true", mustQuery(t, p.URL()).Get("cluster_wide"))
	assert.Equal(t, 1, p.Count("form.filters input[name=cluster_wide]:checked"))
	assert.NotEmpty(t, u.assertFailing(" AND cluster = $1 AND resource_namespace = ''", clusterEast))
}

// failingRows are the failing results the condition where (" AND ...") selects, in the failing list's order.
func (u *fleetUI) failingRows(where string, args ...any) [][]string {
	u.t.Helper()
	return u.db.rows(fmt.Sprintf(failingSQL, where), args...)
}

// assertFailing checks the failing list's count and rows against the failing results where selects.
func (u *fleetUI) assertFailing(where string, args ...any) [][]string {
	u.t.Helper()
	rows := u.failingRows(where, args...)
	noun := "results"
	if len(rows) == 1 {
		noun = "result"
	}
	assert.Equal(u.t, fmt.Sprintf("%d failing %s", len(rows), noun), u.p.Text("p#count"), u.p.URL())
	u.assertFailingRows(rows)
	return rows
}

// assertFailingRows checks that the failing list shows exactly rows (of failingSQL), in order.
func (u *fleetUI) assertFailingRows(rows [][]string) {
	t, p := u.t, u.p
	t.Helper()
	where := p.URL()
	require.Equal(t, len(rows), p.Count("table#failing tbody tr[data-key]"), where)
	var resources, severities, messages []string
	for i, r := range rows {
		assert.Equal(t, r[0], p.Attr(fmt.Sprintf("table#failing tbody tr:nth-child(%d)", i+1), "data-key"), where)
		resource := "(cluster)"
		if r[3] != "" {
			resource = r[3] + "/" + r[4]
		}
		resources = append(resources, resource)
		severities = append(severities, cmp.Or(r[8], "none"))
		msg := r[10]
		if vuln := strings.Join(r[11:16], ""); vuln != "" {
			v := r[13] + " " + r[14]
			if r[12] != "" {
				v = r[12] + " " + v
			}
			if r[15] != "" {
				v += " → " + r[15]
			}
			msg = v + " " + msg
		}
		messages = append(messages, msg)
	}
	for col, i := range map[string]int{"cluster": 1, "namespace": 2, "source": 5, "policy": 6, "rule": 7, "outcome": 9} {
		assert.Equal(t, column(rows, i), p.Texts("table#failing td.c-"+col), "%s on %s", col, where)
	}
	assert.Equal(t, resources, p.Texts("table#failing td.c-resource"), where)
	assert.Equal(t, severities, p.Texts("table#failing td.c-severity"), where)
	assert.Equal(t, messages, p.Texts("table#failing td.c-message"), where)
}

// filter fills the filter form with the name/value pairs kv, submits it, and checks the page keeps them.
func (u *fleetUI) filter(kv ...string) {
	u.t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		tag := "input"
		if kv[i] == "severity" {
			tag = "select"
		}
		u.p.SetValue("form.filters "+tag+"[name="+kv[i]+"]", kv[i+1])
	}
	u.p.Submit("form.filters")
	u.assertInert()
	q := mustQuery(u.t, u.p.URL())
	for i := 0; i+1 < len(kv); i += 2 {
		assert.Equal(u.t, kv[i+1], q.Get(kv[i]), kv[i])
	}
}

// failingList checks the failing list, each filter of its form against SQL, the hostile result in the list and
// on its page, and a vulnerability's page.
func (u *fleetUI) failingList() {
	t, p := u.t, u.p
	u.open("/results")
	all := u.assertFailing("")
	require.Len(t, all, 10)
	u.screenshot("fleet-results")

	u.filter("cluster", clusterEast)
	assert.Equal(t, clusterEast, p.Attr("form.filters input[name=cluster]", "value"))
	assert.Len(t, u.assertFailing(" AND cluster = $1", clusterEast), 8)

	u.filter("cluster", "", "severity", "high")
	assert.Equal(t, "high", p.Attr("form.filters select[name=severity] option[selected]", "value"))
	assert.Len(t, u.assertFailing(" AND severity = $1", "high"), 3)

	// The box ticked in the form, the score added; the shareable URL keeps both.
	u.open("/results")
	p.SetChecked("form.filters input[name=fixable]", true)
	u.filter("min_score", "8")
	assert.Equal(t, "true", mustQuery(t, p.URL()).Get("fixable"))
	assert.Equal(t, 1, p.Count("form.filters input[name=fixable]:checked"))
	fixable := u.assertFailing(" AND vulnerability_score >= $1 AND package_fixed_version <> ''", 8.0)
	require.Len(t, fixable, 2)
	assert.Equal(t, []string{"CVE-2026-0001", "CVE-2026-0001"}, column(fixable, 6))
	u.vulnerabilityPage(fixable[0][0])

	u.open("/results")
	u.filter("q", "<script>")
	assert.Equal(t, "<script>", p.Attr("form.filters input[name=q]", "value"))
	hostile := u.assertFailing(` AND (LOWER(message) LIKE $1 OR LOWER(resource_name) LIKE $1 OR LOWER(policy) LIKE $1
		OR LOWER(rule) LIKE $1 OR LOWER(vulnerability_id) LIKE $1 OR LOWER(package_name) LIKE $1)`, "%<script>%")
	require.Len(t, hostile, 1)
	row := "table#failing tr[data-key=" + css(hostile[0][0]) + "] "
	assert.Equal(t, hostileMessage, p.Text(row+"td.c-message"))
	assert.Equal(t, hostileNamespace, p.Text(row+"td.c-namespace"))
	assert.Equal(t, "Pod/"+hostileName, p.Text(row+"td.c-resource"))
	assert.Zero(t, p.Count("td.c-message *"), "the message is text, not elements")
	assert.Zero(t, p.Count("svg[onload]"))

	p.Click(row + "td.time a")
	u.assertInert()
	u.resultPage(hostile[0][0])
}

// resultPage checks the page of result key, which shows the hostile message, against the database.
func (u *fleetUI) resultPage(key string) {
	t, p := u.t, u.p
	assert.Equal(t, u.base+"/results/"+key, p.URL())
	cur := u.db.rows(`SELECT cluster, source, policy, rule, message, state, resource_api_version, resource_kind,
		resource_namespace, resource_name, m.json, body_json FROM results r JOIN metadata m ON m.id = r.metadata_id
		WHERE key = $1`, key)
	require.Len(t, cur, 1)
	r := cur[0]
	for i, f := range []string{"cluster", "source", "policy", "rule", "message", "state"} {
		assert.Equal(t, r[i], p.Text("dl#current dd.f-"+f), f)
	}
	assert.Equal(t, hostileMessage, p.Text("dl#current dd.f-message"))
	assert.Equal(t, fmt.Sprintf("%s %s %s/%s", r[6], r[7], r[8], r[9]), p.Text("dl#current dd.f-resource"))
	assert.Zero(t, p.Count("dd.f-message *"))

	history := u.db.rows(`SELECT state, outcome, message FROM result_history WHERE key = $1
		ORDER BY order_unix_nano DESC, received_unix_nano DESC`, key)
	assert.Equal(t, []string{"fail", "pass"}, column(history, 1), "the failure, after the pass it replaced")
	assert.Equal(t, column(history, 0), p.Texts("table#history td.h-state"))
	assert.Equal(t, column(history, 1), p.Texts("table#history td.h-outcome"))
	assert.Equal(t, column(history, 2), p.Texts("table#history td.h-message"))

	var meta map[string]string
	require.NoError(t, json.Unmarshal([]byte(r[10]), &meta), r[10])
	assert.Equal(t, map[string]string{"environment": "test", "collector": clusterEast}, meta)
	keys := slices.Sorted(maps.Keys(meta))
	var values []string
	for _, k := range keys {
		values = append(values, meta[k])
	}
	assert.Equal(t, keys, p.Texts("table#extra-metadata tbody th"))
	assert.Equal(t, values, p.Texts("table#extra-metadata tbody td"))

	var shown, stored any
	require.NoError(t, json.Unmarshal([]byte(p.Text("pre#body")), &shown))
	require.NoError(t, json.Unmarshal([]byte(r[11]), &stored), r[11])
	assert.Equal(t, stored, shown)
	assert.Equal(t, hostileMessage, shown, "the body is the message sent")
	u.screenshot("fleet-result")
}

// vulnerabilityPage opens a vulnerability's page from the failing list and checks its finding fields.
func (u *fleetUI) vulnerabilityPage(key string) {
	t, p := u.t, u.p
	p.Click("table#failing tr[data-key=" + css(key) + "] td.time a")
	u.assertInert()
	assert.Equal(t, u.base+"/results/"+key, p.URL())
	v := u.db.rows(`SELECT policy, vulnerability_score, vulnerability_score_version, package_fixed_version
		FROM results WHERE key = $1`, key)
	require.Len(t, v, 1)
	assert.Equal(t, v[0][0], p.Text("dl#current dd.f-policy"))
	assert.Equal(t, v[0][1]+" (CVSS "+v[0][2]+")", p.Text("dl#vulnerability dd.f-score"))
	assert.Equal(t, v[0][3], p.Text("dl#vulnerability dd.f-fixed"))
}

// paging walks the failing list four results a page, by its next-page links.
func (u *fleetUI) paging() {
	t, p := u.t, u.p
	all := u.failingRows("")
	u.open("/results?size=4")
	for from := 0; ; from += 4 {
		u.assertFailingRows(all[from:min(from+4, len(all))])
		assert.Equal(t, min(from, 1), p.Count("a#first"), "a first-page link after the first page")
		if from+4 >= len(all) {
			assert.Zero(t, p.Count("a#next"), "no next page after the last")
			return
		}
		p.Click("a#next")
		u.assertInert()
	}
}

// trend checks that the trend's last day holds each cluster's failing count.
func (u *fleetUI) trend() {
	t, p := u.t, u.p
	u.open("/trend")
	failing := u.db.rows(`SELECT cluster, COUNT(*)` + currentSQL + ` AND outcome IN ('fail', 'error') GROUP BY cluster ORDER BY cluster`)
	assert.Equal(t, column(failing, 0), p.Texts("table#trend-data thead th.n"))
	assert.Equal(t, 30, p.Count("table#trend-data tbody tr[data-day]"))
	last := "table#trend-data tbody tr:last-child"
	assert.Equal(t, time.Now().UTC().Format("2006-01-02"), p.Attr(last, "data-day"))
	assert.Equal(t, column(failing, 1), p.Texts(last+" td"))
	assert.Equal(t, len(failing), p.Count("svg#trend-chart polyline"))
	u.screenshot("fleet-trend")
}
