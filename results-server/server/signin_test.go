// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailureLimiter: a source has its failures at once, then one back every minute/perMinute; sources count
// apart, IPv6 ones by /64; the table of sources stays bounded.
func TestFailureLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := newFailureLimiter(3, func() time.Time { return now })
	a := sourcePrefix("192.0.2.1:1234")
	for range 3 {
		assert.Zero(t, l.wait(a))
		l.failed(a)
	}
	assert.Equal(t, 20*time.Second, l.wait(a), "one failure back every 20 s")
	assert.Zero(t, l.wait(sourcePrefix("192.0.2.2:1")), "another address")
	now = now.Add(20 * time.Second)
	assert.Zero(t, l.wait(a))
	l.failed(a)
	assert.Equal(t, 20*time.Second, l.wait(a))

	assert.Equal(t, sourcePrefix("[2001:db8:1:2::1]:443"), sourcePrefix("[2001:db8:1:2:ffff::9]:80"), "one /64")
	assert.NotEqual(t, sourcePrefix("[2001:db8:1:2::1]:443"), sourcePrefix("[2001:db8:1:3::1]:443"))
	assert.Equal(t, sourcePrefix("192.0.2.1:1"), sourcePrefix("[::ffff:192.0.2.1]:1"), "IPv4 in IPv6")

	for i := range maxFailureSources + 10 {
		l.failed(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32))
	}
	assert.LessOrEqual(t, len(l.sources), maxFailureSources)
}

// TestSignInRateLimit: wrong tokens from one address, on the login form or in the Authorization header, are
// checked until the address has used its failures; then its requests are 429 with Retry-After, even with the
// right token, until a failure is back; another address signs in meanwhile. A browser without any credentials
// is sent to sign in without using a failure.
func TestSignInRateLimit(t *testing.T) {
	s := sqliteServer(t, readerToken)
	now := time.Unix(0, 0)
	s.authFailures = newFailureLimiter(DefaultAuthFailures, func() time.Time { return now })
	h := s.HTTPHandler()
	do := func(remote, method, path, authorization, token string) *httptest.ResponseRecorder {
		var body *strings.Reader
		if token != "" {
			body = strings.NewReader(url.Values{"token": {token}}.Encode())
		} else {
			body = strings.NewReader("")
		}
		req := httptest.NewRequest(method, path, body)
		req.RemoteAddr = remote
		if token != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	const guesser, person = "192.0.2.1:5000", "192.0.2.2:5000"
	for range 3 {
		assert.Equal(t, http.StatusSeeOther, do(guesser, http.MethodGet, "/", "", "").Code, "no credentials: to the login page")
	}
	for i := range DefaultAuthFailures {
		if i%2 == 0 {
			assert.Equal(t, http.StatusUnauthorized, do(guesser, http.MethodPost, "/login", "", "guess").Code)
		} else {
			assert.Equal(t, http.StatusUnauthorized, do(guesser, http.MethodGet, "/v1/fleet", "Bearer guess", "").Code)
		}
	}
	for _, w := range []*httptest.ResponseRecorder{
		do(guesser, http.MethodPost, "/login", "", readerToken),
		do(guesser, http.MethodGet, "/v1/fleet", "Bearer "+readerToken, ""),
	} {
		assert.Equal(t, http.StatusTooManyRequests, w.Code)
		assert.Equal(t, "6", w.Header().Get("Retry-After"), "one failure back every 6 s")
	}
	assert.Equal(t, uint64(2), s.metrics.httpAuthRate.Load())
	assert.Equal(t, http.StatusSeeOther, do(person, http.MethodPost, "/login", "", readerToken).Code, "another address signs in")
	now = now.Add(6 * time.Second)
	assert.Equal(t, http.StatusOK, do(guesser, http.MethodGet, "/v1/fleet", "Bearer "+readerToken, "").Code)
}

// TestOpenRefusesShortTokens: tokens shorter than MinTokenLength are refused when they are loaded, naming the
// token by its place, never by its value.
func TestOpenRefusesShortTokens(t *testing.T) {
	_, err := Open(context.Background(), Config{DB: "sqlite://" + t.TempDir() + "/x.db",
		Tokens: fullAccess(readerToken, "short-secret")})
	require.Error(t, err)
	assert.Equal(t, "resultsserver: token 2: token of 12 bytes: want at least 32 (make one with `openssl rand -hex 32`)", err.Error())
	assert.NotContains(t, err.Error(), "short-secret")
}
