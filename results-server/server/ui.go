// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// The web UI: server-rendered pages over the same store as the JSON fleet view, with no script at all (the
// charts are SVG computed on the server) and nothing loaded from elsewhere, so its Content-Security-Policy
// allows only this server's stylesheet. html/template escapes every value for the context it lands in: a
// policy message is text in a table cell, never markup.

//go:embed ui
var uiFiles embed.FS

// uiPages holds one template set per page: the layout and its shared blocks, and the page's "content".
var uiPages = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"count": func(n any) string {
			switch n := n.(type) {
			case int:
				return formatCount(int64(n))
			case int64:
				return formatCount(n)
			}
			return ""
		},
		"score": formatScore,
		"time": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"day":        func(t time.Time) string { return t.Format("2006-01-02") },
		"link":       link,
		"severities": func() []string { return store.SeverityOrder[:len(store.SeverityOrder)-1] },
		"sevClass":   func(s string) string { return cmp.Or(s, "none") },
		"sevClassAt": func(i int) string { return cmp.Or(store.SeverityOrder[i], "none") },
		"add":        func(a, b int) int { return a + b },
		"sub":        func(a, b int) int { return a - b },
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"overview", "policies", "namespaces", "results", "result", "trend", "login", "error"} {
		pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(uiFiles,
			"ui/layout.html", "ui/pager.html", "ui/"+name+".html"))
	}
	return pages
}()

// link is path with the query q, changed by the name/value pairs kv: an empty value removes the parameter.
func link(path string, q url.Values, kv ...string) string {
	v := withParams(q, kv...)
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// withParams is a copy of q changed by the name/value pairs kv, as link changes it.
func withParams(q url.Values, kv ...string) url.Values {
	v := url.Values{}
	for k, vs := range q {
		v[k] = slices.Clone(vs)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			v.Del(kv[i])
		} else {
			v.Set(kv[i], kv[i+1])
		}
	}
	return v
}

// pageView is what the layout renders around a page's content.
type pageView struct {
	Title    string
	Nav      []navItem
	SignedIn bool
	// Path is the page's path, the filter form's action.
	Path string
	// Filter fills the filter form; Query is the filter as query parameters, for links that keep it.
	Filter store.Filter
	Query  url.Values
	// Keep are the page's own parameters the filter form sends again.
	Keep map[string]string
	Data any
}

type navItem struct {
	Name, Href string
	Current    bool
}

// tokenCookie keeps a token given on the login page: HttpOnly (scripts cannot read it), SameSite=Lax (sent
// when a shared link is opened, not with another site's POST), Secure when served over TLS, and a session
// cookie (gone when the browser closes).
const tokenCookie = "results_server_token"

// uiPage reports whether path is a page of the UI (as opposed to the JSON API and /metrics, which take only
// an Authorization header).
func uiPage(path string) bool { return !strings.HasPrefix(path, "/v1/") && path != "/metrics" }

// uiOpen reports whether path is served without a token: the login form and the stylesheet hold no data.
func uiOpen(path string) bool {
	return path == "/login" || path == "/logout" || path == "/static/style.css"
}

func (s *Server) registerUI(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.query(s.overviewPage))
	mux.HandleFunc("GET /policies", s.query(s.policiesPage))
	mux.HandleFunc("GET /namespaces", s.query(s.namespacesPage))
	mux.HandleFunc("GET /results", s.query(s.resultsPage))
	mux.HandleFunc("GET /results/{key}", s.query(s.resultPage))
	mux.HandleFunc("GET /trend", s.query(s.trendPage))
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusOK, "login", pageView{Title: "Sign in", Data: loginView{Next: safeNext(r.URL.Query().Get("next"))}})
	})
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		setTokenCookie(w, r, "")
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
	static, _ := fs.Sub(uiFiles, "ui")
	mux.HandleFunc("GET /static/style.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		http.ServeFileFS(w, r, static, "style.css")
	})
}

// uiHeaders are set on every UI response. The policy allows this server's stylesheet and nothing else: no
// script of any origin, no inline style, no frame, no form posting elsewhere.
func uiHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

