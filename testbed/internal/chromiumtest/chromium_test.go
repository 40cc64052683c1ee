// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package chromiumtest

import (
	"fmt"
	"html"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const home = `<!doctype html>
<title>Home</title>
<h1>  Results  </h1>
<ul><li class="rule">no-latest-tag</li><li class="rule">require-labels</li><li class="rule">run-as-non-root</li></ul>
<a id="next" href="/search?q=from+link" data-kind="link">next</a>
<form id="search" action="/search"><input name="q"><select name="kind"><option>pod<option>node</select>
<input type="checkbox" name="fixable" value="true"></form>`

func writePage(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><body>%s</body>", body)
}

func server(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, home)
	})
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		writePage(w, http.StatusOK, fmt.Sprintf(`<p id="q">%s</p><p id="kind">%s</p><p id="fixable">%s</p>`,
			html.EscapeString(r.FormValue("q")), html.EscapeString(r.FormValue("kind")), html.EscapeString(r.FormValue("fixable"))))
	})
	mux.HandleFunc("GET /private", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err != nil || c.Value != "s3cret" {
			writePage(w, http.StatusUnauthorized, "<p>no session</p>")
			return
		}
		writePage(w, http.StatusOK, "<p>welcome</p>")
	})
	mux.HandleFunc("GET /header", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Scope") != "team-a" {
			writePage(w, http.StatusBadRequest, "<p>no scope</p>")
			return
		}
		writePage(w, http.StatusOK, "<p>team-a</p>")
	})
	mux.HandleFunc("GET /alert", func(w http.ResponseWriter, _ *http.Request) {
		writePage(w, http.StatusOK, `<p>before</p><script>alert('x')</script><p>after</p>`)
	})
	mux.HandleFunc("GET /csp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'")
		writePage(w, http.StatusOK, `<p>csp</p><script>alert('csp')</script>`)
	})
	mux.HandleFunc("GET /errors", func(w http.ResponseWriter, _ *http.Request) {
		writePage(w, http.StatusOK, `<script>console.error("bad", 42); console.log("fine")</script><script>throw new Error("boom")</script>`)
	})
	mux.HandleFunc("GET /tall", func(w http.ResponseWriter, _ *http.Request) {
		writePage(w, http.StatusOK, `<div style="height:2000px;background:linear-gradient(red,blue)">tall</div>`)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestPage(t *testing.T) {
	begin := time.Now()
	b := Start(t)
	t.Logf("chromium started in %s", time.Since(begin).Round(time.Millisecond))
	s := server(t)

	t.Run("navigate and status", func(t *testing.T) {
		p := b.Page(t)
		begin := time.Now()
		if got := p.Navigate(s.URL + "/"); got != http.StatusOK || p.Status() != http.StatusOK {
			t.Errorf("status of / = %d, Status() = %d, want 200", got, p.Status())
		}
		t.Logf("page loaded in %s", time.Since(begin).Round(time.Millisecond))
		if got := p.Navigate(s.URL + "/missing"); got != http.StatusNotFound || p.Status() != http.StatusNotFound {
			t.Errorf("status of /missing = %d, Status() = %d, want 404", got, p.Status())
		}
		if got, want := p.URL(), s.URL+"/missing"; got != want {
			t.Errorf("URL() = %q, want %q", got, want)
		}
	})

	t.Run("text attr count", func(t *testing.T) {
		p := b.Page(t)
		p.Navigate(s.URL + "/")
		if got := p.Text("h1"); got != "Results" {
			t.Errorf("Text(h1) = %q", got)
		}
		if got, want := p.Texts("li.rule"), []string{"no-latest-tag", "require-labels", "run-as-non-root"}; !slices.Equal(got, want) {
			t.Errorf("Texts(li.rule) = %q, want %q", got, want)
		}
		if got := p.Texts("table"); len(got) != 0 {
			t.Errorf("Texts(table) = %q, want none", got)
		}
		if got := p.Attr("#next", "data-kind"); got != "link" {
			t.Errorf("Attr(#next, data-kind) = %q", got)
		}
		if got := p.Attr("#next", "title"); got != "" {
			t.Errorf("Attr(#next, title) = %q, want empty", got)
		}
		if got := p.Count("li.rule"); got != 3 {
			t.Errorf("Count(li.rule) = %d", got)
		}
		if got := p.Count(`a[href*="'"]`); got != 0 {
			t.Errorf("Count of a selector with a quote = %d", got)
		}
		// Chromium's request for /favicon.ico fails with 404 after the load: no error of the page's.
		time.Sleep(100 * time.Millisecond)
		if got := p.ConsoleErrors(); len(got) != 0 {
			t.Errorf("ConsoleErrors() = %q, want none", got)
		}
	})

	t.Run("click", func(t *testing.T) {
		p := b.Page(t)
		p.Navigate(s.URL + "/")
		p.Click("#next")
		if got, want := p.URL(), s.URL+"/search?q=from+link"; got != want || p.Status() != http.StatusOK {
			t.Errorf("after the click: URL() = %q, Status() = %d, want %q, 200", got, p.Status(), want)
		}
		if got := p.Text("#q"); got != "from link" {
			t.Errorf("Text(#q) = %q", got)
		}
	})

	t.Run("form", func(t *testing.T) {
		p := b.Page(t)
		p.Navigate(s.URL + "/")
		p.SetValue(`input[name="q"]`, `a "quoted" <value>`)
		p.SetValue(`select[name="kind"]`, "node")
		p.SetChecked(`input[name="fixable"]`, true)
		p.SetChecked(`input[name="fixable"]`, true) // already ticked: stays ticked
		p.Submit("#search")
		if got := p.URL(); !strings.HasPrefix(got, s.URL+"/search?q=") {
			t.Errorf("after the submit: URL() = %q", got)
		}
		if got := p.Text("#q"); got != `a "quoted" <value>` {
			t.Errorf("Text(#q) = %q", got)
		}
		if got := p.Text("#fixable"); got != "true" {
			t.Errorf("Text(#fixable) = %q: the box was not ticked", got)
		}
		if got := p.Text("#kind"); got != "node" {
			t.Errorf("Text(#kind) = %q", got)
		}
	})

	t.Run("cookie", func(t *testing.T) {
		p := b.Page(t)
		if got := p.Navigate(s.URL + "/private"); got != http.StatusUnauthorized {
			t.Errorf("without the cookie: status %d, want 401", got)
		}
		p.SetCookie("session", "s3cret", s.URL)
		if got := p.Navigate(s.URL + "/private"); got != http.StatusOK || p.Text("p") != "welcome" {
			t.Errorf("with the cookie: status %d, text %q", got, p.Text("p"))
		}
		// Each page has its own profile.
		if got := b.Page(t).Navigate(s.URL + "/private"); got != http.StatusUnauthorized {
			t.Errorf("another page sent the cookie: status %d, want 401", got)
		}
	})

	t.Run("extra headers", func(t *testing.T) {
		p := b.Page(t)
		p.SetExtraHeaders(map[string]string{"X-Scope": "team-a"})
		if got := p.Navigate(s.URL + "/header"); got != http.StatusOK || p.Text("p") != "team-a" {
			t.Errorf("with the header: status %d, text %q", got, p.Text("p"))
		}
	})

	t.Run("dialog", func(t *testing.T) {
		p := b.Page(t)
		p.Navigate(s.URL + "/alert")
		if got := p.Dialogs(); !slices.Equal(got, []string{"x"}) {
			t.Errorf("Dialogs() = %q, want [x]", got)
		}
		// The page went on after the dialog was dismissed.
		if got := p.Texts("p"); !slices.Equal(got, []string{"before", "after"}) {
			t.Errorf("Texts(p) = %q", got)
		}
	})

	t.Run("csp", func(t *testing.T) {
		p := b.Page(t)
		p.Navigate(s.URL + "/csp")
		if got := p.Dialogs(); len(got) != 0 {
			t.Errorf("Dialogs() = %q: the CSP did not block the inline script", got)
		}
		errs := p.ConsoleErrors()
		if len(errs) != 1 || !strings.Contains(errs[0], "Content Security Policy") {
			t.Errorf("ConsoleErrors() = %q, want the CSP violation", errs)
		}
	})

	t.Run("console errors", func(t *testing.T) {
		p := b.Page(t)
		p.Navigate(s.URL + "/errors")
		if got, want := p.ConsoleErrors(), []string{"bad 42", "Uncaught Error: boom"}; !slices.Equal(got, want) {
			t.Errorf("ConsoleErrors() = %q, want %q", got, want)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		p := b.Page(t)
		size := func(path string) image.Point {
			t.Helper()
			p.Screenshot(path)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("the screenshot is no PNG: %v", err)
			}
			return img.Bounds().Size()
		}
		dir := filepath.Join(t.TempDir(), "shots")
		p.Navigate(s.URL + "/")
		if got := size(filepath.Join(dir, "home.png")); got != image.Pt(Width, Height) {
			t.Errorf("screenshot of a short page is %v, want the viewport, %dx%d", got, Width, Height)
		}
		p.Navigate(s.URL + "/tall")
		if got := size(filepath.Join(dir, "tall.png")); got.X != Width || got.Y < 2000 {
			t.Errorf("screenshot of a tall page is %v, want %d wide and the whole 2000px page high", got, Width)
		}
	})
}
