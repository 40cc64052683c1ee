// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// The pages' numbers and escaping are tested in a real browser by the distribution's fleet UI test; these
// tests cover what a browser does not see: status codes, headers, parameters, sign-in and paging.

// readerToken is the token of the tests of sign-in and of the HTTP API's authentication.
const readerToken = "reader-secret-0123456789abcdef-0123"

func getPage(t *testing.T, c *http.Client, u string) (int, http.Header, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if dir := os.Getenv("RESULTS_UI_DUMP"); dir != "" {
		name := strings.NewReplacer("/", "_", "?", "_", "&", "_").Replace(strings.TrimPrefix(resp.Request.URL.RequestURI(), "/"))
		_ = os.WriteFile(filepath.Join(dir, "page"+name+".html"), body, 0o600)
	}
	return resp.StatusCode, resp.Header, string(body)
}

func TestUIPages(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := fleetServer(t, newDSN(t))
		// disallow-latest has an error in east and holds in west: the policies that differ.
		forward(t, s, batch(spec{cluster: "west", policy: "disallow-latest", namespace: "shop", name: "cart",
			outcome: policyresult.OutcomePass, observed: 1}.pb()))
		hs := httptest.NewServer(s.HTTPHandler())
		t.Cleanup(hs.Close)
		trivy := fleetInputs[6].model()
		for _, tt := range []struct {
			path string
			code int
			want []string
		}{
			{"/", 200, []string{`data-cluster="east"`, `data-cluster="west"`, `id="outcomes-chart"`, `id="severity-chart"`,
				`<tr class="differs">`}},
			{"/?cluster=west", 200, []string{`data-cluster="west"`}},
			{"/policies", 200, []string{`data-policy="require-labels"`, `data-policy="CVE-2026-1234"`, "3 policies"}},
			{"/policies?differs=true", 200, []string{"1 policy", `data-policy="disallow-latest"`}},
			{"/namespaces", 200, []string{`data-namespace="shop"`, `data-namespace="billing"`, `data-namespace="default"`}},
			{"/results?cluster_wide=true&namespace=shop", 400, []string{"cluster_wide"}},
			{"/results", 200, []string{"4 failing results", `data-key="` + trivy.Key() + `"`}},
			{"/results?severity=critical&fixable=&min_score=", 200, []string{"1 failing result<"}},
			{"/results/" + trivy.Key(), 200, []string{"openssl 3.0.1 is vulnerable", `id="history"`, "k8s.cluster.name"}},
			{"/trend?days=7", 200, []string{`id="trend-chart"`, `id="trend-data"`}},
			{"/results/nope", 404, []string{"no result with this key"}},
			{"/results?colour=red", 400, []string{"unknown parameter colour"}},
			{"/results?size=0", 400, []string{"parameter size"}},
			{"/results?after=garbage", 400, []string{"cursor"}},
			{"/policies?page=9", 400, []string{"parameter page"}},
			{"/trend?days=400", 400, []string{"parameter days"}},
			{"/nowhere", 404, nil},
		} {
			code, h, body := getPage(t, hs.Client(), hs.URL+tt.path)
			assert.Equal(t, tt.code, code, tt.path)
			for _, w := range tt.want {
				assert.Contains(t, body, w, tt.path)
			}
			if tt.code != 404 || len(tt.want) > 0 {
				assert.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"), tt.path)
				assert.Contains(t, h.Get("Content-Security-Policy"), "default-src 'none'", tt.path)
				assert.NotContains(t, body, "<script", tt.path)
			}
		}
		code, h, css := getPage(t, hs.Client(), hs.URL+"/static/style.css")
		assert.Equal(t, 200, code)
		assert.Contains(t, h.Get("Content-Type"), "text/css")
		assert.Contains(t, css, "--fail")
	})
}

