package gitsync

import (
	"context"
	"math/rand/v2"
	"time"
)

// delay returns the full-jitter backoff before attempt n+1 (n >= 1): a random
// duration in [0, min(MaxDelay, BaseDelay*2^(n-1))].
func (p Retry) delay(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
