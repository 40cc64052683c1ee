// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpctest // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// PKI is a CA generated for one test, with a server certificate for 127.0.0.1 and a client certificate, all
// written as PEM files for the exporter's tls settings, and a client certificate of another CA.
type PKI struct {
	CAFile                string
	ClientCert, ClientKey string
	// OtherCAFile is a CA the server's certificate is not signed by; OtherClient and OtherClientKey a client
	// certificate of that CA, which the server does not trust.
	OtherCAFile                 string
	OtherClient, OtherClientKey string

	dir    string
	server tls.Certificate
	pool   *x509.CertPool
}

// NewPKI generates the certificates into a temporary directory of t.
func NewPKI(t testing.TB) *PKI {
	p := &PKI{dir: t.TempDir(), pool: x509.NewCertPool()}
	ca, caKey := newCA(t, "test CA")
	p.pool.AddCert(ca)
	p.CAFile = p.writePEM(t, "ca.pem", "CERTIFICATE", ca.Raw)

	serverDER, serverKey := issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "results-server"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	p.server = tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}

	clientDER, clientKey := issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "otelcol-policy"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.ClientCert = p.writePEM(t, "client.pem", "CERTIFICATE", clientDER)
	p.ClientKey = p.writeKey(t, "client-key.pem", clientKey)

	other, otherKey := newCA(t, "other CA")
	p.OtherCAFile = p.writePEM(t, "other-ca.pem", "CERTIFICATE", other.Raw)
	otherDER, otherClientKey := issue(t, other, otherKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "intruder"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.OtherClient = p.writePEM(t, "other-client.pem", "CERTIFICATE", otherDER)
	p.OtherClientKey = p.writeKey(t, "other-client-key.pem", otherClientKey)
	return p
}

// ServerTLS is the server's configuration; mutual requires and verifies client certificates.
func (p *PKI) ServerTLS(mutual bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if mutual {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = p.pool
	}
	return cfg
}

var serial atomic.Int64

func newCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

func issue(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	return der, key
}

func (p *PKI) writePEM(t testing.TB, name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return path
}

func (p *PKI) writeKey(t testing.TB, name string, key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return p.writePEM(t, name, "PRIVATE KEY", der)
}
