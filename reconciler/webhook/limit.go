package webhook

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/lru"
)

// Rate limits per source: a source sending more than DefaultBurst requests at
// once, or more than DefaultRate a second, is answered 429 until it slows down.
const (
	DefaultRate  rate.Limit = 10
	DefaultBurst            = 20
	// maxSources bounds the sources remembered; the least recently seen is forgotten first.
	maxSources = 10000
	// ipv6SourceBits groups IPv6 sources by /64, the smallest block a host usually gets.
	ipv6SourceBits = 64
)

// sourceLimiter rate-limits requests per source address.
type sourceLimiter struct {
	limit   rate.Limit
	burst   int
	trusted []netip.Prefix
	now     func() time.Time

	mu      sync.Mutex
	sources *lru.Cache // netip.Addr -> *rate.Limiter
}

// wrap returns next behind the rate limit.
func (l *sourceLimiter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if wait := l.reserve(l.source(req)); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			reply(w, http.StatusTooManyRequests, http.StatusText(http.StatusTooManyRequests))
			return
		}
		next.ServeHTTP(w, req)
	})
}

// reserve takes a token of src's bucket and returns zero, or returns how long
// src has to wait for one (and takes nothing).
func (l *sourceLimiter) reserve(src netip.Addr) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.sources.Get(src)
	if !ok {
		v = rate.NewLimiter(l.limit, l.burst)
		l.sources.Add(src, v)
	}
	r := v.(*rate.Limiter).ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait
	}
	return 0
}

// source is the address a request is counted against: the TCP peer, or, when
// the peer is a trusted proxy, the last X-Forwarded-For address that is not a
// trusted proxy. IPv6 addresses count by /64.
func (l *sourceLimiter) source(req *http.Request) netip.Addr {
	addr := peer(req)
	hops := strings.Split(strings.Join(req.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0 && l.isTrusted(addr); i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // the proxy's own view is all there is
		}
		addr = hop.Unmap()
	}
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, ipv6SourceBits).Masked().Addr()
	}
	return addr
}

func (l *sourceLimiter) isTrusted(addr netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// peer is the TCP peer of req; the zero Addr if RemoteAddr is not an address.
func peer(req *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(req.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
