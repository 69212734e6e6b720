// Package remote fetches what users point the service at (STAC APIs and catalogs, remote
// services, files by URL) as the untrusted input it is. A URL is only ever http or https; its
// host passes the deployment's allow and deny lists; every address it resolves to is checked at
// the moment of connecting (so a DNS answer cannot change between the check and the dial), and
// loopback, private, link-local and other special addresses are refused unless the deployment
// allows them; every redirect is checked again like a first request; a credential the user gave
// (WithCredential) goes only to the origin it was given for, and headers that carry credentials
// never follow a redirect to another host; a body is bounded (too large is an error, never a
// silent cut) and so is the time.
package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"meridian/internal/apperr"
)

// Policy is what a deployment allows (REMOTE_* settings).
type Policy struct {
	// AllowHosts, when not empty, are the only hosts fetched: a name, or "*.example.org" for it
	// and its subdomains. A host allowed by name may be a private address (an intranet service
	// an admin named). DenyHosts are never fetched, whatever else says.
	AllowHosts, DenyHosts []string
	// AllowPrivate lets any host resolve to loopback, private and link-local addresses (tests,
	// intranet deployments); off by default.
	AllowPrivate bool
	MaxBytes     int64         // largest body read
	Timeout      time.Duration // whole request, redirects included
	MaxRedirects int
	// AssetMaxBytes and AssetTimeout bound a streamed download (Open: a data file copied into
	// staging), which may be far larger and slower than an answer read into memory.
	AssetMaxBytes int64
	AssetTimeout  time.Duration
}

// Client fetches under a policy.
type Client struct {
	policy Policy
	http   *http.Client
}

// Errors of the caller's making (what to tell the user), as opposed to a remote that failed.
var (
	ErrRefused  = errors.New("remote: the address is not one this service fetches")
	ErrTooLarge = errors.New("remote: the answer is larger than this service reads")
	ErrTimeout  = errors.New("remote: the remote took longer than this service waits")
)

// New makes a client for policy.
func New(policy Policy) *Client {
	if policy.MaxRedirects == 0 {
		policy.MaxRedirects = 5
	}
	c := &Client{policy: policy}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy: nil, // never the environment's proxy: the checks are about where we connect
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return c.dial(ctx, dialer, network, addr)
		},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
	}
	c.http = &http.Client{Transport: credentialed{transport}, CheckRedirect: c.checkRedirect}
	return c
}

// dial connects to the first address of addr's host that the policy lets us reach.
func (c *Client) dial(ctx context.Context, dialer *net.Dialer, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	var refusal error
	for _, ip := range ips {
		if err := c.checkAddress(host, ip); err != nil {
			refusal = cmp.Or(refusal, err)
			continue
		}
		return dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
	}
	// The refusal names the setting that would allow the address.
	return nil, fmt.Errorf("%s resolves only to addresses this service does not reach: %w", host, cmp.Or(refusal, ErrRefused))
}

// Dial connects to addr (host:port) for a protocol other than HTTP (a database a connector
// reads) under the same policy: the host's allow and deny lists, then every address checked
// as it is dialled.
func (c *Client) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if err := c.checkHost(host); err != nil {
		return nil, err
	}
	return c.dial(ctx, &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, network, addr)
}

// Credential is a secret a user gave for one remote service: Header: Value is sent with every
// request to Origin (scheme, host and port of the address the user named), and with no other.
type Credential struct {
	Origin, Header, Value string
}

type credentialKey struct{}

// WithCredential makes every fetch of ctx carry cred to its origin. The header is added per
// request at the transport, never to the request a redirect copies its headers from: a redirect
// to another origin, or a link or asset elsewhere, goes without it.
func WithCredential(ctx context.Context, cred Credential) context.Context {
	if cred.Value == "" {
		return ctx
	}
	return context.WithValue(ctx, credentialKey{}, cred)
}

// OriginOf is the origin a credential given with raw belongs to.
func OriginOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return origin(u)
}

// origin is scheme://host:port, the port explicit, lower case.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme + "://" + net.JoinHostPort(strings.TrimSuffix(u.Hostname(), "."), port))
}

// credentialed adds the context's credential to requests for its origin.
type credentialed struct{ next http.RoundTripper }

