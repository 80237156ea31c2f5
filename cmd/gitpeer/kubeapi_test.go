package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gitpeer/gitpeer/test/controlplane"
)

// rateLimit parses the agent's flags args, applies them to a copy of cfg as
// the agent does and returns the rate limiter of a client built from it (nil:
// no client-side limit) with the description the agent logs.
func rateLimit(t *testing.T, cfg *rest.Config, args ...string) (qps float32, limited bool, desc string, err error) {
	t.Helper()
	cmd := newAgentCmd()
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	qpsFlag, _ := cmd.Flags().GetString("kube-api-qps")
	burst, _ := cmd.Flags().GetInt("kube-api-burst")
	cfg = rest.CopyConfig(cfg)
	if desc, err = applyRateLimit(context.Background(), cfg, qpsFlag, burst); err != nil {
		return 0, false, "", err
	}
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	limiter := clients.CoreV1().RESTClient().GetRateLimiter()
	if limiter == nil {
		return 0, false, desc, nil
	}
	return limiter.QPS(), true, desc, nil
}

// TestRateLimitAPF checks that with its default flags the agent's clients are
// not throttled by the client against an API server enforcing API Priority and
// Fairness (the test control plane's, as every kube-apiserver's by default),
// and that the flags still set a limit, or none.
func TestRateLimitAPF(t *testing.T) {
	cp := controlplane.Start(t)
	for _, tc := range []struct {
		args    []string
		limited bool
		qps     float32
		desc    string
	}{
		{args: nil, desc: "API Priority and Fairness"},
		{args: []string{"--kube-api-qps=20", "--kube-api-burst=30"}, limited: true, qps: 20, desc: "20 QPS, burst 30"},
		{args: []string{"--kube-api-qps=-1"}, desc: "none (--kube-api-qps)"},
	} {
		qps, limited, desc, err := rateLimit(t, cp.Config, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if limited != tc.limited || qps != tc.qps || !strings.Contains(desc, tc.desc) {
			t.Errorf("%v: limited %t at %g QPS (%q), want limited %t at %g QPS (%q)", tc.args, limited, qps, desc, tc.limited, tc.qps, tc.desc)
		}
	}
}

// TestRateLimitWithoutAPF checks "auto" keeps a client-side limit when the
// server does not say it enforces API Priority and Fairness, or cannot be
// asked, and that bad values are refused naming the flag.
func TestRateLimitWithoutAPF(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer plain.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, host := range []string{plain.URL, gone.URL} {
		qps, limited, desc, err := rateLimit(t, &rest.Config{Host: host})
		if err != nil {
			t.Fatal(err)
		}
		if !limited || qps != fallbackQPS || !strings.Contains(desc, "burst 300") {
			t.Errorf("%s: limited %t at %g QPS (%q), want %d QPS, burst 300", host, limited, qps, desc, fallbackQPS)
		}
	}
	for _, args := range [][]string{{"--kube-api-qps=0"}, {"--kube-api-qps=fast"}, {"--kube-api-qps=5", "--kube-api-burst=0"}} {
		flag, _, _ := strings.Cut(args[len(args)-1], "=")
		if _, _, _, err := rateLimit(t, &rest.Config{Host: plain.URL}, args...); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%v: error %v, want one naming the flag", args, err)
		}
	}
}