// TestUISignIn: with tokens, a browser without one goes to the login page and comes back to the page it asked
// for; the token it gives is kept in an HttpOnly cookie; the JSON API and /metrics still want the header.
func TestUISignIn(t *testing.T) {
	hs := httptest.NewServer(sqliteServer(t, readerToken).HTTPHandler())
	t.Cleanup(hs.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}

	code, _, body := getPage(t, c, hs.URL+"/results?cluster=east")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `name="token"`, "sent to the login page")
	assert.Contains(t, body, `value="/results?cluster=east"`, "which brings it back")

	post := func(form url.Values, header ...string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, hs.URL+"/login", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post(url.Values{"token": {"wrong"}, "next": {"/results"}})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp = post(url.Values{"token": {readerToken}, "next": {"/results"}}, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a login posted by another site")
	resp = post(url.Values{"token": {readerToken}, "next": {"//evil.example/x"}})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "/", resp.Request.URL.Path, "never redirected off this server")
	u, _ := url.Parse(hs.URL)
	cookies := jar.Cookies(u)
	require.Len(t, cookies, 1)
	assert.Equal(t, tokenCookie, cookies[0].Name)

	code, _, body = getPage(t, c, hs.URL+"/results?cluster=east")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `id="count"`)
	assert.Contains(t, body, "Sign out")

	for _, path := range []string{"/v1/fleet", "/metrics"} {
		code, _, _ := getPage(t, c, hs.URL+path)
		assert.Equal(t, http.StatusUnauthorized, code, "%s takes the header only", path)
	}

	// The cookie's attributes, as the server sets them.
	raw := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("token="+readerToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sqliteServer(t, readerToken).HTTPHandler().ServeHTTP(raw, req)
	setCookie := raw.Header().Get("Set-Cookie")
	assert.Contains(t, setCookie, "HttpOnly")
	assert.Contains(t, setCookie, "SameSite=Lax")
	assert.NotContains(t, setCookie, readerToken, "not the token as it is")

	resp, err = c.Post(hs.URL+"/logout", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	code, _, body = getPage(t, c, hs.URL+"/")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `name="token"`, "signed out")
}

// TestUIFailingListPages: the failing list pages by cursor through every failing result exactly once, newest
// change first, and its count is capped.
func TestUIFailingListPages(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := open(t, newDSN(t))
		var results []*pb.Result
		for i := range 23 {
			results = append(results, spec{cluster: "east", policy: "require-labels", namespace: "shop",
				name: "pod-" + string(rune('a'+i)), outcome: policyresult.OutcomeFail, observed: 1}.pb())
		}
		// Two requests at two times: the second's results are newer, and share their updated time.
		s.now = func() time.Time { return t0 }
		forward(t, s, batch(results[:10]...))
		s.now = func() time.Time { return t0.Add(time.Minute) }
		forward(t, s, batch(results[10:]...))
		hs := httptest.NewServer(s.HTTPHandler())
		t.Cleanup(hs.Close)

		keyRE := regexp.MustCompile(`data-key="([0-9a-f]+)"`)
		nextRE := regexp.MustCompile(`id="next" href="([^"]+)"`)
		seen := map[string]bool{}
		var order []string
		next := "/results?size=5"
		for pages := 0; next != ""; pages++ {
			require.Less(t, pages, 10)
			code, _, body := getPage(t, hs.Client(), hs.URL+next)
			require.Equal(t, 200, code, next)
			assert.Contains(t, body, "23 failing results")
			for _, m := range keyRE.FindAllStringSubmatch(body, -1) {
				assert.False(t, seen[m[1]], "key %s on two pages", m[1])
				seen[m[1]] = true
				order = append(order, m[1])
			}
			next = ""
			if m := nextRE.FindStringSubmatch(body); m != nil {
				next = strings.ReplaceAll(m[1], "&amp;", "&")
			}
		}
		assert.Len(t, seen, 23)
		newer := map[string]bool{}
		for _, r := range results[10:] {
			newer[r.GetKey()] = true
		}
		for i, k := range order {
			assert.Equal(t, i < 13, newer[k], "position %d: the newer results come first", i)
		}
	})
}

