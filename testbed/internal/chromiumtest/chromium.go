// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package chromiumtest drives a real headless Chromium (Debian's package, installed by hack/test-servers.sh) over
// the DevTools protocol, so that the tests of a web UI see what a browser makes of it: the status a person gets,
// the rendered text, forms that submit, cookies and headers sent, scripts that did or did not run (a CSP that
// blocks them, an XSS payload that must never open a dialog) and screenshots to look at.
//
// Every call fails the test rather than returning an error, and every one is bounded by a timeout, so that a
// hung browser fails the test instead of hanging it.
package chromiumtest // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/chromiumtest"

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

const (
	// Width and Height are the size of the window and of a page's viewport, fixed so that screenshots are
	// reproducible.
	Width  = 1280
	Height = 900

	// startTimeout bounds starting the browser and opening a tab; a cold start on a busy 2-core machine takes
	// a few seconds.
	startTimeout = time.Minute
	// actionTimeout bounds every other operation, a navigation included.
	actionTimeout = 30 * time.Second
)

// BinaryPath is $CHROMIUM_BIN, else where Debian's chromium package installs its launcher.
func BinaryPath() string {
	if bin := os.Getenv("CHROMIUM_BIN"); bin != "" {
		return bin
	}
	return "/usr/bin/chromium"
}

// Browser is a running Chromium.
type Browser struct {
	ctx context.Context
}

// Start runs a headless Chromium for t, with a fresh profile, stopped when t ends (its output shown if t failed).
// Under -short it skips t; without Chromium it fails t.
func Start(t testing.TB) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium; skipped under -short")
	}
	bin := BinaryPath()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Chromium not found at %s: run `make test-servers` (or hack/test-servers.sh chromium)", bin)
	}
	dir := t.TempDir()
	out, err := os.CreateTemp(dir, "chromium-*.log")
	if err != nil {
		t.Fatal(err)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.CombinedOutput(out),
		chromedp.Headless,
		chromedp.NoSandbox, // root in containers, where the sandbox cannot start
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(Width, Height),
		chromedp.Flag("disable-gpu", true),
		// The network is closed here: whatever Chromium would fetch for itself only waits for a timeout.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// /dev/shm is small in containers, and Chromium crashes when it fills.
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		// A graceful close ends Chromium's helper processes before t.TempDir removes the profile they write to.
		closeCtx, cancelClose := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Cancel(closeCtx)
		cancelClose()
		cancel()
		cancelAlloc()
		_ = out.Close()
		if t.Failed() {
			t.Logf("chromium output:\n%s", testproc.LogTail(out.Name(), 1<<14))
		}
	})
	// The first action starts the browser, which lives as long as that action's context: it cannot be given a
	// timeout of its own.
	if err := within(startTimeout, func() error { return chromedp.Do(ctx) }); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return &Browser{ctx: ctx}
}

// within runs f, giving up after d; f is left to end with the context its caller cancels.
func within(d time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("no answer within %s", d)
	}
}

// Page is one tab.
type Page struct {
	t   testing.TB
	ctx context.Context

	mu      sync.Mutex
	status  int
	dialogs []string
	errors  []string
}

// Page opens a tab for t, closed when t ends. Each tab has a browser context (profile) of its own: pages share no
// cookies or storage.
func (b *Browser) Page(t testing.TB) *Page {
	t.Helper()
	p := &Page{t: t}
	// The listener sees every event of the tab, in order, before the action that waits for the same load returns:
	// a dialog or an error of a page is recorded by the time Navigate returns.
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(p.listen))
	p.ctx = ctx
	t.Cleanup(cancel)
	// Headless Chromium keeps room for a browser's toolbars in its window: without the override the viewport
	// would be 87 pixels shorter than the window.
	viewport := chromedp.EmulateViewport(Width, Height)
	if err := within(startTimeout, func() error { return chromedp.Do(ctx, viewport) }); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return p
}

