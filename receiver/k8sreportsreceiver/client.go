// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// restConfig builds the client configuration for the configured auth_type.
func restConfig(c *Config) (*rest.Config, error) {
	cfg, err := c.RestConfig("otelcol-policy/k8s_reports")
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = c.QPS, c.Burst
	return cfg, nil
}

// apiClients are the two clients the receiver needs: discovery, to find which report kinds are served, and a
// raw REST client, to list and watch them as JSON without decoding into unstructured maps (which would cost
// several times the memory of the objects on a big cluster).
type apiClients struct {
	discovery discovery.DiscoveryInterface
	rest      rest.Interface
}

func newAPIClients(cfg *rest.Config) (*apiClients, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(cfg)
	// Requests set their whole path; the core version only lets the client decode the API server's Status errors.
	rc.GroupVersion = &schema.GroupVersion{Version: "v1"}
	rc.APIPath = "/api"
	rc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc.AcceptContentTypes = "application/json"
	rc.ContentType = "application/json"
	raw, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, err
	}
	return &apiClients{discovery: dc, rest: raw}, nil
}

// close drops the idle connections of the clients' transports, which client-go shares and caches.
func (c *apiClients) close() {
	if rc, ok := c.rest.(*rest.RESTClient); ok && rc.Client != nil {
		rc.Client.CloseIdleConnections()
	}
	if dc, ok := c.discovery.(*discovery.DiscoveryClient); ok {
		if rc, ok := dc.RESTClient().(*rest.RESTClient); ok && rc.Client != nil {
			rc.Client.CloseIdleConnections()
		}
	}
}
