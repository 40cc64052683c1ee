// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package testcerts makes a small certificate authority for tests of TLS and mutual TLS: a CA, a server
// certificate for localhost and 127.0.0.1, and a client certificate, all fresh for each call.
package testcerts // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/testcerts"

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PEM is a certificate and its private key.
type PEM struct {
	Cert, Key []byte
}

// Certs are PEM encoded.
type Certs struct {
	CA     []byte
	Server PEM
	Client PEM
}

// Files are the paths of Certs written to a directory.
type Files struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// New makes a CA and a server and a client certificate it signs. It fails t on error.
func New(t testing.TB) *Certs {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) PEM {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return PEM{
			Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		}
	}
	return &Certs{
		CA:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Server: leaf(2, "localhost", x509.ExtKeyUsageServerAuth),
		Client: leaf(3, "test client", x509.ExtKeyUsageClientAuth),
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// Write writes the PEM files to dir.
func (c *Certs) Write(t testing.TB, dir string) Files {
	t.Helper()
	f := Files{
		CA: filepath.Join(dir, "ca.pem"), ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey: filepath.Join(dir, "server-key.pem"), ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	for path, data := range map[string][]byte{f.CA: c.CA, f.ServerCert: c.Server.Cert, f.ServerKey: c.Server.Key,
		f.ClientCert: c.Client.Cert, f.ClientKey: c.Client.Key} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// Pool is a pool of the CA alone.
func (c *Certs) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(c.CA)
	return p
}

// ServerTLS is a server configuration; with clientAuth it requires a client certificate the CA signed.
func (c *Certs) ServerTLS(t testing.TB, clientAuth bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{pair(t, c.Server)}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, c.Pool()
	}
	return cfg
}

// ClientTLS is a client configuration that trusts the CA; with cert it presents the client certificate.
func (c *Certs) ClientTLS(t testing.TB, cert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: c.Pool(), MinVersion: tls.VersionTLS12}
	if cert {
		cfg.Certificates = []tls.Certificate{pair(t, c.Client)}
	}
	return cfg
}

func pair(t testing.TB, p PEM) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.Cert, p.Key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
