package mail

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"net/textproto"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message as the test server saw it.
type received struct {
	from string
	to   []string
	data []byte
	user string // authenticated user, empty without AUTH
	tls  bool   // whether the message travelled over STARTTLS
}

// testServer is a real SMTP server (go-smtp) on a random loopback port that keeps what it is
// sent. Its zero options accept any message without authentication and without TLS.
type testServer struct {
	host string
	port int
	// refuse lists recipients answered with 550 at RCPT TO.
	refuse map[string]bool
	// user and pass, when set, are the only credentials AUTH PLAIN accepts.
	user, pass string

	mu   sync.Mutex
	msgs []received
}

type serverOptions struct {
	listenHost string // defaults to 127.0.0.1
	tls        *tls.Config
	user, pass string
	refuse     []string
}

func startServer(t *testing.T, opts serverOptions) *testServer {
	t.Helper()
	if opts.listenHost == "" {
		opts.listenHost = "127.0.0.1"
	}
	ts := &testServer{host: opts.listenHost, user: opts.user, pass: opts.pass, refuse: map[string]bool{}}
	for _, r := range opts.refuse {
		ts.refuse[r] = true
	}
	l, err := net.Listen("tcp", net.JoinHostPort(opts.listenHost, "0"))
	if err != nil {
		t.Fatal(err)
	}
	ts.port = l.Addr().(*net.TCPAddr).Port

	srv := smtp.NewServer(ts)
	srv.Domain = "mx.test"
	srv.TLSConfig = opts.tls
	// The client refuses PLAIN in clear text itself except towards loopback; the server
	// must not refuse it first, or the loopback case could not be tested.
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		// Serve registers the listener with the server only once it runs, so a Close that
		// wins the race would leave it open; closing it here ends Serve either way.
		srv.Close()
		l.Close()
		<-done
	})
	return ts
}

func (ts *testServer) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{srv: ts, conn: c}, nil
}

func (ts *testServer) messages() []received {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]received(nil), ts.msgs...)
}

func (ts *testServer) config() Config {
	return Config{Host: ts.host, Port: ts.port, From: "Meridian <noreply@meridian.test>", Timeout: 10 * time.Second}
}

type session struct {
	srv  *testServer
	conn *smtp.Conn
	user string
	cur  received
}

