package ai

import (
	"context"
	"strings"
	"sync"
	"time"

	"meridian/internal/apperr"
	"meridian/internal/settings"
)

// Provider kinds. llm_provider names one of them, or an OpenAI-compatible server by its usual
// name (azure_openai, ollama, vllm, lmstudio, llamacpp, openai_compatible).
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
)

// kindOf is the API a provider name speaks: KindOpenAI, KindAnthropic, or "" when unknown.
func kindOf(provider string) string {
	switch strings.ToLower(strings.TrimSpace(provider)) {
	case "anthropic", "claude":
		return KindAnthropic
	case "openai", "azure", "azure_openai", "ollama", "vllm", "lmstudio", "lm_studio", "llamacpp", "llama_cpp",
		"openai_compatible", "openai-compatible", "localai", "together", "groq", "mistral", "openrouter":
		return KindOpenAI
	}
	return ""
}

// Setup is what the settings and the keys make of the AI features now: which provider and model
// answer chat, which embed records, and when either cannot, why.
type Setup struct {
	settings.AI
	Kind      string // KindOpenAI or KindAnthropic; "" when no provider is usable
	ChatKey   string
	EmbedKey  string
	EmbedURL  string // the embeddings endpoint ("" with EmbedProblem == "": OpenAI's own)
	Problem   string // why chat cannot be used; "" when it can
	EmbedNote string // why embeddings cannot be used; "" when they can
}

// ChatConfigured reports whether a chat provider is fully configured (whether or not AI is on).
func (s Setup) ChatConfigured() bool { return s.Problem == "" }

// Available reports whether the chat features may be used now: on, and configured.
func (s Setup) Available() bool { return s.Enabled && s.ChatConfigured() }

// EmbeddingsConfigured reports whether records and queries can be embedded.
func (s Setup) EmbeddingsConfigured() bool { return s.EmbedNote == "" }

// SemanticAvailable reports whether semantic search may run: AI on, semantic search on, an
// embedding model with its dimension count.
func (s Setup) SemanticAvailable() bool {
	return s.Enabled && s.SemanticSearch && s.EmbeddingsConfigured() && s.EmbeddingDimensions != nil
}

// setupOf reads the settings and keys. keys are the provider keys in use (environment first,
// then the sealed settings).
func setupOf(a settings.AI, keys map[string]string) Setup {
	s := Setup{AI: a, ChatKey: keys["ai"]}
	provider, model := deref(a.Provider), deref(a.Model)
	s.Kind = kindOf(provider)
	switch {
	case provider == "":
		s.Problem = "no AI provider is configured (setting llm_provider)"
	case s.Kind == "":
		s.Problem = "llm_provider " + provider + " is not a provider this server speaks to: use openai (or an OpenAI-compatible server) or anthropic"
	case model == "":
		s.Problem = "no chat model is configured (setting llm_model)"
	case s.Kind == KindOpenAI && provider != KindOpenAI && a.OpenAIBaseURL == "":
		s.Problem = "llm_provider " + provider + " needs the address of its OpenAI-compatible API (setting openai_base_url)"
	case s.ChatKey == "" && (s.Kind == KindAnthropic || a.OpenAIBaseURL == ""):
		s.Problem = "no AI provider key is configured (AI_API_KEY or the setting provider_keys.ai)"
	}
	s.embedding(keys)
	return s
}

// embedding resolves the embeddings endpoint and its key. The chat provider's key goes only to
// the chat provider's own endpoint: an embedding server elsewhere gets the embedding key, or
// none (local servers need none).
func (s *Setup) embedding(keys map[string]string) {
	own := s.Kind == KindOpenAI && (s.EmbeddingBaseURL == "" || strings.TrimRight(s.EmbeddingBaseURL, "/") == strings.TrimRight(s.OpenAIBaseURL, "/"))
	s.EmbedURL, s.EmbedKey = s.EmbeddingBaseURL, keys["embedding"]
	if own {
		s.EmbedURL = s.OpenAIBaseURL
		if s.EmbedKey == "" {
			s.EmbedKey = s.ChatKey
		}
	}
	switch {
	case deref(s.EmbeddingModel) == "":
		s.EmbedNote = "no embedding model is configured (setting embedding_model)"
	case s.EmbedURL == "" && s.Kind != KindOpenAI:
		s.EmbedNote = "Anthropic has no embeddings API: set embedding_base_url to an OpenAI-compatible embeddings server"
	case s.EmbedURL == "" && s.EmbedKey == "":
		s.EmbedNote = "no key for OpenAI's embeddings API (EMBEDDING_API_KEY, AI_API_KEY or the provider key settings)"
	}
}