// TestTrend: the failing count at each day's end follows every result's outcomes across days, starts from what
// was failing before the first day shown, and ends at the current failing count.
func TestTrend(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := open(t, newDSN(t))
		day := 24 * time.Hour
		at := func(sp spec, d time.Duration) *pb.Result {
			r := sp.pb()
			r.ObservedTimestamp = timestamppb.New(t0.Add(d))
			return r
		}
		a := spec{cluster: "east", policy: "p", namespace: "shop", name: "a", outcome: policyresult.OutcomeFail}
		b := spec{cluster: "east", policy: "p", namespace: "shop", name: "b", outcome: policyresult.OutcomeFail}
		c := spec{cluster: "east", policy: "p", namespace: "shop", name: "c", outcome: policyresult.OutcomeError}
		w := spec{cluster: "west", policy: "p", namespace: "shop", name: "w", outcome: policyresult.OutcomeFail}
		aFixed, bGone := a, b
		aFixed.outcome, aFixed.state = policyresult.OutcomePass, policyresult.StateChanged
		bGone.state = policyresult.StateResolved
		// Out of order, as retries deliver them: the history orders by observed time.
		forward(t, s, batch(at(aFixed, -1*day), at(c, -10*day), at(w, -2*day)))
		forward(t, s, batch(at(a, -3*day), at(b, -2*day), at(bGone, 0)))

		series, dates, err := s.store.Trend(context.Background(), []string{"east", "west"}, 7, t0)
		require.NoError(t, err)
		require.Len(t, dates, 7)
		assert.Equal(t, t0.Truncate(day).Add(-6*day), dates[0])
		assert.Equal(t, []store.TrendSeries{
			{Cluster: "east", Failing: []int64{1, 1, 1, 2, 3, 2, 1}},
			{Cluster: "west", Failing: []int64{0, 0, 0, 0, 1, 1, 1}},
		}, series)

		v, err := s.Fleet(context.Background(), store.Filter{})
		require.NoError(t, err)
		assert.Len(t, v.Failing, 2, "the last day is today's failing count: c in east, w in west")

		series, _, err = s.store.Trend(context.Background(), []string{"west"}, 3, t0)
		require.NoError(t, err)
		assert.Equal(t, []store.TrendSeries{{Cluster: "west", Failing: []int64{1, 1, 1}}}, series)
	})
}

func TestParseCursor(t *testing.T) {
	c := store.Cursor{UpdatedUnixNano: 1795334400000000000, Key: "4cffc64a659a59e95cc6a257a54514fb"}
	got, err := store.ParseCursor(c.String())
	require.NoError(t, err)
	assert.Equal(t, c, got)
	for _, bad := range []string{"", "12", "12.", ".k", "12abc.k", "x.k", "12." + strings.Repeat("k", 129)} {
		_, err := store.ParseCursor(bad)
		assert.Error(t, err, bad)
	}
}

