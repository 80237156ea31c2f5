package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/process"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// idle measures what the agent costs once nothing changes (issue #27: at most
// 1% of a core over an hour, full resyncs included): after the quiet rounds,
// the CPU time (user and system, /proc/<pid>/stat) it spends during IdleWindow,
// scaled to an hour, polling every IdleInterval (set first, when not zero). Run with a --full-resync-period shorter than the window,
// the figure includes several full resyncs, and is an upper bound of the
// default period's (more resyncs per hour).
func (b *bench) idle(ctx context.Context) error {
	if b.o.IdleInterval > 0 {
		if err := b.e.setInterval(ctx, b.o.IdleInterval); err != nil {
			return err
		}
	}
	start, err := b.e.cpuSeconds()
	if err != nil {
		return err
	}
	began := time.Now()
	if err := sleep(ctx, b.o.IdleWindow); err != nil {
		return err
	}
	end, err := b.e.cpuSeconds()
	if err != nil {
		return err
	}
	window := time.Since(began).Seconds()
	r := b.res
	r.IdleWindowSeconds, r.IdleCPUSeconds = window, end-start
	r.IdleCPUSecondsPerHour = r.IdleCPUSeconds / window * 3600
	return nil
}

// setInterval sets the PeeringRepository's spec.interval (the benchmark's
// short one stands in for push webhooks, which an idle provider does not
// receive) and waits until the agent's full round for the new generation is
// over, and its first quiet round after it.
func (e *env) setInterval(ctx context.Context, interval time.Duration) error {
	obj := &gitpeerv1alpha1.PeeringRepository{}
	key := client.ObjectKey{Namespace: sandbox.AgentNamespace, Name: "peering"}
	if err := e.k8s.Get(ctx, key, obj); err != nil {
		return err
	}
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Interval = &metav1.Duration{Duration: interval}
	if err := e.k8s.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("setting spec.interval for the idle measurement: %w", err)
	}
	for {
		if err := e.k8s.Get(ctx, key, obj); err != nil {
			return err
		}
		if obj.Status.ObservedGeneration == obj.Generation {
			return sleep(ctx, interval+10*time.Second)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// cpuSeconds returns the CPU time the agent has used so far, user and system.
func (e *env) cpuSeconds() (float64, error) { return process.CPUSeconds(e.agent.PID()) }