// Setup reads the AI settings and keys now.
func (s *Service) Setup(ctx context.Context) (Setup, error) {
	s.setup.mu.Lock()
	k, gen := s.setup.kept, s.setup.gen
	s.setup.mu.Unlock()
	if k != nil && time.Since(k.at) < setupMaxAge {
		return k.st, nil
	}
	a, err := s.Settings.AI(ctx)
	if err != nil {
		return Setup{}, err
	}
	keys, err := s.Keys(ctx)
	if err != nil {
		return Setup{}, err
	}
	st := setupOf(a, keys)
	s.setup.mu.Lock()
	if s.setup.gen == gen { // not forgotten while it was read
		s.setup.kept = &keptSetup{st: st, at: time.Now()}
	}
	s.setup.mu.Unlock()
	return st, nil
}

// setupMaxAge bounds how long a server uses the setup it read. Every semantic search, chat and
// AI Availability (which the web UI asks on every page) needs it, and reading it took two round
// trips and the opening of the sealed keys each time. A change saved on this server shows at once
// (Forget, from settings.Admin.Changed), on the other replicas within this time, as the items
// page bound does (settings.ItemsPageMax).
const setupMaxAge = time.Second

type keptSetup struct {
	st Setup
	at time.Time
}

type setupCache struct {
	mu   sync.Mutex
	kept *keptSetup
	gen  uint64 // Forget calls so far
}

// Forget makes the next Setup read the settings and keys again: they were just saved.
func (s *Service) Forget() {
	s.setup.mu.Lock()
	defer s.setup.mu.Unlock()
	s.setup.kept = nil
	s.setup.gen++
}

// ready is the setup of a call that needs chat: 503 saying why when AI is off or not configured.
// Nothing reaches a provider past a refusal here.
func (s *Service) ready(ctx context.Context) (Setup, error) {
	st, err := s.Setup(ctx)
	if err != nil {
		return st, err
	}
	switch {
	case !st.Enabled:
		return st, &apperr.Error{Kind: apperr.KindUnavailable, Title: "AI disabled",
			Detail: "the AI features are switched off on this deployment (setting ai_enabled)"}
	case !st.ChatConfigured():
		return st, &apperr.Error{Kind: apperr.KindUnavailable, Title: "AI not configured", Detail: st.Problem}
	}
	return st, nil
}

// chatModel is the chat model of a setup.
func (s *Service) chatModel(st Setup) chatter {
	if st.Kind == KindAnthropic {
		return newAnthropicChat(s.HTTP, st.AnthropicBaseURL, st.ChatKey, deref(st.Model))
	}
	return newOpenAIChat(s.HTTP, st.OpenAIBaseURL, st.ChatKey, deref(st.Model))
}

// embeddingModel is the embedding model of a setup: the client made for the last setup while
// its address, key and model stay. Every search embeds its text, and making the SDK's client
// makes each of its services with their own options, a tenth of the call's allocations.
func (s *Service) embeddingModel(st Setup) embedder {
	want := embedderFor{st.EmbedURL, st.EmbedKey, deref(st.EmbeddingModel)}
	s.embedder.mu.Lock()
	defer s.embedder.mu.Unlock()
	if s.embedder.model == nil || s.embedder.made != want {
		s.embedder.made, s.embedder.model = want, newOpenAIEmbedder(s.HTTP, want.url, want.key, want.model)
	}
	return s.embedder.model
}

// keptEmbedder is the embedding client of the setup it was made for.
type keptEmbedder struct {
	mu    sync.Mutex
	made  embedderFor
	model embedder
}

// embedderFor is what an embedding client is made of: address, key and model.
type embedderFor struct{ url, key, model string }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
