// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package miniotest runs a real MinIO server for integration tests: the binary hack/test-servers.sh builds, on
// free loopback ports, with random root credentials and a static KMS key, so that tests exercise S3's real
// signing, errors, multipart uploads, policies and server-side encryption.
package miniotest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// Versions hack/test-servers.sh builds.
const (
	MinIOVersion = "v0.0.0-20260212201848-7aac2a2c5b7c"
	MCVersion    = "v0.0.0-20250313080218-cf909e1063a9"
)

// Region is the region MinIO answers for and signatures must name.
const Region = "us-east-1"

// KMSKeyID names the static key MinIO encrypts with, for SSE-S3 and as the SSE-KMS key id.
const KMSKeyID = "test-key"

// Server is a running MinIO server.
type Server struct {
	// AccessKey and SecretKey are the root credentials, random for each server.
	AccessKey, SecretKey string

	t           testing.TB
	bin, mcBin  string
	dir         string
	addr        string
	consoleAddr string
	kmsKey      string
	proc        *testproc.Proc
	mcConfig    string
}

// Binaries returns the paths of the cached minio and mc binaries, or an error saying how to build them.
func Binaries() (minio, mc string, err error) {
	minio = testproc.CachedBinary("minio", MinIOVersion)
	mc = testproc.CachedBinary("mc", MCVersion)
	for _, p := range []string{minio, mc} {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("%s not found: run `make test-servers` (or hack/test-servers.sh minio) to build MinIO once", p)
		}
	}
	return minio, mc, nil
}

// Start starts a MinIO server for t, stopped when t ends. Under -short it skips t; without the binaries it
// fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a MinIO server; skipped under -short")
	}
	minio, mc, err := Binaries()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := &Server{
		AccessKey:   "root" + randomHex(6),
		SecretKey:   randomHex(20),
		t:           t,
		bin:         minio,
		mcBin:       mc,
		dir:         t.TempDir(),
		addr:        "127.0.0.1:" + strconv.Itoa(ports[0]),
		consoleAddr: "127.0.0.1:" + strconv.Itoa(ports[1]),
		kmsKey:      KMSKeyID + ":" + base64.StdEncoding.EncodeToString(key),
		mcConfig:    t.TempDir(),
	}
	t.Cleanup(s.Stop)
	s.start()
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Endpoint is the server's S3 URL.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

func (s *Server) start() {
	s.t.Helper()
	p, err := testproc.Start("minio", testproc.Options{
		LogFile: filepath.Join(s.dir, "minio.log"),
		Env: []string{
			"MINIO_ROOT_USER=" + s.AccessKey,
			"MINIO_ROOT_PASSWORD=" + s.SecretKey,
			// SSE-S3 and SSE-KMS need a KMS; a static key is MinIO's built-in one.
			"MINIO_KMS_SECRET_KEY=" + s.kmsKey,
			"MINIO_UPDATE=off",
			// Allows a data directory on the root disk, as a temporary directory is.
			"MINIO_CI_CD=on",
		},
	}, s.bin, "server", filepath.Join(s.dir, "data"), "--address", s.addr, "--console-address", s.consoleAddr, "--quiet")
	if err != nil {
		s.t.Fatal(err)
	}
	s.proc = p
	if err := s.waitReady(60 * time.Second); err != nil {
		s.Stop()
		s.t.Fatal(err)
	}
}

// waitReady waits for the liveness endpoint, then for the object layer: a server can be live before it
// serves requests.
func (s *Server) waitReady(timeout time.Duration) error {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	return s.proc.WaitReady(timeout, func() error {
		if err := testproc.GetOK(hc, s.Endpoint()+"/minio/health/live", ""); err != nil {
			return err
		}
		return testproc.GetOK(hc, s.Endpoint()+"/minio/health/ready", "")
	})
}

// Stop stops the server; its data stays for Restart.
func (s *Server) Stop() {
	if s.proc == nil {
		return
	}
	s.proc.Stop(syscall.SIGTERM, 10*time.Second)
	s.proc = nil
}

// Restart starts a stopped server again on the same address, with the same data and credentials.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// MC runs mc against the server (as alias "test", with the root credentials) and returns its output. It fails
// the test when mc fails.
func (s *Server) MC(args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.mcBin, append([]string{"--no-color", "--config-dir", s.mcConfig}, args...)...)
	cmd.Env = append(os.Environ(),
		"MC_CONFIG_DIR="+s.mcConfig,
		"MC_HOST_test=http://"+s.AccessKey+":"+s.SecretKey+"@"+s.addr,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("mc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// CreateUser creates a user with the credentials given and attaches the named policy (a built-in one such as
// "readonly", "writeonly" or "readwrite").
func (s *Server) CreateUser(accessKey, secretKey, policy string) {
	s.t.Helper()
	s.MC("admin", "user", "add", "test", accessKey, secretKey)
	s.MC("admin", "policy", "attach", "test", policy, "--user", accessKey)
}

// Client returns an S3 client with the root credentials, closed when the test ends.
func (s *Server) Client() *s3.Client {
	return s.ClientFor(s.AccessKey, s.SecretKey)
}

// ClientFor returns an S3 client with the given credentials, closed when the test ends.
func (s *Server) ClientFor(accessKey, secretKey string) *s3.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	s.t.Cleanup(tr.CloseIdleConnections)
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint()),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
		HTTPClient:   &http.Client{Transport: tr},
	})
}

// CreateBucket creates a bucket with the root credentials.
func (s *Server) CreateBucket(name string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		s.t.Fatalf("creating bucket %s: %v", name, err)
	}
}
