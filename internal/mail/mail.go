// Package mail sends Meridian's transactional mail, such as e-mail address verification, to an
// SMTP submission server.
//
// Every message is a single text/plain part in UTF-8, quoted-printable encoded, so any body
// survives servers that are not 8BITMIME-clean and no line exceeds the limits of RFC 5322
// section 2.1.1.
package mail

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"net/smtp"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// STARTTLS modes of Config.StartTLS.
const (
	// StartTLSAuto upgrades when the server offers STARTTLS. An active attacker can strip the
	// offer, so use StartTLSAlways whenever the server is known to support it.
	StartTLSAuto = "auto"
	// StartTLSAlways refuses to send unless the connection is upgraded.
	StartTLSAlways = "always"
	// StartTLSNever sends in clear, for a relay on the same host or a trusted network.
	StartTLSNever = "never"
)

// Defaults for a zero Config.Port and Config.Timeout.
const (
	// DefaultPort is the message submission port of RFC 6409.
	DefaultPort = 587
	// DefaultTimeout bounds one whole delivery, from dial to QUIT.
	DefaultTimeout = 30 * time.Second
)

var (
	// ErrNotConfigured reports a Send on a Sender without a host.
	ErrNotConfigured = errors.New("mail: no SMTP host configured")
	// ErrHeaderInjection reports a recipient or subject containing CR or LF, which would let
	// the caller's input add headers or end the header block.
	ErrHeaderInjection = errors.New("mail: line break in a header value")
	// ErrInvalidAddress reports a sender or recipient that is not a plain ASCII RFC 5322
	// address. Internationalised addresses would need SMTPUTF8 (RFC 6531), which is not
	// implemented.
	ErrInvalidAddress = errors.New("mail: invalid address")
)

// Config says where and how to submit mail.
type Config struct {
	// Host is the SMTP server; empty disables mail.
	Host string
	// Port defaults to DefaultPort.
	Port int
	// Username enables AUTH PLAIN. The standard library refuses to send the password over a
	// connection that is neither TLS nor to localhost, 127.0.0.1 or ::1, so with a remote
	// server authentication needs STARTTLS.
	Username, Password string
	// From is the sender, "noreply@example.org" or "Meridian <noreply@example.org>"; its
	// address is also the envelope sender and the domain of Message-IDs.
	From string
	// StartTLS is StartTLSAuto (the default when empty), StartTLSAlways or StartTLSNever.
	StartTLS string
	// Timeout bounds one delivery; it defaults to DefaultTimeout.
	Timeout time.Duration
}

// Sender submits messages to the configured server, one connection per message. It is safe
// for concurrent use.
type Sender struct {
	cfg Config
	// rootCAs verifies the server certificate; nil means the system roots. Tests set it to
	// trust their own server.
	rootCAs *x509.CertPool
}

// New returns a Sender for cfg. It does not contact the server; a bad configuration surfaces
// on the first Send.
func New(cfg Config) *Sender {
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.StartTLS == "" {
		cfg.StartTLS = StartTLSAuto
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Sender{cfg: cfg}
}

// Enabled reports whether a server is configured; callers skip mail features when it is not.
func (s *Sender) Enabled() bool { return s.cfg.Host != "" }

// Send delivers one plain-text message to a single recipient. to may carry a display name
// ("Ada <ada@example.org>"). Line breaks in textBody may be LF, CRLF or CR; they arrive as
// CRLF. The send stops when ctx ends or Config.Timeout passes, whichever comes first.
func (s *Sender) Send(ctx context.Context, to, subject, textBody string) error {
	if !s.Enabled() {
		return ErrNotConfigured
	}
	// Checked before any parsing: net/mail would reject some line breaks, but not for the
	// subject, and the caller deserves the same error for both.
	if strings.ContainsAny(to, "\r\n") || strings.ContainsAny(subject, "\r\n") {
		return ErrHeaderInjection
	}
	switch s.cfg.StartTLS {
	case StartTLSAuto, StartTLSAlways, StartTLSNever:
	default:
		return fmt.Errorf("mail: StartTLS mode %q is not auto, always or never", s.cfg.StartTLS)
	}
	from, err := parseAddress("sender", s.cfg.From)
	if err != nil {
		return err
	}
	rcpt, err := parseAddress("recipient", to)
	if err != nil {
		return err
	}
	if !utf8.ValidString(subject) || !utf8.ValidString(textBody) {
		return errors.New("mail: subject or body is not valid UTF-8")
	}
	msg, err := buildMessage(from, rcpt, subject, textBody, time.Now())
	if err != nil {
		return err
	}
	return s.deliver(ctx, from.Address, rcpt.Address, msg)
}

// parseAddress accepts one RFC 5322 mailbox; role names it in the error, because a bad sender
// is a configuration mistake and a bad recipient is the user's.
func parseAddress(role, s string) (*netmail.Address, error) {
	a, err := netmail.ParseAddress(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: %v", ErrInvalidAddress, role, s, err)
	}
	for _, r := range a.Address {
		if r >= utf8.RuneSelf {
			return nil, fmt.Errorf("%w: %s %q is not ASCII", ErrInvalidAddress, role, s)
		}
	}
	return a, nil
}

// buildMessage renders the RFC 5322 message with CRLF line endings.
func buildMessage(from, to *netmail.Address, subject, body string, now time.Time) ([]byte, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]

	var b strings.Builder
	header := func(name, value string) {
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(value)
		b.WriteString("\r\n")
	}
	// Address.String encodes non-ASCII display names with RFC 2047 itself.
	header("From", from.String())
	header("To", to.String())
	b.WriteString(foldedHeader("Subject", mime.QEncoding.Encode("utf-8", subject)))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id)+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")

	// In text mode the writer turns every LF, CRLF and CR into CRLF and keeps lines under the
	// 76 characters of RFC 2045 section 6.7.
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(body)); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(b.String(), "\r\n") {
		b.WriteString("\r\n")
	}
	return []byte(b.String()), nil
}

