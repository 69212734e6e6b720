package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"meridian/internal/apperr"
)

// The conversation as both provider APIs carry it. Each provider's client (openai.go,
// anthropic.go) maps it to its own wire format through the provider's SDK.

// Role is who said a message.
type Role string

// Roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool's result, answering the assistant's call CallID
)

// Message is one message of a conversation.
type Message struct {
	Role   Role
	Text   string
	Calls  []ToolCall // the assistant's tool calls
	CallID string     // the call a tool result answers
	Failed bool       // the tool result is an error
}

// ToolCall is a tool the assistant asked to run, with its JSON arguments.
type ToolCall struct {
	ID, Name string
	Args     json.RawMessage
}

// ToolSpec describes a tool to the model: its JSON Schema object properties.
type ToolSpec struct {
	Name, Description string
	Properties        map[string]any
	Required          []string
}

// Turn is one request to the model.
type Turn struct {
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int64
}

// Answer is the model's reply to a turn and the tokens it cost.
type Answer struct {
	Text   string
	Calls  []ToolCall
	Tokens int64
}

// chatter is a chat model behind one provider API. onText hears the reply's text as it comes.
type chatter interface {
	complete(ctx context.Context, t Turn, onText func(string)) (Answer, error)
}

// embedder is an embedding model behind the OpenAI-compatible embeddings API.
type embedder interface {
	embed(ctx context.Context, texts []string) ([][]float32, int64, error)
}

// defaultMaxTokens bounds one reply when the quota does not bound it tighter.
const defaultMaxTokens = 2048

// estimateTokens is what a call costs when the provider reports no usage (some OpenAI-compatible
// servers do not): about four characters a token, as the providers' own rule of thumb says.
func estimateTokens(t Turn, a Answer) int64 {
	n := utf8.RuneCountInString(t.System) + utf8.RuneCountInString(a.Text)
	for _, m := range t.Messages {
		n += utf8.RuneCountInString(m.Text)
		for _, c := range m.Calls {
			n += len(c.Args)
		}
	}
	for _, c := range a.Calls {
		n += len(c.Args)
	}
	return int64(math.Ceil(float64(n) / 4))
}

// errCutStream is a provider stream that ended before the reply did (the connection closed
// without the provider's end of message).
var errCutStream = errors.New("the stream ended before the reply was complete")

// providerError turns what a provider call failed with into the problem the caller gets:
// 503 (with the provider's Retry-After) when the provider is rate limited or overloaded, 502
// otherwise, with a detail that says what went wrong without the provider's whole answer. A
// call cancelled because the client went away stays the context's error.
func providerError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	status, message, header := 0, "", http.Header(nil)
	var oe *openai.Error
	var ae *anthropic.Error
	switch {
	case errors.As(err, &oe):
		status, message = oe.StatusCode, oe.Message
		if oe.Response != nil {
			header = oe.Response.Header
		}
	case errors.As(err, &ae):
		status, message = ae.StatusCode, ae.Message
		if ae.Response != nil {
			header = ae.Response.Header
		}
	}
	message = clip(strings.TrimSpace(message), 200)
	var ne net.Error
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == 529:
		return &apperr.Error{Kind: apperr.KindUnavailable, Title: "AI provider unavailable", Err: err,
			RetryAfter: retryAfter(header), Detail: fmt.Sprintf(
				"the AI provider is rate limited or overloaded (HTTP %d%s); retry later", status, colon(message))}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return apperr.Wrap(apperr.KindUpstream, err, fmt.Sprintf(
			"the AI provider refused the configured key (HTTP %d%s): check the AI provider key (AI_API_KEY or the setting provider_keys.ai)", status, colon(message)))
	case status == http.StatusNotFound:
		return apperr.Wrap(apperr.KindUpstream, err, fmt.Sprintf(
			"the AI provider does not know the configured model or address (HTTP 404%s): check llm_model and the provider's base URL", colon(message)))
	case status > 0:
		return apperr.Wrap(apperr.KindUpstream, err, fmt.Sprintf("the AI provider failed (HTTP %d%s)", status, colon(message)))
	case errors.Is(err, errNotEmbeddings):
		return apperr.Wrap(apperr.KindUpstream, err, "the AI provider answered something that is not an embedding: "+clip(err.Error(), 200))
	case errors.Is(err, errCutStream):
		return apperr.Wrap(apperr.KindUpstream, err, "the AI provider's answer broke off: "+errCutStream.Error())
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return apperr.Wrap(apperr.KindUpstream, err, "the AI provider did not answer in time")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apperr.Wrap(apperr.KindUpstream, err, "the AI provider closed the connection before its answer was complete")
	case errors.As(err, &ne):
		return apperr.Wrap(apperr.KindUpstream, err, "the AI provider could not be reached: "+clip(err.Error(), 200))
	}
	return apperr.Wrap(apperr.KindUpstream, err, "the AI provider's answer could not be read: "+clip(err.Error(), 200))
}

func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// retryAfter is the provider's Retry-After (seconds), else a short default.
func retryAfter(h http.Header) time.Duration {
	if h != nil {
		if n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && n > 0 {
			return time.Duration(min(n, 3600)) * time.Second
		}
	}
	return 10 * time.Second
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// unit scales v to length 1 (cosine similarity is then a dot product); a zero vector stays.
func unit(v []float64) []float32 {
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	n := math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(x / n)
	}
	return out
}
