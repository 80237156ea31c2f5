package gitsync

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/utils/ioutil"
)

// streamingSession is go-git's smart-HTTP receive-pack session (which reads
// the advertised refs, following redirects as go-git allows) with its
// ReceivePack replaced. go-git's builds the whole request, pack included, in
// memory before sending it (a 10,000-file write: a 24 MB pack, and twice
// that allocated while its buffer grows), and never closes the response:
// the connection, its two goroutines and that buffer stayed for the life of
// the process, one per push. This one streams the request as the pack is
// encoded (chunked) and closes the response. Written by hand because
// go-git's HTTP transport offers neither; the request, the headers, the
// error statuses and the report are go-git's (packp, githttp.NewErr).
type streamingSession struct {
	transport.ReceivePackSession
	client *http.Client
	url    string // the repository's receive-pack service
	auth   githttp.AuthMethod
}

// newHTTPClient returns the client of a Repo's HTTP pushes: Go's default
// transport (proxy from the environment) trusting the system's CAs and
// caBundle, as go-git configures its own for an endpoint with a CA bundle.
// It follows no redirect: a streamed request cannot be sent twice.
func newHTTPClient(caBundle []byte) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if len(caBundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(caBundle)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// ReceivePack sends req, its pack streamed, and returns the server's report.
func (s *streamingSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	body, w := io.Pipe()
	defer body.Close() // ends the encoding if the request stopped before its end
	go func() { _ = w.CloseWithError(req.Encode(w)) }()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, body)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("User-Agent", capability.DefaultAgent())
	hreq.Header.Set("Accept", "application/x-"+transport.ReceivePackServiceName+"-result")
	hreq.Header.Set("Content-Type", "application/x-"+transport.ReceivePackServiceName+"-request")
	if s.auth != nil {
		s.auth.SetAuth(hreq)
	}
	res, err := s.client.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode >= http.StatusMultipleChoices && res.StatusCode < http.StatusBadRequest {
		return nil, fmt.Errorf("the server redirects pushes to %s (HTTP %d): configure the repository at that address",
			res.Header.Get("Location"), res.StatusCode)
	}
	if err := githttp.NewErr(res); err != nil {
		return nil, err
	}
	r, err := ioutil.NonEmptyReader(res.Body)
	if errors.Is(err, ioutil.ErrEmptyReader) {
		return nil, nil // no report asked, none sent
	}
	if err != nil {
		return nil, err
	}
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, r)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, r)
	}
	report := packp.NewReportStatus()
	if err := report.Decode(r); err != nil {
		return nil, err
	}
	// Read what follows the report (a flush), so that the connection is reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	return report, report.Error()
}
