package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

const (
	// autoQPS is --kube-api-qps's default: no client-side limit when the API
	// server enforces API Priority and Fairness, else fallbackQPS.
	autoQPS = "auto"
	// fallbackQPS is the limit "auto" sets when the API server does not say it
	// enforces API Priority and Fairness (or could not be asked).
	fallbackQPS = 50
	// defaultBurst is --kube-api-burst's default.
	defaultBurst = 300
	// apfProbeTimeout bounds the request that asks the API server whether it
	// enforces API Priority and Fairness.
	apfProbeTimeout = 10 * time.Second
)

// applyRateLimit sets cfg's client-side rate limit from --kube-api-qps and
// --kube-api-burst and describes it for the log. With "auto" the agent sets
// none when the API server enforces API Priority and Fairness: the server then
// queues and sheds load itself, and a fixed client limit (~6 writes per
// consumer) would set the pace of an issuance instead of the cluster, as
// controller-runtime's GetConfig and Flux's controllers do. A number sets a
// limit; a negative one sets none (client-go's convention).
func applyRateLimit(ctx context.Context, cfg *rest.Config, qps string, burst int) (string, error) {
	if burst < 1 {
		return "", fmt.Errorf("--kube-api-burst: %d is not positive", burst)
	}
	if qps != autoQPS {
		limit, err := strconv.ParseFloat(qps, 32)
		if err != nil || limit == 0 {
			return "", fmt.Errorf(`--kube-api-qps: %q is neither "auto", a positive limit nor a negative number (no limit)`, qps)
		}
		if limit < 0 {
			cfg.QPS, cfg.Burst = -1, 0
			return "none (--kube-api-qps)", nil
		}
		cfg.QPS, cfg.Burst = float32(limit), burst
		return fmt.Sprintf("%g QPS, burst %d", limit, burst), nil
	}
	apf, err := enforcesAPF(ctx, cfg)
	if apf {
		cfg.QPS, cfg.Burst = -1, 0
		return "none (the API server enforces API Priority and Fairness)", nil
	}
	cfg.QPS, cfg.Burst = fallbackQPS, burst
	why := "the API server does not enforce API Priority and Fairness"
	if err != nil {
		why = "could not ask the API server whether it enforces API Priority and Fairness: " + err.Error()
	}
	return fmt.Sprintf("%d QPS, burst %d (%s)", fallbackQPS, burst, why), nil
}

// enforcesAPF reports whether the API server enforces API Priority and
// Fairness: it then names the FlowSchema and priority level that classified a
// request in the response's headers, whatever the response's status.
// Hand-written (a dozen lines) rather than imported from Flux's cli-utils,
// which would bring kubectl and cli-utils into the module for one request.
func enforcesAPF(ctx context.Context, cfg *rest.Config) (bool, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false, err
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, apfProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("livez", "ping").String(), nil)
	if err != nil {
		return false, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "" ||
		resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) != "", nil
}
