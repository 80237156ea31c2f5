package main

import (
	"context"
	"fmt"
	"time"
)

// waveResult is one wave of a run where maxPendingRequests is below N.
type waveResult struct {
	// Consumers is how many consumers got their identity in the wave.
	Consumers int `json:"consumers"`
	// NoncesSeconds: the previous wave's identities (or the requests' merge) → this wave's
	// nonces on main; IdentitiesSeconds: its Tenants merged → its identities valid.
	NoncesSeconds     float64 `json:"noncesSeconds"`
	IdentitiesSeconds float64 `json:"identitiesSeconds"`
}

// waves runs the handshake when the agent answers at most o.wave() requests at once: the
// consumers wait for a wave's nonces, sign them in one pull request and wait for the wave's
// identities, after which the agent answers the next requests.
func (b *bench) waves(ctx context.Context, pr *reviewer, cs []*consumer) error {
	signed := map[string]bool{}
	for len(signed) < len(cs) {
		want := min(len(signed)+b.o.wave(), len(cs))
		t := time.Now()
		phase := fmt.Sprintf("wave %d", len(b.res.Waves)+1)
		if err := b.waitFor(ctx, phase, func(p progress) bool { return p.nonces >= want }); err != nil {
			return err
		}
		w := waveResult{NoncesSeconds: since(t)}
		var wave []*consumer
		for _, c := range cs {
			if c.nonce != "" && !signed[c.id] {
				wave, signed[c.id] = append(wave, c), true
			}
		}
		w.Consumers = len(wave)
		files, err := tenantFiles(providerID, wave)
		if err != nil {
			return err
		}
		if err := pr.proposeAndMerge(fmt.Sprintf("Tenants of %s … %s", wave[0].id, wave[len(wave)-1].id), files); err != nil {
			return err
		}
		t = time.Now()
		if err := b.waitFor(ctx, phase, func(p progress) bool { return p.valid+p.invalid >= len(signed) }); err != nil {
			return err
		}
		w.IdentitiesSeconds = since(t)
		b.res.Waves = append(b.res.Waves, w)
	}
	return nil
}
