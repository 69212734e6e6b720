package ai

import (
	"context"
	"errors"
	"net/http"

	"meridian/internal/apperr"
	"meridian/internal/auth"
)

// Availability is what AI Availability tells a caller: whether the assistant can be used (AI
// on and a chat provider configured) and which of its operations this caller may use. It reads
// settings only; no provider is called.
type Availability struct {
	Available                                     bool
	Provider                                      *string // nil for anonymous callers and when none is configured
	MapChat, MapGeneration, DatasetChat, Metadata bool
}

// Availability answers for any caller, anonymous included.
func (s *Service) Availability(ctx context.Context, p auth.Principal) (Availability, error) {
	st, err := s.Setup(ctx)
	if err != nil {
		return Availability{}, err
	}
	on := st.Available()
	out := Availability{Available: on,
		MapChat: on && p.Can(auth.CapUseAIChat), MapGeneration: on && p.Can(auth.CapUseAIChat),
		DatasetChat: on && p.Can(auth.CapUseAIChat), Metadata: on && p.Can(auth.CapEditMetadata)}
	if on && !p.Anonymous() {
		out.Provider = st.Provider
	}
	return out, nil
}

// Probe is the outcome of one test call to a provider.
type Probe struct {
	Configured bool
	OK         *bool
	Status     *int
	Error      *string
}

// Status is the AI status an admin sees: the setup, whether records have embeddings, and the
// outcome of test calls when asked for.
type Status struct {
	Setup
	HasEmbeddings    bool
	Chat, Embeddings *Probe
}

// Status reads the setup and, with probe, calls each configured provider once with a tiny
// request (nothing is sent while AI is off).
func (s *Service) Status(ctx context.Context, probe bool) (Status, error) {
	st, err := s.Setup(ctx)
	if err != nil {
		return Status{}, err
	}
	out := Status{Setup: st}
	if out.HasEmbeddings, err = s.HasEmbeddings(ctx, st); err != nil {
		return out, err
	}
	if !probe {
		return out, nil
	}
	out.Chat = &Probe{Configured: st.ChatConfigured()}
	out.Embeddings = &Probe{Configured: st.EmbeddingsConfigured()}
	switch {
	case !st.Enabled:
		off := "the AI features are switched off (setting ai_enabled): nothing was sent"
		out.Chat.Error, out.Embeddings.Error = &off, &off
		return out, nil
	}
	if st.ChatConfigured() {
		callCtx, cancel := s.callContext(ctx)
		_, err := s.chatModel(st).complete(callCtx, Turn{System: "Answer with one word.", MaxTokens: 8,
			Messages: []Message{{Role: RoleUser, Text: "ping"}}}, func(string) {})
		cancel()
		out.Chat.set(providerError(ctx, err))
	} else {
		out.Chat.OK, out.Chat.Error = ptr(false), &st.Problem // cannot work: nothing to call
	}
	if st.EmbeddingsConfigured() {
		callCtx, cancel := s.callContext(ctx)
		vecs, _, err := s.embeddingModel(st).embed(callCtx, []string{"ping"})
		cancel()
		if err == nil && st.EmbeddingDimensions != nil && len(vecs[0]) != *st.EmbeddingDimensions {
			err = wrongDims(len(vecs[0]), *st.EmbeddingDimensions)
		}
		out.Embeddings.set(embedFailure(ctx, err))
	} else {
		out.Embeddings.OK, out.Embeddings.Error = ptr(false), &st.EmbedNote
	}
	return out, nil
}

// set records a probe's outcome: ok, or the status the caller would get and why.
func (p *Probe) set(err error) {
	ok := err == nil
	p.OK = &ok
	if ok {
		return
	}
	status := http.StatusBadGateway
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Kind == apperr.KindUnavailable {
		status = http.StatusServiceUnavailable
	}
	msg := detailOf(err)
	p.Status, p.Error = &status, &msg
}
