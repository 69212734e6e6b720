package ai

import (
	"context"
	"encoding/json"
	"strings"

	"meridian/internal/auth"
)

// maxRounds bounds the tool calls of one answer: the model may call tools this many times
// before it must answer in words.
const maxRounds = 8

// maxToolResult bounds what one tool result sends to the provider (characters of JSON).
const maxToolResult = 12000

// conversation is one answer of the assistant: turns with the provider and the tools it calls,
// as the caller, until it answers in words.
type conversation struct {
	s     *Service
	p     auth.Principal
	st    Setup
	model chatter
	turn  Turn
	tools *toolbox
	emit  func(Event) // the stream's events; nil when nothing streams
}

// newConversation starts a conversation of p with system prompt, earlier turns and the message.
func (s *Service) newConversation(p auth.Principal, st Setup, system string, history []Message, message string, tools *toolbox) *conversation {
	msgs := append([]Message{}, history...)
	msgs = append(msgs, Message{Role: RoleUser, Text: message})
	t := Turn{System: system, Messages: msgs}
	if tools != nil {
		t.Tools = tools.specs
	}
	return &conversation{s: s, p: p, st: st, model: s.chatModel(st), turn: t, tools: tools}
}

func (c *conversation) send(e Event) {
	if c.emit != nil {
		c.emit(e)
	}
}

// run talks with the provider until it answers without calling a tool, and returns its words.
// Each provider call is checked against the caller's quota first and counted after.
func (c *conversation) run(ctx context.Context) (string, error) {
	var text strings.Builder
	for round := 0; ; round++ {
		left, err := c.s.allowance(ctx, c.p, c.st)
		if err != nil {
			return text.String(), err
		}
		c.turn.MaxTokens = defaultMaxTokens
		if left > 0 {
			c.turn.MaxTokens = min(left, defaultMaxTokens)
		}
		if round == maxRounds {
			c.turn.Tools = nil // enough tools: answer with what is known
		}
		callCtx, cancel := c.s.callContext(ctx)
		a, err := c.model.complete(callCtx, c.turn, func(t string) { c.send(token(t)) })
		cancel()
		c.s.spend(ctx, c.p, a.Tokens)
		if err != nil {
			return text.String(), providerError(ctx, err)
		}
		text.WriteString(a.Text)
		c.turn.Messages = append(c.turn.Messages, Message{Role: RoleAssistant, Text: a.Text, Calls: a.Calls})
		if len(a.Calls) == 0 || c.tools == nil {
			return strings.TrimSpace(text.String()), nil
		}
		for _, call := range a.Calls {
			c.send(Event{Name: "tool_call", Data: toolCallEvent{Type: "tool_call", ID: call.ID, Name: call.Name, Arguments: validJSON(call.Args)}})
			out, summary, ok := c.tools.run(ctx, call)
			c.send(Event{Name: "tool_result", Data: toolResultEvent{Type: "tool_result", ID: call.ID, Name: call.Name, OK: ok, Summary: summary}})
			c.turn.Messages = append(c.turn.Messages, Message{Role: RoleTool, CallID: call.ID, Text: out, Failed: !ok})
		}
		if ctx.Err() != nil {
			return text.String(), ctx.Err()
		}
		if a.Text != "" {
			text.WriteString("\n\n")
		}
	}
}

// validJSON is raw when it is JSON, else the text as a JSON string (a model may send arguments
// that do not parse; the event still carries them).
func validJSON(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}
