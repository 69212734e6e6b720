package ai

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicChat is a chat model behind Anthropic's Messages API.
type anthropicChat struct {
	client anthropic.Client
	model  string
}

// anthropicDefaultURL is Anthropic's own API.
const anthropicDefaultURL = "https://api.anthropic.com/"

func newAnthropicChat(hc *http.Client, baseURL, key, model string) anthropicChat {
	if baseURL == "" {
		baseURL = anthropicDefaultURL
	}
	// The key, address and client are the settings' alone: nothing is read from the server's
	// environment or a profile on its disk. No retries, as for OpenAI.
	c := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithHTTPClient(hc), option.WithMaxRetries(0),
		option.WithBaseURL(baseURL), option.WithAPIKey(key))
	return anthropicChat{client: c, model: model}
}

func (a anthropicChat) complete(ctx context.Context, t Turn, onText func(string)) (Answer, error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(a.model), MaxTokens: t.MaxTokens, Messages: anthropicMessages(t)}
	if params.MaxTokens <= 0 {
		params.MaxTokens = defaultMaxTokens
	}
	if t.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: t.System}}
	}
	for _, tool := range t.Tools {
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: tool.Name,
			Description: anthropic.String(tool.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: tool.Properties, Required: nonNil(tool.Required)}}})
	}
	stream := a.client.Messages.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }() // the answer is read; a failed close changes nothing
	msg := anthropic.Message{}
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return Answer{}, err
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				onText(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	var out Answer
	if err := stream.Err(); err != nil {
		return out, err
	}
	if !stopped {
		// Every message ends with message_stop; without it the connection closed mid-answer.
		return out, errCutStream
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Text += b.Text
		case "tool_use":
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			out.Calls = append(out.Calls, ToolCall{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	out.Tokens = msg.Usage.InputTokens + msg.Usage.OutputTokens
	if out.Tokens == 0 {
		out.Tokens = estimateTokens(t, out)
	}
	return out, nil
}

// anthropicMessages maps the conversation: tool results that follow one another go back in
// one user message, as the Messages API asks.
func anthropicMessages(t Turn) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	for i := 0; i < len(t.Messages); i++ {
		m := t.Messages[i]
		switch m.Role {
		case RoleUser:
			out = append(out, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Text)))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.Calls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, c.Args, c.Name))
			}
			if len(blocks) > 0 {
				out = append(out, anthropic.NewAssistantMessage(blocks...))
			}
		case RoleTool:
			var blocks []anthropic.ContentBlockParamUnion
			for ; i < len(t.Messages) && t.Messages[i].Role == RoleTool; i++ {
				r := t.Messages[i]
				blocks = append(blocks, anthropic.NewToolResultBlock(r.CallID, r.Text, r.Failed))
			}
			i--
			out = append(out, anthropic.NewUserMessage(blocks...))
		}
	}
	return out
}