func (s *session) AuthMechanisms() []string {
	if s.srv.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.srv.user || password != s.srv.pass {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		s.user = username
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.cur = received{from: from, user: s.user, tls: isTLS}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.srv.refuse[to] {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	s.cur.to = append(s.cur.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = b
	s.srv.mu.Lock()
	s.srv.msgs = append(s.srv.msgs, s.cur)
	s.srv.mu.Unlock()
	return nil
}

func (s *session) Reset()        { s.cur = received{} }
func (s *session) Logout() error { return nil }

// selfSignedTLS returns a server certificate for ip and a pool that trusts it.
func selfSignedTLS(t *testing.T, ip string) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "meridian mail test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP(ip)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

func TestSendMessage(t *testing.T) {
	tests := []struct {
		name        string
		to          string
		subject     string
		body        string
		wantTo      string // the raw To header
		wantEncoded bool   // whether the raw Subject must be an RFC 2047 encoded-word
	}{
		{
			name:    "ascii",
			to:      "ada@example.org",
			subject: "Verify your e-mail address",
			body:    "Open this link to verify your address:\nhttps://meridian.test/api/verify?token=abc=def\n",
			wantTo:  "<ada@example.org>",
		},
		{
			name:        "utf-8 subject, name and body",
			to:          "Zoë Müller <zoe@example.org>",
			subject:     "Bestätigen Sie Ihre Adresse – 地図",
			body:        "Grüße aus Zürich.\r\nСпасибо! 🌍\n",
			wantTo:      "=?utf-8?q?Zo=C3=AB_M=C3=BCller?= <zoe@example.org>",
			wantEncoded: true,
		},
		{
			name:        "long non-ASCII subject is folded",
			to:          "ada@example.org",
			subject:     strings.Repeat("Überprüfung der Adresse ", 8) + "Ende",
			body:        "x",
			wantTo:      "<ada@example.org>",
			wantEncoded: true,
		},
		{
			name:    "body needing escapes",
			to:      "ada@example.org",
			subject: "Dots",
			body: ".\n.. leading dots are stuffed by SMTP\nFrom the start of a line\ntrailing space \n" +
				"tab\tand = sign\n" + strings.Repeat("long line ", 30) + "\n\x00nul and lone\rCR",
			wantTo: "<ada@example.org>",
		},
		{
			name:    "empty body",
			to:      "ada@example.org",
			subject: "",
			body:    "",
			wantTo:  "<ada@example.org>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, serverOptions{})
			before := time.Now().Truncate(time.Second)
			if err := New(ts.config()).Send(t.Context(), tt.to, tt.subject, tt.body); err != nil {
				t.Fatal(err)
			}
			msgs := ts.messages()
			if len(msgs) != 1 {
				t.Fatalf("server received %d messages, want 1", len(msgs))
			}
			m := msgs[0]
			if m.from != "noreply@meridian.test" {
				t.Errorf("envelope sender %q", m.from)
			}
			rcpt, _ := netmail.ParseAddress(tt.to)
			if len(m.to) != 1 || m.to[0] != rcpt.Address {
				t.Errorf("envelope recipients %q, want [%s]", m.to, rcpt.Address)
			}
			checkRawLines(t, m.data)

			msg, err := netmail.ReadMessage(strings.NewReader(string(m.data)))
			if err != nil {
				t.Fatal(err)
			}
			h := msg.Header
			for name, want := range map[string]string{
				"From":                      "\"Meridian\" <noreply@meridian.test>",
				"To":                        tt.wantTo,
				"MIME-Version":              "1.0",
				"Content-Type":              "text/plain; charset=utf-8",
				"Content-Transfer-Encoding": "quoted-printable",
			} {
				if got := h.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if _, ok := h["Bcc"]; ok {
				t.Error("message has a Bcc header")
			}
			if to, err := h.AddressList("To"); err != nil || len(to) != 1 || to[0].Name != rcpt.Name || to[0].Address != rcpt.Address {
				t.Errorf("To decodes to %v, %v; want %v", to, err, rcpt)
			}
			date, err := h.Date()
			if err != nil || date.Before(before) || date.After(time.Now()) {
				t.Errorf("Date %q = %v, %v; want the send time", h.Get("Date"), date, err)
			}
			if !regexp.MustCompile(`^<[0-9a-f]{32}@meridian\.test>$`).MatchString(h.Get("Message-ID")) {
				t.Errorf("Message-ID %q", h.Get("Message-ID"))
			}

			rawSubject := h.Get("Subject")
			if isEncoded := strings.HasPrefix(rawSubject, "=?utf-8?q?"); isEncoded != tt.wantEncoded {
				t.Errorf("raw Subject %q: encoded %v, want %v", rawSubject, isEncoded, tt.wantEncoded)
			}
			subject, err := new(mime.WordDecoder).DecodeHeader(rawSubject)
			if err != nil || subject != tt.subject {
				t.Errorf("Subject decodes to %q, %v; want %q", subject, err, tt.subject)
			}

			body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
			if err != nil {
				t.Fatal(err)
			}
			// Every kind of line break travels as CRLF, as SMTP requires.
			want := strings.NewReplacer("\r\n", "\r\n", "\r", "\r\n", "\n", "\r\n").Replace(tt.body)
			if got := strings.TrimSuffix(string(body), "\r\n"); got != strings.TrimSuffix(want, "\r\n") {
				t.Errorf("body decodes to\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// checkRawLines asserts CRLF line endings and lines within the 76 characters that RFC 2047
// section 2 allows lines with encoded-words and RFC 2045 section 6.7 allows quoted-printable.
func checkRawLines(t *testing.T, data []byte) {
	t.Helper()
	s := string(data)
	if !strings.HasSuffix(s, "\r\n") {
		t.Error("message does not end with CRLF")
	}
	for i, line := range strings.Split(strings.TrimSuffix(s, "\r\n"), "\r\n") {
		if strings.ContainsAny(line, "\r\n") {
			t.Errorf("line %d has a bare CR or LF: %q", i, line)
		}
		if len(line) > 76 {
			t.Errorf("line %d is %d characters: %q", i, len(line), line)
		}
	}
}

func TestFoldedHeader(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  string // exact rendering; empty to check only the invariants
	}{
		{name: "short", value: "Verify your address", want: "Subject: Verify your address\r\n"},
		{name: "empty", value: "", want: "Subject: \r\n"},
		{name: "double space kept", value: "a  b", want: "Subject: a  b\r\n"},
		{name: "long words", value: strings.Repeat("word ", 40)},
		{name: "encoded", value: mime.QEncoding.Encode("utf-8", strings.Repeat("Ünïcödé ", 20))},
		{name: "first word too long for the first line", value: strings.Repeat("x", 70) + " tail",
			want: "Subject:\r\n " + strings.Repeat("x", 70) + " tail\r\n"},
		{name: "word longer than any line", value: "a " + strings.Repeat("y", 100) + " b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := foldedHeader("Subject", tt.value)
			if tt.want != "" && got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			// RFC 5322 section 2.2.3: unfolding removes each CRLF that precedes white space.
			if unfolded := strings.ReplaceAll(got, "\r\n ", " "); unfolded != "Subject: "+tt.value+"\r\n" {
				t.Errorf("unfolds to %q", unfolded)
			}
			lines := strings.Split(strings.TrimSuffix(got, "\r\n"), "\r\n")
			for i, line := range lines {
				if i > 0 && strings.TrimSpace(line) == "" {
					t.Errorf("line %d is only white space", i)
				}
				if len(line) > 76 && !strings.Contains(strings.TrimSpace(line), " ") {
					continue // a single word longer than a line cannot be folded
				}
				if len(line) > 76 {
					t.Errorf("line %d is %d characters: %q", i, len(line), line)
				}
			}
		})
	}
}

func TestAuth(t *testing.T) {
	tests := []struct {
		name       string
		serverUser string
		user, pass string
		wantErr    string // substring of the error; empty for success
		wantUser   string
	}{
		{name: "accepted", serverUser: "meridian", user: "meridian", pass: "s3cret", wantUser: "meridian"},
		{name: "wrong password", serverUser: "meridian", user: "meridian", pass: "wrong", wantErr: "535"},
		{name: "server requires auth, none configured", serverUser: "meridian", wantErr: "Please authenticate"},
		{name: "configured, server does not offer AUTH", user: "meridian", pass: "s3cret", wantErr: "does not offer AUTH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, serverOptions{user: tt.serverUser, pass: "s3cret"})
			cfg := ts.config()
			cfg.Username, cfg.Password = tt.user, tt.pass
			err := New(cfg).Send(t.Context(), "ada@example.org", "Hello", "body")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Send error %v, want one mentioning %q", err, tt.wantErr)
				}
				if n := len(ts.messages()); n != 0 {
					t.Fatalf("server received %d messages after a failed auth", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m := ts.messages(); len(m) != 1 || m[0].user != tt.wantUser {
				t.Fatalf("messages %+v, want one from user %q", m, tt.wantUser)
			}
		})
	}
}

func TestStartTLS(t *testing.T) {
	tlsConfig, roots := selfSignedTLS(t, "127.0.0.1")
	_, otherRoots := selfSignedTLS(t, "127.0.0.1")
	tests := []struct {
		name      string
		serverTLS bool
		mode      string
		roots     *x509.CertPool
		user      string // AUTH over the upgraded connection when set
		wantErr   string
		wantTLS   bool
	}{
		{name: "auto upgrades when offered", serverTLS: true, mode: StartTLSAuto, roots: roots, wantTLS: true},
		{name: "empty mode means auto", serverTLS: true, mode: "", roots: roots, wantTLS: true},
		{name: "auto stays in clear when not offered", mode: StartTLSAuto},
		{name: "always upgrades", serverTLS: true, mode: StartTLSAlways, roots: roots, wantTLS: true},
		{name: "always refuses a server without STARTTLS", mode: StartTLSAlways, wantErr: "does not offer STARTTLS"},
		{name: "never ignores the offer", serverTLS: true, mode: StartTLSNever},
		{name: "untrusted certificate fails, no fallback", serverTLS: true, mode: StartTLSAuto, roots: otherRoots, wantErr: "certificate"},
		{name: "auth after upgrade", serverTLS: true, mode: StartTLSAlways, roots: roots, user: "meridian", wantTLS: true},
		{name: "unknown mode", mode: "sometimes", wantErr: "sometimes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := serverOptions{user: tt.user, pass: "s3cret"}
			if tt.serverTLS {
				opts.tls = tlsConfig
			}
			ts := startServer(t, opts)
			cfg := ts.config()
			cfg.StartTLS = tt.mode
			cfg.Username, cfg.Password = tt.user, "s3cret"
			s := New(cfg)
			s.rootCAs = tt.roots
			err := s.Send(t.Context(), "ada@example.org", "Hello", "body")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Send error %v, want one mentioning %q", err, tt.wantErr)
				}
				if n := len(ts.messages()); n != 0 {
					t.Fatalf("server received %d messages", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := ts.messages()
			if len(m) != 1 || m[0].tls != tt.wantTLS || m[0].user != tt.user {
				t.Fatalf("messages %+v, want one with tls=%v user=%q", m, tt.wantTLS, tt.user)
			}
		})
	}
}

// TestPlainAuthNeedsTLSBeyondLoopbackNames documents the net/smtp rule Config.Username
// relies on: a host that is not named localhost, 127.0.0.1 or ::1 gets the password only
// over TLS. 127.0.0.2 is loopback on Linux but not one of those names.
func TestPlainAuthNeedsTLSBeyondLoopbackNames(t *testing.T) {
	const ip = "127.0.0.2"
	if l, err := net.Listen("tcp", ip+":0"); err != nil {
		t.Skipf("%s is not a local address on this system: %v", ip, err)
	} else {
		l.Close()
	}
	tlsConfig, roots := selfSignedTLS(t, ip)
	tests := []struct {
		name    string
		mode    string
		wantErr string
	}{
		{name: "refused in clear", mode: StartTLSNever, wantErr: "unencrypted connection"},
		{name: "sent over STARTTLS", mode: StartTLSAlways},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, serverOptions{listenHost: ip, tls: tlsConfig, user: "meridian", pass: "s3cret"})
			cfg := ts.config()
			cfg.StartTLS = tt.mode
			cfg.Username, cfg.Password = "meridian", "s3cret"
			s := New(cfg)
			s.rootCAs = roots
			err := s.Send(t.Context(), "ada@example.org", "Hello", "body")
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Send error %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestRefusedRecipient(t *testing.T) {
	ts := startServer(t, serverOptions{refuse: []string{"nobody@example.org"}})
	err := New(ts.config()).Send(t.Context(), "nobody@example.org", "Hello", "body")
	var protoErr *textproto.Error
	if !errors.As(err, &protoErr) || protoErr.Code != 550 {
		t.Fatalf("Send error %v, want the server's 550", err)
	}
	if n := len(ts.messages()); n != 0 {
		t.Fatalf("server received %d messages", n)
	}
}

// silentListener accepts connections and never writes, like a server that hangs after the TCP
// handshake. Each accepted connection is announced on the returned channel.
func silentListener(t *testing.T) (*net.TCPAddr, <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 16)
	var conns []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().(*net.TCPAddr), accepted
}

func TestContextStopsSend(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration // Config.Timeout
		cancel  bool          // cancel the caller's context once connected
		want    error
	}{
		{name: "caller cancels", timeout: time.Minute, cancel: true, want: context.Canceled},
		{name: "config timeout", timeout: 100 * time.Millisecond, want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, accepted := silentListener(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s := New(Config{Host: "127.0.0.1", Port: addr.Port, From: "noreply@meridian.test", Timeout: tt.timeout})
			result := make(chan error, 1)
			go func() { result <- s.Send(ctx, "ada@example.org", "Hello", "body") }()
			if tt.cancel {
				<-accepted
				cancel()
			}
			select {
			case err := <-result:
				if !errors.Is(err, tt.want) {
					t.Fatalf("Send error %v, want %v", err, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Send did not return after its context ended")
			}
		})
	}
}

func TestRejectedBeforeAnyIO(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func(*Config)
		to      string
		subject string
		body    string
		want    error
	}{
		{name: "CRLF in recipient", to: "ada@example.org\r\nBcc: eve@example.org", subject: "Hi", want: ErrHeaderInjection},
		{name: "LF in recipient", to: "ada@example.org\nBcc: eve@example.org", subject: "Hi", want: ErrHeaderInjection},
		{name: "CR in recipient", to: "Ada\r <ada@example.org>", subject: "Hi", want: ErrHeaderInjection},
		{name: "CRLF in subject", to: "ada@example.org", subject: "Hi\r\nBcc: eve@example.org", want: ErrHeaderInjection},
		{name: "LF in subject", to: "ada@example.org", subject: "Hi\n\nforged body", want: ErrHeaderInjection},
		{name: "CR in subject", to: "ada@example.org", subject: "Hi\rthere", want: ErrHeaderInjection},
		{name: "not an address", to: "ada at example.org", subject: "Hi", want: ErrInvalidAddress},
		{name: "two recipients", to: "ada@example.org, eve@example.org", subject: "Hi", want: ErrInvalidAddress},
		{name: "non-ASCII address", to: "zoë@example.org", subject: "Hi", want: ErrInvalidAddress},
		{name: "bad sender", cfg: func(c *Config) { c.From = "noreply" }, to: "ada@example.org", subject: "Hi", want: ErrInvalidAddress},
		{name: "line break in sender name", cfg: func(c *Config) { c.From = "\"Meridian\r\nBcc: eve@example.org\" <noreply@meridian.test>" }, to: "ada@example.org", subject: "Hi", want: ErrInvalidAddress},
		{name: "unknown STARTTLS mode", cfg: func(c *Config) { c.StartTLS = "sometimes" }, to: "ada@example.org", subject: "Hi"},
		{name: "invalid UTF-8 body", to: "ada@example.org", subject: "Hi", body: "\xff\xfe"},
		{name: "not configured", cfg: func(c *Config) { c.Host = "" }, to: "ada@example.org", subject: "Hi", want: ErrNotConfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cfg := Config{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, From: "noreply@meridian.test", Timeout: 5 * time.Second}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			err = New(cfg).Send(t.Context(), tt.to, tt.subject, tt.body)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Send error %v, want %v", err, tt.want)
			}
			// The listener's queue is first in, first out: if Send had connected, its
			// connection would be accepted before this marker.
			marker, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer marker.Close()
			first, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			if first.RemoteAddr().String() != marker.LocalAddr().String() {
				t.Fatal("Send opened a connection before rejecting its input")
			}
		})
	}
}

func TestEnabledAndDefaults(t *testing.T) {
	tests := []struct {
		cfg         Config
		wantEnabled bool
		wantPort    int
		wantMode    string
		wantTimeout time.Duration
	}{
		{Config{}, false, DefaultPort, StartTLSAuto, DefaultTimeout},
		{Config{Host: "smtp.example.org"}, true, DefaultPort, StartTLSAuto, DefaultTimeout},
		{Config{Host: "smtp.example.org", Port: 25, StartTLS: StartTLSNever, Timeout: time.Second}, true, 25, StartTLSNever, time.Second},
	}
	for _, tt := range tests {
		s := New(tt.cfg)
		if s.Enabled() != tt.wantEnabled || s.cfg.Port != tt.wantPort || s.cfg.StartTLS != tt.wantMode || s.cfg.Timeout != tt.wantTimeout {
			t.Errorf("New(%+v): enabled %v port %d mode %q timeout %v", tt.cfg, s.Enabled(), s.cfg.Port, s.cfg.StartTLS, s.cfg.Timeout)
		}
	}
}