func (c credentialed) RoundTrip(req *http.Request) (*http.Response, error) {
	cred, ok := req.Context().Value(credentialKey{}).(Credential)
	if !ok || cred.Origin == "" || origin(req.URL) != cred.Origin {
		return c.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set(cred.Header, cred.Value)
	return c.next.RoundTrip(r)
}

// reservedHeaders are headers a credential may not be sent in: they frame the request itself.
var reservedHeaders = []string{"Host", "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding", "Connection",
	"Keep-Alive", "Upgrade", "Te", "Trailer", "Expect", "User-Agent", "Accept", "Accept-Encoding", "Range", "Proxy-Authorization"}

// CheckCredential refuses a credential header that is not one (a malformed name or value, or
// a header that frames the request).
func CheckCredential(header, value string) error {
	if header == "" || len(header) > 64 || strings.ContainsFunc(header, func(r rune) bool {
		return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		return apperr.Unprocessable("credentials.header %q: a header name (letters, digits and -, at most 64)", header)
	}
	for _, h := range reservedHeaders {
		if strings.EqualFold(h, header) {
			return apperr.Unprocessable("credentials.header %q frames the request and carries no credential", header)
		}
	}
	if value == "" || strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return apperr.Unprocessable("credentials.value: not empty, without control characters")
	}
	return nil
}

// Check refuses a URL this service does not fetch, before anything is sent.
func (c *Client) Check(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, apperr.Unprocessable("url %q: an absolute http or https URL is needed", raw)
	}
	if u.User != nil {
		return nil, apperr.Unprocessable("url: credentials in the URL are not accepted; give them as the request's credentials (header and value)")
	}
	if err := c.checkHost(u.Hostname()); err != nil {
		return nil, apperr.Unprocessable("url %q: %v", raw, err)
	}
	return u, nil
}

// CheckResolved is Check, then the host's addresses as a fetch would dial them: an address
// the policy refuses is found before anything is fetched (a dry run, a validation of many URLs
// at once). The fetch checks each address again as it dials it.
func (c *Client) CheckResolved(ctx context.Context, raw string) error {
	u, err := c.Check(raw)
	if err != nil {
		return err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return apperr.Unprocessable("url %q: the host %s cannot be resolved", raw, u.Hostname())
	}
	var refusal error
	for _, ip := range ips {
		if refusal = c.checkAddress(u.Hostname(), ip); refusal == nil {
			return nil
		}
	}
	return apperr.Unprocessable("url %q: %s resolves only to addresses this service does not reach: %v", raw, u.Hostname(), cmp.Or(refusal, ErrRefused))
}

func (c *Client) checkHost(host string) error {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if matches(c.policy.DenyHosts, host) {
		return fmt.Errorf("%w: %s is on the deny list (REMOTE_DENY_HOSTS)", ErrRefused, host)
	}
	if len(c.policy.AllowHosts) > 0 && !matches(c.policy.AllowHosts, host) {
		return fmt.Errorf("%w: %s is not on the allow list (REMOTE_ALLOW_HOSTS)", ErrRefused, host)
	}
	return nil
}

// checkAddress refuses an address the host resolved to, unless the deployment allows private
// addresses or named this host.
func (c *Client) checkAddress(host string, ip netip.Addr) error {
	if c.policy.AllowPrivate || (len(c.policy.AllowHosts) > 0 && matches(c.policy.AllowHosts, strings.ToLower(host))) {
		return nil
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() || special(ip) {
		return fmt.Errorf("%w: %s is a private or special address (REMOTE_ALLOW_PRIVATE)", ErrRefused, ip)
	}
	return nil
}

// specialNets are ranges netip has no predicate for: carrier-grade NAT, benchmarking,
// documentation, the IPv6 discard and 6to4 relay ranges, and the cloud metadata service's.
var specialNets = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{"100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "192.0.2.0/24", "198.51.100.0/24",
		"203.0.113.0/24", "240.0.0.0/4", "100::/64", "2001:db8::/32", "64:ff9b::/96", "fd00:ec2::254/128"} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

func special(ip netip.Addr) bool {
	for _, p := range specialNets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// matches reports whether host is one of patterns ("name" or "*.suffix").
func matches(patterns []string, host string) bool {
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSpace(p))
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			if host == suffix || strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == p {
			return true
		}
	}
	return false
}

// credentialHeaders are the headers a request may carry credentials in; they never follow a
// redirect to another host.
var credentialHeaders = []string{"Authorization", "Cookie", "X-Api-Key", "Proxy-Authorization"}

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > c.policy.MaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", ErrRefused, c.policy.MaxRedirects)
	}
	if _, err := c.Check(req.URL.String()); err != nil {
		return fmt.Errorf("%w: a redirect to %s", ErrRefused, req.URL.Redacted())
	}
	if !strings.EqualFold(req.URL.Host, via[0].URL.Host) {
		for _, h := range credentialHeaders {
			req.Header.Del(h)
		}
	}
	return nil
}