// foldedHeader renders "name: value", inserting CRLF before spaces so that lines stay within
// the 78 characters RFC 5322 section 2.1.1 recommends (and the 76 of RFC 2047 section 2 for
// lines with encoded-words); a long encoded subject would otherwise be one line of any length.
// The space after the colon is a folding point too, since one encoded-word may take 75
// characters. Folding never happens before an empty word, which would leave a line of only
// white space (forbidden by section 3.2.2).
func foldedHeader(name, value string) string {
	const limit = 76
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte(':')
	line := len(name) + 1
	for w := range strings.SplitSeq(value, " ") {
		if w != "" && line+1+len(w) > limit {
			b.WriteString("\r\n")
			line = 0
		}
		b.WriteByte(' ')
		b.WriteString(w)
		line += 1 + len(w)
	}
	return b.String() + "\r\n"
}

// deliver runs one SMTP dialogue. net/smtp knows nothing of contexts, so the context is
// enforced on the connection: its deadline becomes the connection deadline, and cancellation
// moves the deadline into the past, which fails the blocked read or write at once.
func (s *Sender) deliver(ctx context.Context, from, to string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()

	addr := net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("mail: connect to %s: %w: %w", addr, ctx.Err(), err)
		}
		return fmt.Errorf("mail: connect to %s: %w", addr, err)
	}
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return fmt.Errorf("mail: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	err = s.converse(conn, from, to, msg)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Only the context sets deadlines, so it is ending; the I/O may notice a moment
		// before the context's own timer does, and the context's error is the useful one.
		<-ctx.Done()
	}
	if err != nil && ctx.Err() != nil {
		// The I/O error is only "i/o timeout"; the context says why.
		return fmt.Errorf("mail: send via %s: %w: %w", addr, ctx.Err(), err)
	}
	if err != nil {
		return fmt.Errorf("mail: send via %s: %w", addr, err)
	}
	return nil
}

func (s *Sender) converse(conn net.Conn, from, to string, msg []byte) error {
	c, err := smtp.NewClient(conn, s.cfg.Host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()

	if err := c.Hello(helloName()); err != nil {
		return err
	}
	if s.cfg.StartTLS != StartTLSNever {
		offered, _ := c.Extension("STARTTLS")
		switch {
		case offered:
			// A failed handshake is an error even in auto mode: falling back to clear text
			// after an offer is exactly what an attacker in the middle would want.
			err := c.StartTLS(&tls.Config{ServerName: s.cfg.Host, RootCAs: s.rootCAs, MinVersion: tls.VersionTLS12})
			if err != nil {
				return fmt.Errorf("starttls: %w", err)
			}
		case s.cfg.StartTLS == StartTLSAlways:
			return errors.New("server does not offer STARTTLS")
		}
	}
	if s.cfg.Username != "" {
		// net/smtp would send AUTH even when it is not offered; a server that does not
		// offer it cannot use the password, so it is not sent.
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("server does not offer AUTH")
		}
		if err := c.Auth(smtp.PlainAuth("", s.cfg.Username, s.cfg.Password, s.cfg.Host)); err != nil {
			return fmt.Errorf("auth: %w", err)
		}
	}
	if err := c.Mail(from); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	// The server has accepted the message once DATA is answered; a failing QUIT cannot
	// un-send it, and reporting an error would invite a duplicate.
	_ = c.Quit()
	return nil
}

// helloName is the EHLO argument. Some servers reject "localhost", net/smtp's default, so the
// machine's host name is used when it has one.
func helloName() string {
	if h, err := os.Hostname(); err == nil && h != "" && !strings.ContainsAny(h, "\r\n ") {
		return h
	}
	return "localhost"
}
