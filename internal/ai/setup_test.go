package ai

import (
	"strings"
	"testing"

	"meridian/internal/settings"
)

// TestSetupSaysWhyNot: what the settings and keys make of the AI features, and when chat or
// embeddings cannot be used, the reason naming the setting to change.
func TestSetupSaysWhyNot(t *testing.T) {
	s := func(v string) *string { return &v }
	dims := 384
	for _, c := range []struct {
		name       string
		ai         settings.AI
		keys       map[string]string
		chat       string // "" usable, else a part of the problem
		embed      string // "" usable, else a part of the note
		kind       string
		embedURL   string
		embedKeyIs string
	}{
		{"nothing", settings.AI{Enabled: true}, nil, "llm_provider", "embedding_model", "", "", ""},
		{"unknown provider", settings.AI{Provider: s("watson"), Model: s("m")}, map[string]string{"ai": "k"}, "not a provider", "embedding_model", "", "", ""},
		{"no model", settings.AI{Provider: s("openai")}, map[string]string{"ai": "k"}, "llm_model", "embedding_model", KindOpenAI, "", "k"},
		{"ollama without its address", settings.AI{Provider: s("ollama"), Model: s("llama3")}, nil, "openai_base_url", "embedding_model", KindOpenAI, "", ""},
		{"ollama keyless", settings.AI{Provider: s("ollama"), Model: s("llama3"), OpenAIBaseURL: "http://gpu:11434/v1/",
			EmbeddingModel: s("nomic"), EmbeddingDimensions: &dims}, nil, "", "", KindOpenAI, "http://gpu:11434/v1/", ""},
		{"openai without a key", settings.AI{Provider: s("openai"), Model: s("gpt")}, nil, "AI_API_KEY", "embedding_model", KindOpenAI, "", ""},
		{"openai embeds with the chat key", settings.AI{Provider: s("openai"), Model: s("gpt"), EmbeddingModel: s("e")},
			map[string]string{"ai": "chat-key"}, "", "", KindOpenAI, "", "chat-key"},
		{"anthropic without a key", settings.AI{Provider: s("anthropic"), Model: s("claude")}, nil, "AI_API_KEY", "embedding_model", KindAnthropic, "", ""},
		{"anthropic has no embeddings", settings.AI{Provider: s("anthropic"), Model: s("claude"), EmbeddingModel: s("e")},
			map[string]string{"ai": "k"}, "", "embedding_base_url", KindAnthropic, "", ""},
		{"anthropic's key stays with anthropic", settings.AI{Provider: s("anthropic"), Model: s("claude"), EmbeddingModel: s("e"),
			EmbeddingBaseURL: "http://embed:8080/v1/"}, map[string]string{"ai": "anthropic-key"}, "", "", KindAnthropic, "http://embed:8080/v1/", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := setupOf(c.ai, c.keys)
			if (c.chat == "") != st.ChatConfigured() || !strings.Contains(st.Problem, c.chat) {
				t.Fatalf("chat problem %q, want one naming %q", st.Problem, c.chat)
			}
			if (c.embed == "") != st.EmbeddingsConfigured() || !strings.Contains(st.EmbedNote, c.embed) {
				t.Fatalf("embedding note %q, want one naming %q", st.EmbedNote, c.embed)
			}
			if st.Kind != c.kind || st.EmbedURL != c.embedURL || st.EmbedKey != c.embedKeyIs {
				t.Fatalf("kind %q url %q key %q", st.Kind, st.EmbedURL, st.EmbedKey)
			}
		})
	}
}

// TestEmbeddingClientKeptPerSetup: the embedding client is made once for an address, key and
// model, and again when any of them changes.
func TestEmbeddingClientKeptPerSetup(t *testing.T) {
	s := &Service{HTTP: NewHTTPClient()}
	model := func(m string) *string { return &m }
	st := Setup{EmbedURL: "http://embed.example/v1/", EmbedKey: "k1", AI: settings.AI{EmbeddingModel: model("m1")}}
	first := s.embeddingModel(st)
	if s.embeddingModel(st) != first {
		t.Fatal("the same setup made a new client")
	}
	for name, changed := range map[string]Setup{
		"address": {EmbedURL: "http://other.example/v1/", EmbedKey: "k1", AI: settings.AI{EmbeddingModel: model("m1")}},
		"key":     {EmbedURL: st.EmbedURL, EmbedKey: "k2", AI: settings.AI{EmbeddingModel: model("m1")}},
		"model":   {EmbedURL: st.EmbedURL, EmbedKey: "k1", AI: settings.AI{EmbeddingModel: model("m2")}},
	} {
		if s.embeddingModel(changed) == first {
			t.Errorf("another %s kept the client", name)
		}
		if s.embeddingModel(st) == first {
			t.Errorf("back from another %s, the old client was kept", name)
		}
		first = s.embeddingModel(st)
	}
}