// listen runs in the loop that reads the tab's messages: it must return fast and send no command.
func (p *Page) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		p.mu.Lock()
		p.dialogs = append(p.dialogs, ev.Message)
		p.mu.Unlock()
		// A dialog blocks the page, and so the navigation that waits for it.
		go p.dismissDialog()
		return
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		msg = consoleText(ev.Args)
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = d.Text
		if d.Exception != nil {
			first, _, _ := strings.Cut(d.Exception.Description, "\n")
			msg += " " + first
		}
	case *log.EventEntryAdded: // the browser's own messages: CSP violations, failed loads
		if ev.Entry.Level != log.EntryLevelError || isFavicon(ev.Entry) {
			return
		}
		msg = ev.Entry.Text
	default:
		return
	}
	p.mu.Lock()
	p.errors = append(p.errors, msg)
	p.mu.Unlock()
}

// isFavicon tells the failure of the browser's own request for /favicon.ico, which a page did not ask for and
// which comes after the load event: whether ConsoleErrors held it would be a race.
func isFavicon(e *log.Entry) bool {
	u, err := url.Parse(e.URL)
	return e.Source == log.EntrySourceNetwork && err == nil && u.Path == "/favicon.ico"
}

func (p *Page) dismissDialog() {
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	// An error means the tab is gone, and the dialog with it.
	_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
}

// consoleText joins the arguments of a console call as the console shows primitive values.
func consoleText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		var s string
		switch {
		case a.Type == runtime.RemoteObjectTypeString && json.Unmarshal(a.Value, &s) == nil:
		case len(a.Value) > 0:
			s = string(a.Value)
		case a.Description != "":
			s = a.Description
		default:
			s = string(a.Type)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// do runs f with a timeout, failing the test with what when it fails or times out.
func do[T any](p *Page, what string, f func(ctx context.Context) (T, error)) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	v, err := f(ctx)
	if err != nil {
		p.t.Fatalf("chromium: %s: %v", what, err)
	}
	return v
}

func run[T any](p *Page, what string, a chromedp.Action[T]) T {
	p.t.Helper()
	return do(p, what, func(ctx context.Context) (T, error) { return chromedp.Run(ctx, a) })
}

func call[P, R any](p *Page, what string, cmd cdp.Command[P, R], params P) R {
	p.t.Helper()
	return do(p, what, func(ctx context.Context) (R, error) { return chromedp.Call(ctx, cmd, params) })
}

// js is the JavaScript expression format with its %s replaced by args as JavaScript strings, whatever they hold.
func js(format string, args ...string) string {
	quoted := make([]any, len(args))
	for i, a := range args {
		b, _ := json.Marshal(a) // a string always marshals
		quoted[i] = string(b)
	}
	return fmt.Sprintf(format, quoted...)
}

// eval evaluates js(format, args...).
func eval[T any](p *Page, format string, args ...string) T {
	p.t.Helper()
	expr := js(format, args...)
	return run(p, "evaluating "+expr, chromedp.Evaluate[T](expr))
}

// navigation runs trigger and waits for the page it causes to load, recording its status.
func (p *Page) navigation(what string, trigger chromedp.Action[chromedp.Void]) int {
	p.t.Helper()
	resp := do(p, what, func(ctx context.Context) (*network.Response, error) {
		return chromedp.RunResponse(ctx, trigger)
	})
	status := 0
	if resp != nil { // nil for a navigation within the document
		status = int(resp.Status)
	}
	p.mu.Lock()
	p.status = status
	p.mu.Unlock()
	return status
}

// Navigate loads url, waits for its load event, and returns the HTTP status of the document.
func (p *Page) Navigate(url string) int {
	p.t.Helper()
	return p.navigation("navigating to "+url, chromedp.Navigate(url))
}

// Status is the HTTP status of the document the last navigation loaded.
func (p *Page) Status() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// URL is the address of the document.
func (p *Page) URL() string {
	p.t.Helper()
	return run(p, "reading the location", chromedp.Location())
}

// Text is the textContent of the first element matching selector, trimmed; no match fails the test.
func (p *Page) Text(selector string) string {
	p.t.Helper()
	s := eval[*string](p, `document.querySelector(%s)?.textContent`, selector)
	if s == nil {
		p.t.Fatalf("chromium: no element matches %q on %s", selector, p.URL())
	}
	return strings.TrimSpace(*s)
}

