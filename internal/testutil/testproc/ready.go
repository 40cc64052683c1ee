// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package testproc // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"

import (
	"fmt"
	"io"
	"net/http"
	"time"
)

// A server says it is ready only when asked: a port open, a health endpoint, a query answered.
const pollInterval = 100 * time.Millisecond

// WaitReady calls ready until it succeeds. It gives up with an error when exited reports the process gone (a
// server that failed to start is not waited for until the timeout) or when timeout has passed.
func WaitReady(name string, timeout time.Duration, exited func() bool, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if exited() {
			return fmt.Errorf("%s exited before it was ready (last check: %w)", name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %w", name, timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// WaitReady waits until ready succeeds while the process runs; the error carries the end of its log.
func (p *Proc) WaitReady(timeout time.Duration, ready func() error) error {
	if err := WaitReady(p.name, timeout, p.HasExited, ready); err != nil {
		return p.ReadyError(err)
	}
	return nil
}

// GetOK is a readiness check: a GET of url answered 200 OK. A bearer token is sent when not empty.
func GetOK(c *http.Client, url, bearer string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
