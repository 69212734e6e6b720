package conformance

import (
	"bytes"
	"io"
	"log"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// mailbox is a real SMTP server (go-smtp) that keeps every message the server under test sends.
type mailbox struct {
	srv  *smtp.Server
	port int
	mu   sync.Mutex
	msgs []*mail.Message
}

func startMailbox() (*mailbox, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mb := &mailbox{port: l.Addr().(*net.TCPAddr).Port}
	mb.srv = smtp.NewServer(mb)
	mb.srv.Domain = "mailbox.test"
	mb.srv.ReadTimeout, mb.srv.WriteTimeout = 10*time.Second, 10*time.Second
	mb.srv.ErrorLog = log.New(io.Discard, "", 0)
	go func() { _ = mb.srv.Serve(l) }()
	return mb, nil
}

func (mb *mailbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &mailSession{mb: mb}, nil }

type mailSession struct{ mb *mailbox }

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *mailSession) Reset()                               {}
func (s *mailSession) Logout() error                        { return nil }
func (s *mailSession) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		return err
	}
	m.Body = bytes.NewReader(body)
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, m)
	s.mb.mu.Unlock()
	return nil
}

// waitFor returns the body of the newest message to address, waiting up to 10 s for it.
func (mb *mailbox) waitFor(t *testing.T, address string, after int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mb.mu.Lock()
		for i := len(mb.msgs) - 1; i >= after; i-- {
			if strings.Contains(mb.msgs[i].Header.Get("To"), address) {
				b, _ := io.ReadAll(mb.msgs[i].Body)
				mb.msgs[i].Body = bytes.NewReader(b)
				mb.mu.Unlock()
				return string(b)
			}
		}
		mb.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no mail to %s", address)
	return ""
}

func (mb *mailbox) count() int {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return len(mb.msgs)
}

var verificationCode = regexp.MustCompile(`Verification code: ([A-Za-z0-9_-]{43})`)
