// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package apiserver starts a real Kubernetes control plane for integration tests: etcd and kube-apiserver (both
// built by hack/test-servers.sh), on free loopback ports, with token authentication and
// RBAC, so that tests exercise the API server's real list, watch, discovery and authorization behaviour.
package apiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// KubernetesVersion is the kube-apiserver release hack/test-servers.sh builds.
const KubernetesVersion = "v1.36.3"

// EtcdVersion is the etcd release hack/test-servers.sh builds: one kube-apiserver 1.36 supports, which serves
// consistent lists from its watch cache.
const EtcdVersion = "v3.6.16"

// Tokens of the users the API server knows. AdminToken is in system:masters; the others have no rights until a
// test grants them some with RBAC.
const (
	AdminToken  = "admin-token"
	ReaderUser  = "reader"
	ReaderToken = "reader-token"
)

// Cluster is a running control plane.
type Cluster struct {
	URL string
	dir string
}

// binaries finds etcd and kube-apiserver, or explains how to get them.
func binaries() (etcd, apiserver string, err error) {
	etcd = testproc.CachedBinary("etcd", EtcdVersion)
	if _, err := os.Stat(etcd); err != nil {
		return "", "", fmt.Errorf("etcd not found at %s: run hack/test-servers.sh (make test does)", etcd)
	}
	apiserver = os.Getenv("KUBE_APISERVER_BIN")
	if apiserver == "" {
		apiserver = testproc.CachedBinary("kube-apiserver", KubernetesVersion)
	}
	if _, err := os.Stat(apiserver); err != nil {
		return "", "", fmt.Errorf("kube-apiserver not found at %s: run hack/test-servers.sh (make test does)", apiserver)
	}
	return etcd, apiserver, nil
}

// Start starts etcd and kube-apiserver in dir and waits until the API server is ready. The processes are
// stopped by the returned function. It is meant for TestMain, so that a package shares one control plane.
func Start(dir string) (*Cluster, func(), error) {
	etcdBin, apiserverBin, err := binaries()
	if err != nil {
		return nil, nil, err
	}
	ports, err := freeport.Ports(3)
	if err != nil {
		return nil, nil, err
	}
	etcdClient := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	etcdPeer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	var procs []*testproc.Proc
	// kube-apiserver stops before etcd.
	stop := func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(syscall.SIGTERM, 5*time.Second)
		}
	}
	start := func(name string, bin string, args ...string) error {
		p, err := testproc.Start(name, testproc.Options{LogFile: filepath.Join(dir, name+".log")}, bin, args...)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		return nil
	}
	if err := start("etcd", etcdBin,
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdClient, "--advertise-client-urls", etcdClient,
		"--listen-peer-urls", etcdPeer, "--initial-advertise-peer-urls", etcdPeer,
		"--initial-cluster", "default="+etcdPeer,
		"--unsafe-no-fsync", // a throw-away test store: fsync only slows the tests down
	); err != nil {
		stop()
		return nil, nil, err
	}

	if err := WriteServiceAccountKey(dir); err != nil {
		stop()
		return nil, nil, err
	}
	tokens := strings.Join([]string{
		AdminToken + ",admin,admin,system:masters",
		ReaderToken + "," + ReaderUser + "," + ReaderUser,
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		stop()
		return nil, nil, err
	}
	if err := start("kube-apiserver", apiserverBin,
		"--etcd-servers", etcdClient,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[2]),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-cluster-ip-range", "10.0.0.0/24",
	); err != nil {
		stop()
		return nil, nil, err
	}
	c := &Cluster{URL: "https://127.0.0.1:" + strconv.Itoa(ports[2]), dir: dir}
	etcd, apiserver := procs[0], procs[1]
	if err := apiserver.WaitReady(90*time.Second, func() error {
		if etcd.HasExited() {
			return fmt.Errorf("etcd exited:\n%s", etcd.LogTail(2000))
		}
		return c.Ready()
	}); err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

// StartForTest starts a control plane for one test, stopped when it ends; under -short the test is skipped.
func StartForTest(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	c, stop, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return c
}

// Ready is a readiness check of the API server: /readyz answered 200 OK to the admin.
func (c *Cluster) Ready() error { return ReadyURL(c.URL, AdminToken) }

// ReadyURL is a readiness check of the API server at url, asked with token (the demo's server is not a
// Cluster).
func ReadyURL(url, token string) error {
	return testproc.GetOK(readyClient, url+"/readyz", token)
}

// readyClient keeps no connection open: a test package that checks for leaked goroutines would see its reader.
var readyClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test server's self-signed certificate
	DisableKeepAlives: true,
}}

// Config is a client configuration authenticating with token.
func (c *Cluster) Config(token string) *rest.Config {
	return &rest.Config{
		Host: c.URL, BearerToken: token, QPS: 200, Burst: 400,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(c.dir, "certs", "apiserver.crt")},
	}
}

// Kubeconfig writes a kubeconfig file for token and returns its path, for components configured with
// auth_type: kubeConfig.
func (c *Cluster) Kubeconfig(t testing.TB, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: test
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, c.URL, filepath.Join(c.dir, "certs", "apiserver.crt"), token)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Clients returns admin clients.
func (c *Cluster) Clients(t testing.TB) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config(AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(c.Config(AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	return cs, dc
}

// WriteServiceAccountKey writes the key pair kube-apiserver signs and checks service-account tokens with,
// sa.key and sa.pub in dir; the demo starts its API server the same way.
func WriteServiceAccountKey(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// ctx is a short timeout for test API calls.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func newClientset(c *Cluster, token string) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.Config(token))
}

// StartShared starts a control plane for the whole test process, in a directory named after the process that
// is removed by the next StartShared once the process is gone (a TestMain cannot clean up after os.Exit).
func StartShared() (*Cluster, error) {
	stale, _ := filepath.Glob(filepath.Join(os.TempDir(), "otelcol-policy-apiserver-*"))
	for _, d := range stale {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "otelcol-policy-apiserver-"))
		if err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
	dir := filepath.Join(os.TempDir(), "otelcol-policy-apiserver-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c, _, err := Start(dir)
	return c, err
}
