package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig builds the client configuration for the configured auth_type, as contrib's Kubernetes components
// do: in-cluster service account, a kubeconfig ($KUBECONFIG, else ~/.kube/config, with its current context or
// `context`), or the in-cluster address without credentials.
func restConfig(c *Config) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch c.AuthType {
	case AuthTypeServiceAccount:
		cfg, err = rest.InClusterConfig()
	case AuthTypeKubeConfig:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	case AuthTypeNone:
		cfg, err = rest.InClusterConfig()
		if err == nil {
			cfg = &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: cfg.CAFile}}
		}
	default:
		err = fmt.Errorf("unknown auth_type %q", c.AuthType)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration (auth_type %s): %w", c.AuthType, err)
	}
	cfg.QPS, cfg.Burst = c.QPS, c.Burst
	cfg.UserAgent = "otelcol-policy/k8s_reports"
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