// Response is a fetched answer with its body read (at most the policy's bytes).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	URL    *url.URL // where the answer came from, after redirects
}

// Get fetches raw with header.
func (c *Client) Get(ctx context.Context, raw string, header http.Header) (*Response, error) {
	return c.Do(ctx, http.MethodGet, raw, header, nil)
}

// Do sends a request (GET, or POST with a body: STAC searches) and reads its answer.
func (c *Client) Do(ctx context.Context, method, raw string, header http.Header, body []byte) (*Response, error) {
	u, err := c.Check(raw)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.policy.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := request(ctx, method, u, raw, header, rd)
	if err != nil {
		return nil, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, c.failure(raw, timedOut(ctx, err, c.policy.Timeout, "REMOTE_TIMEOUT"))
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, c.policy.MaxBytes+1))
	if err != nil {
		return nil, c.failure(raw, timedOut(ctx, err, c.policy.Timeout, "REMOTE_TIMEOUT"))
	}
	if int64(len(b)) > c.policy.MaxBytes || res.ContentLength > c.policy.MaxBytes {
		return nil, c.failure(raw, fmt.Errorf("%w: more than %d bytes (REMOTE_MAX_BYTES)", ErrTooLarge, c.policy.MaxBytes))
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Body: b, URL: res.Request.URL}, nil
}

// request builds a request to the checked URL u (raw as the caller gave it) with the caller's
// headers and ours.
func request(ctx context.Context, method string, u *url.URL, raw string, header http.Header, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, apperr.Unprocessable("url %q: %v", raw, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "Meridian")
	return req, nil
}

// Download is an answer whose body is streamed, never held whole: Body yields at most the bound
// Open was given and fails with ErrTooLarge past it. Close it.
type Download struct {
	Status int
	Header http.Header
	URL    *url.URL // where the answer came from, after redirects
	Size   int64    // the announced length, -1 when none
	Body   io.ReadCloser
}

// Open sends a GET for a (possibly large) file and hands its body over as a stream, with every
// check of Do: the URL and each redirect, the addresses dialled, credentials kept to their host.
// The body is bounded by max bytes (an announced length over it is refused before anything is
// read) and the whole transfer by the policy's AssetTimeout; ctx may end it sooner.
func (c *Client) Open(ctx context.Context, raw string, header http.Header, max int64) (*Download, error) {
	u, err := c.Check(raw)
	if err != nil {
		return nil, err
	}
	timeout := c.policy.AssetTimeout
	if timeout <= 0 {
		timeout = c.policy.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	req, err := request(ctx, http.MethodGet, u, raw, header, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		err = timedOut(ctx, err, timeout, "REMOTE_ASSET_TIMEOUT")
		cancel()
		return nil, c.failure(raw, err)
	}
	if res.ContentLength > max {
		res.Body.Close()
		cancel()
		return nil, c.failure(raw, fmt.Errorf("%w: %d bytes announced, more than the %d read for a file", ErrTooLarge, res.ContentLength, max))
	}
	body := &bounded{r: res.Body, left: max, max: max, ctx: ctx, timeout: timeout, cancel: cancel}
	return &Download{Status: res.StatusCode, Header: res.Header, URL: res.Request.URL, Size: res.ContentLength, Body: body}, nil
}

// bounded reads at most max bytes of r and fails past them, rather than cutting the file short.
type bounded struct {
	r         io.ReadCloser
	left, max int64
	ctx       context.Context // the transfer's, ended by its timeout
	timeout   time.Duration
	cancel    context.CancelFunc
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = timedOut(b.ctx, err, b.timeout, "REMOTE_ASSET_TIMEOUT")
	}
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
	}
	return n, err
}

func (b *bounded) Close() error {
	err := b.r.Close()
	b.cancel()
	return err
}

// timedOut names the setting whose time ran out when ctx's deadline ended err's request (not
// when the caller's context was cancelled, which is no remote's doing).
func timedOut(ctx context.Context, err error, limit time.Duration, setting string) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: no complete answer within %s (%s)", ErrTimeout, limit, setting)
}

// failure says what went wrong: a refusal is the caller's (422), anything else the remote's (502).
func (c *Client) failure(raw string, err error) error {
	if errors.Is(err, ErrRefused) || errors.Is(err, ErrTooLarge) {
		return &apperr.Error{Kind: apperr.KindUnprocessable, Title: "Unprocessable Entity", Detail: fmt.Sprintf("url %q: %v", raw, err), Err: err}
	}
	return &apperr.Error{Kind: apperr.KindUpstream, Title: "Bad Gateway", Detail: fmt.Sprintf("fetching %s failed: %v", raw, err), Err: err}
}