// cookieAuthorized accepts the token kept by the login page.
func (s *Server) cookieAuthorized(r *http.Request) bool {
	c, err := r.Cookie(tokenCookie)
	if err != nil {
		return false
	}
	token, err := base64.RawURLEncoding.DecodeString(c.Value)
	return err == nil && len(token) > 0 && s.validToken(string(token))
}

type loginView struct {
	Next   string
	Failed bool
}

// maxLoginBody bounds the login form: a token and a path.
const maxLoginBody = 8 << 10

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	// A login form posted by another site would sign this browser in with that site's token.
	if origin := r.Header.Get("Origin"); origin != "" {
		if u, err := url.Parse(origin); err != nil || u.Host != r.Host {
			s.renderError(w, r, http.StatusForbidden, "sign-in from another site is refused")
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil {
		s.renderError(w, r, http.StatusBadRequest, "the sign-in form could not be read")
		return
	}
	next := safeNext(r.PostFormValue("next"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	if len(s.tokens) == 0 {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	source := sourceOf(r)
	if wait := s.authFailures.wait(source); wait > 0 {
		s.tooManyFailures(w, r, wait)
		return
	}
	if token == "" || !s.validToken(token) {
		s.authFailures.failed(source)
		s.metrics.httpUnauthenticated.Add(1)
		s.logger.Debug("rejected a sign-in with an invalid token", zap.String("remote", r.RemoteAddr))
		w.Header().Set("WWW-Authenticate", `Bearer realm="results-server"`)
		s.render(w, r, http.StatusUnauthorized, "login", pageView{Title: "Sign in", Data: loginView{Next: next, Failed: true}})
		return
	}
	setTokenCookie(w, r, token)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// setTokenCookie keeps token in the browser, or removes the cookie when token is "".
func setTokenCookie(w http.ResponseWriter, r *http.Request, token string) {
	// Secure only over TLS: a browser drops a Secure cookie set over plain HTTP, and a server without TLS sends
	// its tokens in the clear anyway (behind a proxy that terminates TLS, or on loopback).
	//nolint:gosec // G124: HttpOnly and SameSite always, Secure whenever the connection is TLS
	c := &http.Cookie{Name: tokenCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(token)), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil}
	if token == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// safeNext keeps a redirect after sign-in on this server: a path, never another host ("//evil", "/\evil").
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

var navPages = []struct{ name, path string }{
	{"Fleet", "/"}, {"Policies", "/policies"}, {"Namespaces", "/namespaces"}, {"Failing results", "/results"},
	{"Trend", "/trend"},
}

// render writes a page; it is buffered, so a template error is a clean 500, not half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, v pageView) {
	for _, p := range navPages {
		href := p.path
		if p.path != "/trend" {
			href = link(p.path, v.Query)
		}
		v.Nav = append(v.Nav, navItem{Name: p.name, Href: href, Current: r.URL.Path == p.path})
	}
	v.SignedIn = len(s.tokens) > 0 && s.cookieAuthorized(r)
	var buf bytes.Buffer
	if err := uiPages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		s.logger.Error("rendering a page failed", zap.String("page", name), zap.Error(err))
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) renderError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.render(w, r, code, "error", pageView{Title: http.StatusText(code), Data: msg})
}

// uiQuery splits a page's query into the filter and the page's own parameters (own), and refuses parameters
// neither knows, as the JSON API does.
func uiQuery(q url.Values, own ...string) (store.Filter, map[string]string, error) {
	rest := url.Values{}
	params := map[string]string{}
	for k, v := range q {
		if !slices.Contains(own, k) {
			rest[k] = v
			continue
		}
		if len(v) != 1 {
			return store.Filter{}, nil, errors.New("parameter " + k + ": given more than once")
		}
		if v[0] != "" {
			params[k] = v[0]
		}
	}
	if rest.Has("limit") {
		return store.Filter{}, nil, errors.New("unknown parameter limit")
	}
	f, err := parseFilter(rest)
	f.Limit = 0
	return f, params, err
}