// TestUIManyClusters: the pages show a page of clusters at a time, the most failing first (then by name, alike
// in both databases), say how many more there are and page through them.
func TestUIManyClusters(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := open(t, newDSN(t))
		// Policy q fails in c06 and holds in c00: it differs.
		req := batch(spec{cluster: "c00", policy: "q", namespace: "ns", name: "ok", outcome: policyresult.OutcomePass}.pb(),
			spec{cluster: "c06", policy: "q", namespace: "ns", name: "bad", outcome: policyresult.OutcomeFail}.pb())
		for i := range 45 {
			// Cluster i has i % 7 + 1 failing results.
			for j := range i%7 + 1 {
				req.Results = append(req.Results, spec{cluster: fmt.Sprintf("c%02d", i), policy: "p", namespace: "ns",
					name: fmt.Sprintf("pod-%d", j), outcome: policyresult.OutcomeFail}.pb())
			}
		}
		forward(t, s, req)
		hs := httptest.NewServer(s.HTTPHandler())
		t.Cleanup(hs.Close)
		rowRE := regexp.MustCompile(`<tr data-cluster="(c\d\d)">`)
		clustersOf := func(body string) []string {
			var out []string
			for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
				out = append(out, m[1])
			}
			return out
		}

		code, _, body := getPage(t, hs.Client(), hs.URL+"/")
		require.Equal(t, 200, code)
		has := func(s string) bool { return strings.Contains(body, s) }
		assert.True(t, has("Clusters 1–20 of 45, most failing first: 25 more clusters"))
		assert.Equal(t, []string{"c06", "c13", "c20", "c27", "c34", "c41", "c05", "c12", "c19", "c26", "c33", "c40",
			"c04", "c11", "c18", "c25", "c32", "c39", "c03", "c10"}, clustersOf(body))
		// The comparison's columns are the clusters shown.
		assert.True(t, has(`data-cluster="c06">1 / 1</td>`) && !has(`data-cluster="c00">`), "q in c06 only")

		code, _, body = getPage(t, hs.Client(), hs.URL+"/?cpage=2")
		require.Equal(t, 200, code)
		assert.True(t, has(`data-cluster="c00">0 / 1</td>`) && !has(`data-cluster="c06">`), "q in c00 only")
		code, _, body = getPage(t, hs.Client(), hs.URL+"/?cpage=3")
		require.Equal(t, 200, code)
		assert.True(t, has("Clusters 41–45 of 45"))
		assert.Equal(t, []string{"c14", "c21", "c28", "c35", "c42"}, clustersOf(body))
		assert.True(t, has(`id="prev-clusters" href="/?cpage=2"`))
		code, _, body = getPage(t, hs.Client(), hs.URL+"/?cpage=4")
		assert.Equal(t, 400, code)
		assert.True(t, has("parameter cpage &#34;4&#34;: want 1 to 3"))

		code, _, body = getPage(t, hs.Client(), hs.URL+"/policies?cpage=2")
		require.Equal(t, 200, code)
		assert.Equal(t, 2*20, strings.Count(body, `<td class="n failing"`)+strings.Count(body, `<td class="n holding"`)+
			strings.Count(body, `<td class="n absent"`), "two policies × 20 cluster columns")

		code, _, body = getPage(t, hs.Client(), hs.URL+"/trend?days=3")
		require.Equal(t, 200, code)
		assert.Equal(t, 20, strings.Count(body, "<polyline"))
		code, _, body = getPage(t, hs.Client(), hs.URL+"/trend?days=3&cpage=3")
		require.Equal(t, 200, code)
		assert.Equal(t, 5, strings.Count(body, "<polyline"))
		assert.True(t, has(`href="/trend?cpage=2&amp;days=3"`))

		code, _, body = getPage(t, hs.Client(), hs.URL+"/v1/fleet?limit=10")
		require.Equal(t, 200, code)
		assert.Equal(t, 10, strings.Count(body, `"cluster": "c`)/2, "10 clusters and 10 policy rows")
		assert.True(t, has(`"truncated": true`))
		assert.Less(t, strings.Index(body, `"c00"`), strings.Index(body, `"c01"`), "by name")
	})
}

// TestFailingListBytes: a list of long messages stops at its byte bound, MaxListBytes for the JSON API (then
// truncated) and 1 MiB for a page of the web UI (then a next page, which goes on where it stopped).
func TestFailingListBytes(t *testing.T) {
	// Messages longer than --max-message-bytes allows by default: a server that raised it, or rows stored before
	// the limit, still answers bounded lists.
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/results.db", Ingest: IngestLimits{MaxMessageBytes: 1 << 20}})
	long := strings.Repeat("m", 600_000)
	req := batch()
	for i := range 10 {
		req.Results = append(req.Results, spec{cluster: "east", policy: "p", namespace: "ns", name: fmt.Sprintf("pod-%d", i),
			outcome: policyresult.OutcomeFail, message: long}.pb())
	}
	forward(t, s, req)
	hs := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(hs.Close)

	code, _, body := getPage(t, hs.Client(), hs.URL+"/v1/fleet/failing")
	require.Equal(t, 200, code)
	assert.Equal(t, 7, strings.Count(body, `"key"`), "the row that passes 4 MiB is the last")
	assert.True(t, strings.Contains(body, `"truncated": true`))

	keyRE := regexp.MustCompile(`data-key="([0-9a-f]+)"`)
	nextRE := regexp.MustCompile(`id="next" href="([^"]+)"`)
	seen := map[string]bool{}
	next := "/results"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 10)
		code, _, body := getPage(t, hs.Client(), hs.URL+next)
		require.Equal(t, 200, code)
		keys := keyRE.FindAllStringSubmatch(body, -1)
		assert.LessOrEqual(t, len(keys), 2, "a page stops at the result that passes 1 MiB")
		for _, m := range keys {
			seen[m[1]] = true
		}
		next = ""
		if m := nextRE.FindStringSubmatch(body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	assert.Len(t, seen, 10, "the pages go on where each stopped")
}