// Texts are the textContents of all the elements matching selector, trimmed.
func (p *Page) Texts(selector string) []string {
	p.t.Helper()
	texts := eval[[]string](p, `Array.from(document.querySelectorAll(%s), e => e.textContent)`, selector)
	for i, s := range texts {
		texts[i] = strings.TrimSpace(s)
	}
	return texts
}

// Attr is the attribute name of the first element matching selector, "" when it has none; no match fails the
// test.
func (p *Page) Attr(selector, name string) string {
	p.t.Helper()
	v := eval[*string](p, `(e => e && (e.getAttribute(%s) ?? ""))(document.querySelector(%s))`, name, selector)
	if v == nil {
		p.t.Fatalf("chromium: no element matches %q on %s", selector, p.URL())
	}
	return *v
}

// Count is the number of elements matching selector.
func (p *Page) Count(selector string) int {
	p.t.Helper()
	return eval[int](p, `document.querySelectorAll(%s).length`, selector)
}

// mustMatch fails the test at once when nothing matches selector, rather than after the timeout of an action
// that waits for the element.
func (p *Page) mustMatch(selector string) {
	p.t.Helper()
	if p.Count(selector) == 0 {
		p.t.Fatalf("chromium: no element matches %q on %s", selector, p.URL())
	}
}

// Click clicks the first element matching selector, as a mouse would, and waits for the page it navigates to;
// a click that navigates nowhere fails the test after the timeout.
func (p *Page) Click(selector string) {
	p.t.Helper()
	p.mustMatch(selector)
	p.navigation("clicking "+selector, chromedp.Click(chromedp.CSS(selector)))
}

// SetValue sets the value of the first input, textarea or select matching selector, firing input and change
// events as typing would.
func (p *Page) SetValue(selector, value string) {
	p.t.Helper()
	p.mustMatch(selector)
	eval[chromedp.Void](p, `(e => {
		e.value = %s;
		e.dispatchEvent(new Event("input", {bubbles: true}));
		e.dispatchEvent(new Event("change", {bubbles: true}));
	})(document.querySelector(%s))`, value, selector)
}

// SetChecked ticks or clears the checkbox or radio button matching selector, as a click on it would, without
// waiting for a page: a box changes only its form.
func (p *Page) SetChecked(selector string, checked bool) {
	p.t.Helper()
	p.mustMatch(selector)
	eval[chromedp.Void](p, `(e => {
		if (e.checked !== (%s === "true")) { e.click(); }
	})(document.querySelector(%s))`, strconv.FormatBool(checked), selector)
}

// Submit submits the form matching formSelector (or the form of the element matching it) and waits for the page
// it loads. requestSubmit, unlike submit, validates the form and fires its submit event, as a submit button does.
func (p *Page) Submit(formSelector string) {
	p.t.Helper()
	p.mustMatch(formSelector)
	submit := chromedp.Evaluate[chromedp.Void](js(
		`(e => (e.tagName === "FORM" ? e : e.form).requestSubmit())(document.querySelector(%s))`, formSelector))
	p.navigation("submitting "+formSelector, submit)
}

// Screenshot writes a PNG of the whole page, beyond the window, to path, creating its directory.
func (p *Page) Screenshot(path string) {
	p.t.Helper()
	png := run(p, "taking a screenshot", chromedp.FullScreenshot(100)) // 100 is PNG
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// SetCookie stores a cookie for url, sent with the page's later requests there.
func (p *Page) SetCookie(name, value, url string) {
	p.t.Helper()
	call(p, "setting cookie "+name, network.SetCookie, network.SetCookieParams{Name: name, Value: value, URL: url})
}

// SetExtraHeaders adds headers to every later request of the page, replacing those of an earlier call.
func (p *Page) SetExtraHeaders(headers map[string]string) {
	p.t.Helper()
	h := make(network.Headers, len(headers))
	for k, v := range headers {
		h[k] = v
	}
	call(p, "setting extra headers", network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
}

// Dialogs are the messages of the JavaScript dialogs (alert, confirm, prompt) the page opened, each dismissed at
// once: a test asserts none opened to show an injected script never ran.
func (p *Page) Dialogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.dialogs)
}

// ConsoleErrors are the errors the page's console showed: console.error calls, uncaught exceptions, and the
// browser's own errors, such as a script a Content-Security-Policy refused or a resource that failed to load.
func (p *Page) ConsoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errors)
}
