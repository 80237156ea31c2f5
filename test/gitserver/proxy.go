package gitserver

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// Proxy is a smart-HTTP reverse proxy in front of a Server that a test can
// cut, to make the Git server unreachable for the clients that use it, and
// that can run a hook when a client starts a push.
type Proxy struct {
	// Refused counts the connections closed unanswered while cut.
	Refused atomic.Int64

	server  *Server
	address string
	mu      sync.Mutex
	cut     bool
	onPush  func()
	conns   map[net.Conn]bool
}

// NewProxy starts a Proxy for s until the test ends.
func (s *Server) NewProxy(t TB) *Proxy {
	t.Helper()
	upstream, err := url.Parse(s.srv.HTTPAddress())
	if err != nil {
		t.Fatalf("git server address: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listener: %v", err)
	}
	p := &Proxy{server: s, address: l.Addr().String(), conns: map[net.Conn]bool{}}
	forward := httputil.NewSingleHostReverseProxy(upstream)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("service") == "git-receive-pack" {
				p.pushing()
			}
			if p.isCut() {
				panic(http.ErrAbortHandler) // drop the connection unanswered
			}
			forward.ServeHTTP(w, r)
		}),
		ConnState: p.track,
	}
	go func() { _ = srv.Serve(&cuttable{Listener: l, p: p}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// URL is the address of r through the proxy.
func (p *Proxy) URL(r Repo) string {
	return "http://" + p.address + strings.TrimPrefix(r.HTTPURL, p.server.srv.HTTPAddress())
}

// OnPush arms hook: it runs once, in the proxy, when the next push starts and
// before it is forwarded (or dropped, if the hook cut the proxy).
func (p *Proxy) OnPush(hook func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onPush = hook
}

// Cut makes the Git server unreachable through the proxy: open connections
// are closed and new ones closed unanswered, until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore forwards connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *Proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// pushing runs the armed hook, once.
func (p *Proxy) pushing() {
	p.mu.Lock()
	hook := p.onPush
	p.onPush = nil
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
}

// track keeps the open connections, for Cut.
func (p *Proxy) track(c net.Conn, state http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch state {
	case http.StateNew:
		p.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// cuttable closes the connections it accepts while the proxy is cut.
type cuttable struct {
	net.Listener
	p *Proxy
}

func (l *cuttable) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || !l.p.isCut() {
			return c, err
		}
		l.p.Refused.Add(1)
		_ = c.Close()
	}
}
