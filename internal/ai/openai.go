package ai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIChat is a chat model behind the OpenAI chat-completions API: OpenAI itself, Azure's
// OpenAI-compatible endpoint, Ollama, vLLM, LM Studio, llama.cpp servers.
type openAIChat struct {
	client openai.Client
	model  string
	// official: the endpoint is OpenAI's own, whose newer models take max_completion_tokens;
	// compatible servers know max_tokens.
	official bool
}

// openAIOptions are the client options of an OpenAI-compatible endpoint. No retries: a failure
// reaches the caller at once as 502/503, and the caller decides whether to try again.
func openAIOptions(hc *http.Client, baseURL, key string) []option.RequestOption {
	opts := []option.RequestOption{option.WithHTTPClient(hc), option.WithMaxRetries(0), option.WithBaseURL(baseURL)}
	// Local servers need no key; an empty Authorization header is not sent for them.
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return opts
}

func newOpenAIChat(hc *http.Client, baseURL, key, model string) openAIChat {
	official := baseURL == ""
	if official {
		baseURL = openAIDefaultURL
	}
	return openAIChat{client: openai.NewClient(openAIOptions(hc, baseURL, key)...), model: model, official: official}
}

// openAIDefaultURL is OpenAI's own API.
const openAIDefaultURL = "https://api.openai.com/v1/"

func (o openAIChat) complete(ctx context.Context, t Turn, onText func(string)) (Answer, error) {
	params := openai.ChatCompletionNewParams{Model: o.model, Messages: openAIMessages(t),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
	limit := t.MaxTokens
	if limit <= 0 {
		limit = defaultMaxTokens
	}
	if o.official {
		params.MaxCompletionTokens = openai.Int(limit)
	} else {
		params.MaxTokens = openai.Int(limit)
	}
	for _, tool := range t.Tools {
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: tool.Name, Description: openai.String(tool.Description),
			Parameters: shared.FunctionParameters{"type": "object", "properties": tool.Properties, "required": nonNil(tool.Required)}}))
	}
	stream := o.client.Chat.Completions.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }() // the answer is read; a failed close changes nothing
	var a Answer
	type partial struct {
		id, name string
		args     []byte
	}
	calls := map[int64]*partial{}
	finished := false
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Usage.TotalTokens > 0 {
			a.Tokens = chunk.Usage.TotalTokens
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				a.Text += c.Delta.Content
				onText(c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				p := calls[tc.Index]
				if p == nil {
					p = &partial{}
					calls[tc.Index] = p
				}
				if tc.ID != "" {
					p.id = tc.ID
				}
				if tc.Function.Name != "" {
					p.name = tc.Function.Name
				}
				p.args = append(p.args, tc.Function.Arguments...)
			}
			finished = finished || c.FinishReason != ""
		}
	}
	if err := stream.Err(); err != nil {
		return a, err
	}
	if !finished {
		// A stream always ends with a choice's finish_reason; without one the connection closed
		// mid-answer, and what came is not the whole reply.
		return a, errCutStream
	}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	for _, i := range idx {
		p := calls[i]
		args := json.RawMessage(p.args)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		id := p.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		a.Calls = append(a.Calls, ToolCall{ID: id, Name: p.name, Args: args})
	}
	if a.Tokens == 0 {
		a.Tokens = estimateTokens(t, a)
	}
	return a, nil
}

// openAIMessages maps the conversation: the system prompt first, tool results as tool messages.
func openAIMessages(t Turn) []openai.ChatCompletionMessageParamUnion {
	out := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(t.System)}
	for _, m := range t.Messages {
		switch m.Role {
		case RoleUser:
			out = append(out, openai.UserMessage(m.Text))
		case RoleTool:
			out = append(out, openai.ToolMessage(m.Text, m.CallID))
		case RoleAssistant:
			msg := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				msg.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.Calls {
				msg.ToolCalls = append(msg.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Args)}}})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &msg})
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// openAIEmbedder is an embedding model behind the OpenAI-compatible embeddings API.
type openAIEmbedder struct {
	client openai.Client
	model  string
}

func newOpenAIEmbedder(hc *http.Client, baseURL, key, model string) *openAIEmbedder {
	if baseURL == "" {
		baseURL = openAIDefaultURL
	}
	return &openAIEmbedder{client: openai.NewClient(openAIOptions(hc, baseURL, key)...), model: model}
}

// embed answers unit vectors of texts, in order, and the tokens the provider counted.
func (e *openAIEmbedder) embed(ctx context.Context, texts []string) ([][]float32, int64, error) {
	// Asked as base64 (little-endian float32s, which the SDK decodes), as OpenAI's own SDKs ask
	// by default: a third of the bytes of the decimal list, and no number to parse; a search
	// embeds its text on every request, and decoding 384 decimals took a tenth of its CPU. A
	// server that ignores the format answers the list, which reads as before.
	res, err := e.client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: e.model,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}, EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
	if err != nil {
		return nil, 0, err
	}
	if len(res.Data) != len(texts) {
		return nil, 0, fmt.Errorf("%w: %d embeddings for %d texts", errNotEmbeddings, len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, 0, fmt.Errorf("%w: embedding index %d", errNotEmbeddings, d.Index)
		}
		out[d.Index] = unit(d.Embedding)
	}
	for _, v := range out {
		if len(v) != len(out[0]) {
			return nil, 0, fmt.Errorf("%w: vectors of %d and %d dimensions in one answer", errNotEmbeddings, len(out[0]), len(v))
		}
	}
	return out, res.Usage.TotalTokens, nil
}
